// `memaudit run` and `memaudit validate` as a user runs them.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "nlohmann/json.hpp"
#include "tests/integration/cluster_fixture.h"

namespace memaudit::testing {
namespace {

using ::testing::HasSubstr;

std::string WriteSpec(const std::string& dir, const std::string& yaml) {
  std::system(absl::StrCat("mkdir -p '", dir, "'").c_str());
  const std::string path = dir + "/spec.yaml";
  std::ofstream(path) << yaml;
  return path;
}

constexpr char kTinySpec[] = R"(name: tiny-cli
seed: 5
membership:
  dataset: {pool_size: 200}
  model: {hidden: [32]}
  training: {learning_rate: 0.1, momentum: 0.9, epochs: 3, batch_size: 16}
  reference_models: 4
)";

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return nlohmann::json::parse(buffer.str());
}

TEST(CliRunTest, TwoRunsWithTheSameSeedPrintIdenticalNumbers) {
  const std::string dir = FreshTestDir();
  const std::string spec = WriteSpec(dir, kTinySpec);
  Output first = Shell(absl::StrCat(Memaudit(), " run ", spec, " --workers 2 --dir ", dir,
                                    "/one --json ", dir, "/one.json"));
  ASSERT_EQ(first.exit_code, 0) << first.text;
  EXPECT_THAT(first.text, HasSubstr("lira_online"));
  EXPECT_THAT(first.text, HasSubstr("TPR@0.1%FPR"));
  Output second = Shell(absl::StrCat(Memaudit(), " run ", spec, " --workers 1 --dir ", dir,
                                     "/two --json ", dir, "/two.json"));
  ASSERT_EQ(second.exit_code, 0) << second.text;
  nlohmann::json a = ReadJson(dir + "/one.json");
  nlohmann::json b = ReadJson(dir + "/two.json");
  EXPECT_NE(a["audit_id"], b["audit_id"]);
  a.erase("audit_id");
  b.erase("audit_id");
  EXPECT_EQ(a, b) << "same spec and seed must give the same numbers, whatever the worker count";
  EXPECT_EQ(a["attacks"].size(), 6u);
  // The run directory keeps the databases, the logs and the results.
  EXPECT_TRUE(std::ifstream(dir + "/one/results.json").good());
  EXPECT_TRUE(std::ifstream(dir + "/one/coordinator.log").good());
}

TEST(CliRunTest, ValidateExplainsEveryProblem) {
  const std::string dir = FreshTestDir();
  const std::string spec = WriteSpec(dir, R"(membership:
  dataset: {pool_size: 4}
  training: {learning_rate: 0, epochs: 1}
  reference_models: 5
)");
  Output out = Shell(absl::StrCat(Memaudit(), " validate ", spec));
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_THAT(out.text, HasSubstr("3 problem(s)"));
  EXPECT_THAT(out.text, HasSubstr("membership.dataset.pool_size"));
  EXPECT_THAT(out.text, HasSubstr("membership.training.learning_rate"));
  EXPECT_THAT(out.text, HasSubstr("membership.reference_models"));

  const std::string good = WriteSpec(dir + "/good", kTinySpec);
  Output ok = Shell(absl::StrCat(Memaudit(), " validate ", good));
  EXPECT_EQ(ok.exit_code, 0) << ok.text;
  EXPECT_THAT(ok.text, HasSubstr("valid membership audit"));
}

TEST(CliRunTest, ValidateNamesUnknownFieldsAndQuickstartIsValid) {
  const std::string dir = FreshTestDir();
  const std::string spec = WriteSpec(dir, "membership:\n  refrence_models: 4\n");
  Output out = Shell(absl::StrCat(Memaudit(), " validate ", spec));
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_THAT(out.text, HasSubstr("refrence_models"));
  Output quickstart = Shell(
      absl::StrCat(Memaudit(), " validate ", MEMAUDIT_SOURCE_DIR, "/examples/quickstart.yaml"));
  EXPECT_EQ(quickstart.exit_code, 0) << quickstart.text;
}

TEST(CliRunTest, ABadDeviceIsRefusedBeforeAnythingStarts) {
  const std::string dir = FreshTestDir();
  Output out = Shell(absl::StrCat(Memaudit(), " run ", MEMAUDIT_SOURCE_DIR,
                                  "/examples/quickstart.yaml --device gpu --dir ", dir, "/run"));
  EXPECT_EQ(out.exit_code, 2) << out.text;
  EXPECT_THAT(out.text, HasSubstr("--device: \"gpu\" is not a device"));
  EXPECT_THAT(out.text, ::testing::Not(HasSubstr("starting scorer")));
  // The worker itself refuses CUDA where there is none, naming the flag.
  Output worker = Shell(absl::StrCat("timeout 20 ", MEMAUDIT_BIN_DIR,
                                     "/memaudit-worker --device cuda:0 "
                                     "--coordinator 127.0.0.1:1 --metrics-listen 127.0.0.1:0"));
  if (worker.text.find("training on cuda") != std::string::npos) {
    GTEST_SKIP() << "this machine has CUDA";
  }
  EXPECT_EQ(worker.exit_code, 1) << worker.text;
  EXPECT_THAT(worker.text, HasSubstr("--device: \"cuda:0\" but this machine has no usable CUDA"));
}

TEST(CliRunTest, RemoteCommandsExplainAnUnreachableCoordinator) {
  Output out = Shell(absl::StrCat(Memaudit(), " status --insecure --coordinator 127.0.0.1:1"));
  EXPECT_EQ(out.exit_code, 3);
  EXPECT_THAT(out.text, HasSubstr("not reachable"));
  EXPECT_THAT(out.text, HasSubstr("--coordinator"));
}

}  // namespace
}  // namespace memaudit::testing
