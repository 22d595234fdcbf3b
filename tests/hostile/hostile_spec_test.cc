// Hostile specs against the real CLI: `memaudit validate FILE` must refuse
// each with the field named, within 1 s of wall time and 200 MB of peak
// resident memory, measured on the child process (wait4). The stored corpus
// is tests/hostile/*.yaml; each file names what the output must contain in
// lines "# expect: TEXT". Inputs too large to store are written here.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/messages/data_roots.h"
#include "common/testing/example_data.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit::testing {
namespace {

using ::testing::HasSubstr;

constexpr double kMaxSeconds = 1.0;
constexpr long kMaxRssKb = 200 * 1024;
// A run past this is killed: the test fails instead of hanging.
constexpr auto kWatchdog = std::chrono::seconds(20);

const std::string kHostileDir = std::string(MEMAUDIT_SOURCE_DIR) + "/tests/hostile";

struct ChildRun {
  bool exited = false;  // false: killed by a signal (a crash or the watchdog)
  int exit_code = -1;
  std::string output;  // stdout and stderr together
  double seconds = 0;
  long max_rss_kb = 0;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string ScratchDir() {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/hostile-", getpid());
  std::filesystem::create_directories(dir);
  return dir;
}

// `memaudit validate spec` in a child process.
ChildRun Validate(const std::string& spec, const std::vector<std::string>& roots = {}) {
  const std::string binary = absl::StrCat(MEMAUDIT_BIN_DIR, "/memaudit");
  const std::string out_path = absl::StrCat(ScratchDir(), "/output.txt");
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) _exit(126);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    close(fd);
    std::vector<const char*> argv = {binary.c_str(), "validate", spec.c_str()};
    for (const std::string& root : roots) {
      argv.push_back("--data-root");
      argv.push_back(root.c_str());
    }
    argv.push_back(nullptr);
    execv(binary.c_str(), const_cast<char* const*>(argv.data()));
    _exit(127);
  }
  ChildRun run;
  if (pid < 0) return run;
  int status = 0;
  struct rusage usage {};
  while (true) {
    const pid_t done = wait4(pid, &status, WNOHANG, &usage);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() - start > kWatchdog) {
      kill(pid, SIGKILL);
      wait4(pid, &status, 0, &usage);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.exited = WIFEXITED(status);
  run.exit_code = run.exited ? WEXITSTATUS(status) : -1;
  run.max_rss_kb = usage.ru_maxrss;  // kilobytes on Linux
  run.output = ReadFile(out_path);
  return run;
}

// Refused (exit code 2, bad input), naming each of `expected`, in bounds.
void ExpectRefused(const std::string& spec, const std::vector<std::string>& expected) {
  const ChildRun run = Validate(spec);
  EXPECT_TRUE(run.exited) << "killed by a signal (crash or watchdog); output:\n"
                          << run.output.substr(0, 2000);
  EXPECT_EQ(run.exit_code, 2) << run.output.substr(0, 2000);
  for (const std::string& text : expected) {
    EXPECT_THAT(run.output, HasSubstr(text));
  }
  EXPECT_LT(run.seconds, kMaxSeconds);
  EXPECT_LT(run.max_rss_kb, kMaxRssKb);
  // Error messages quote a short prefix of a bad value, never all of it.
  EXPECT_LT(run.output.size(), 4000u) << run.output.substr(0, 2000);
  ::testing::Test::RecordProperty("seconds", absl::StrCat(run.seconds));
  ::testing::Test::RecordProperty("max_rss_kb", absl::StrCat(run.max_rss_kb));
}

std::vector<std::string> Corpus() {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(kHostileDir)) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

class HostileCorpusTest : public ::testing::TestWithParam<std::string> {};

TEST_P(HostileCorpusTest, IsRefusedWithItsFieldNamedQuicklyAndInLittleMemory) {
  const std::string path = absl::StrCat(kHostileDir, "/", GetParam());
  std::vector<std::string> expected;
  std::istringstream lines(ReadFile(path));
  for (std::string line; std::getline(lines, line);) {
    absl::string_view text = line;
    if (absl::ConsumePrefix(&text, "# expect: ")) expected.emplace_back(text);
  }
  ASSERT_FALSE(expected.empty()) << path << " has no \"# expect: \" line";
  ExpectRefused(path, expected);
}

INSTANTIATE_TEST_SUITE_P(Corpus, HostileCorpusTest, ::testing::ValuesIn(Corpus()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param.substr(0, info.param.size() - 5);
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

// Writes `text` and frees it: a forked child's peak RSS counts the parent's
// pages until exec, so the test keeps no large input alive while it runs.
std::string WriteSpec(const std::string& name, std::string text) {
  const std::string path = absl::StrCat(ScratchDir(), "/", name);
  std::ofstream(path, std::ios::binary) << text;
  text.clear();
  text.shrink_to_fit();
  return path;
}

// 50 MB: only the first MiB is read; the line the limit falls on names its key.
TEST(HostileGeneratedTest, FiftyMegabyteNameIsRefusedUnread) {
  std::string yaml = absl::StrCat("name: ", std::string(50'000'000, 'n'), "\nmembership: {}\n");
  const size_t size = yaml.size();
  const std::string spec = WriteSpec("huge-name.yaml", std::move(yaml));
  ExpectRefused(spec,
                {absl::StrCat("line 1: name: the spec is ", size, " bytes; at most 1048576")});
}

// Five million FPR points, 25 MB.
TEST(HostileGeneratedTest, FiveMillionFprPointsAreRefusedUnread) {
  std::string yaml = "name: many\nmembership:\n  fpr_points: [";
  for (int i = 0; i < 5'000'000; ++i) yaml += "0.5, ";
  yaml += "0.5]\n";
  const std::string spec = WriteSpec("fpr-5m.yaml", std::move(yaml));
  ExpectRefused(spec, {"line 3: fpr_points: the spec is"});
}

// Within the size limit, more nodes than the budget: the reader stops there.
TEST(HostileGeneratedTest, TwoHundredThousandFprPointsStopAtTheNodeBudget) {
  std::string yaml = "name: many\nmembership:\n  fpr_points: [";
  for (int i = 0; i < 200'000; ++i) yaml += "0.5,";
  yaml += "0.5]\n";
  ExpectRefused(WriteSpec("fpr-200k.yaml", std::move(yaml)),
                {"membership.fpr_points[", "expands to more than 100000 nodes"});
}

// A bad value of 500 KB is quoted by a short prefix: the message stays small
// (it fit no gRPC metadata limit before).
TEST(HostileGeneratedTest, LongBadValueIsQuotedByAPrefix) {
  const std::string spec = WriteSpec(
      "long-value.yaml",
      absl::StrCat("name: long\nmembership:\n  dataset: {name: ", std::string(500'000, 'x'),
                   ", pool_size: 100}\n  training: {learning_rate: 0.1, epochs: 1}\n"
                   "  reference_models: 4\n"));
  ExpectRefused(spec, {"membership.dataset.name: must be at most 128 bytes", "(500000 bytes)"});
}

// Nesting far past the limit (and past yaml-cpp's own recursion guard).
TEST(HostileGeneratedTest, HundredThousandLevelsOfNesting) {
  const std::string spec = WriteSpec(
      "deep.yaml", absl::StrCat("name: deep\nmembership:\n  attacks: ", std::string(100'000, '['),
                                std::string(100'000, ']'), "\n"));
  ExpectRefused(spec, {"membership.attacks[0]", "nested deeper than 64 levels"});
}

// The limits leave every shipped example valid.
TEST(HostileExamplesTest, EveryExampleStillValidates) {
  const std::string dir = std::string(MEMAUDIT_SOURCE_DIR) + "/examples";
  // The own-data examples name files that must exist, under a root.
  ASSERT_TRUE(EnsureExampleData(MEMAUDIT_SOURCE_DIR));
  std::vector<std::string> roots(std::begin(kDefaultDataRoots), std::end(kDefaultDataRoots));
  roots.push_back(kExampleDataDir);
  int examples = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".yaml") continue;
    ++examples;
    const ChildRun run = Validate(entry.path().string(), roots);
    EXPECT_EQ(run.exit_code, 0) << entry.path() << ":\n" << run.output;
    EXPECT_THAT(run.output, HasSubstr("valid")) << entry.path();
  }
  EXPECT_GT(examples, 0);
}

}  // namespace
}  // namespace memaudit::testing
