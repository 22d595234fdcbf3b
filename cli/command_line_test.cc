#include "cli/command_line.h"

#include "common/base/nearest_name.h"
#include "gtest/gtest.h"

namespace memaudit::cli {
namespace {

const std::vector<std::string> kCommands = {"run",   "validate", "submit", "status",
                                            "watch", "cancel",   "report"};

TEST(CommandLineTest, ATypoGetsTheNearestCommand) {
  EXPECT_EQ(NearestName("runn", kCommands), "run");
  EXPECT_EQ(NearestName("valdate", kCommands), "validate");
  EXPECT_EQ(NearestName("stauts", kCommands), "status");
  EXPECT_EQ(NearestName("rep", kCommands), "report") << "a prefix";
  EXPECT_EQ(NearestName("deploy", kCommands), std::nullopt) << "nothing near";
  EXPECT_EQ(NearestName("", kCommands), std::nullopt);
}

// Every parse error is bad input (2), never CLI11's 105 and up; --help is 0.
TEST(CommandLineTest, ParseErrorsExitTwoAndHelpExitsZero) {
  auto parse = [](std::vector<std::string> args) {
    CLI::App app{"test"};
    app.require_subcommand(1);
    int n = 0;
    app.add_subcommand("run", "")->add_option("--n", n);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    return ParseCommandLine(app, static_cast<int>(argv.size()), argv.data());
  };
  EXPECT_EQ(parse({"memaudit", "runn"}), kExitBadInput);
  EXPECT_EQ(parse({"memaudit", "run", "--bogus"}), kExitBadInput);
  EXPECT_EQ(parse({"memaudit", "run", "--n", "x"}), kExitBadInput);
  EXPECT_EQ(parse({"memaudit"}), kExitBadInput) << "a command is required";
  EXPECT_EQ(parse({"memaudit", "--help"}), 0);
  EXPECT_EQ(parse({"memaudit", "run", "--n", "3"}), std::nullopt);
}

}  // namespace
}  // namespace memaudit::cli
