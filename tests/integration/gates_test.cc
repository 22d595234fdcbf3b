// Release gates through the CLI as a pipeline runs it: the verdicts and the
// documented exit statuses of `run`, `submit --watch`, `watch` and `report`.
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "nlohmann/json.hpp"
#include "tests/integration/cluster_fixture.h"

namespace memaudit::testing {
namespace {

using ::testing::HasSubstr;

// Four tiny MLPs and the loss attack: seconds to train.
std::string Spec(const std::string& gates) {
  return absl::StrCat(R"(name: gated
seed: 5
gates:
)",
                      gates, R"(membership:
  dataset: {pool_size: 200}
  model: {hidden: [32]}
  training: {learning_rate: 0.1, momentum: 0.9, epochs: 3, batch_size: 16}
  reference_models: 4
  attacks: [loss]
)");
}

std::string Write(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  return path;
}

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return nlohmann::json::parse(buffer.str());
}

class GatesTest : public ClusterTest {
 protected:
  std::string Cli(const std::string& args) const {
    return RunCapture(absl::StrCat(CliCredentialsEnv(), Memaudit(), " ", args, " --coordinator ",
                                   cluster_->coordinator_address(), " 2>&1; echo \"exit=$?\""));
  }
};

TEST_F(GatesTest, PassFailAndInconclusiveGatesGiveTheirVerdictsAndExitStatuses) {
  // Not FreshTestDir(): StartCluster below empties that.
  const std::string dir = FreshTestDir("specs");
  ASSERT_EQ(std::system(absl::StrCat("mkdir -p '", dir, "'").c_str()), 0);
  // A pass and a fail: `run` exits 4 and prints both.
  const std::string failing = Write(dir + "/failing.yaml", Spec(R"(  - metric: loss.auc
    max: 0.999
  - metric: loss.auc
    min: 0.999
)"));
  Output run = Shell(absl::StrCat(Memaudit(), " run ", failing, " -w 2 --dir ", dir, "/run"));
  EXPECT_EQ(run.exit_code, 4) << run.text;
  EXPECT_THAT(run.text, HasSubstr("gate loss.auc max 0.999: PASS"));
  EXPECT_THAT(run.text, HasSubstr("gate loss.auc min 0.999: FAIL"));
  const nlohmann::json results = ReadJson(dir + "/run/results.json");
  ASSERT_EQ(results["gates"].size(), 2u);
  EXPECT_EQ(results["gates"][0]["outcome"], "GATE_PASS");
  EXPECT_EQ(results["gates"][1]["outcome"], "GATE_FAIL");
  // `report` of the archived results says the same.
  Output report = Shell(absl::StrCat(Memaudit(), " report ", dir, "/run/results.json"));
  EXPECT_EQ(report.exit_code, 4) << report.text;
  EXPECT_THAT(Shell(absl::StrCat("grep -c 'Gates' ", dir, "/run/report.html")).text,
              HasSubstr("1"));

  // A limit at the estimate itself lies inside its interval: inconclusive,
  // with what would decide it. Through a cluster: `submit --watch`, `watch`
  // and `report` of the audit exit 5.
  const double auc = results["attacks"][0]["auc"];
  const std::string unsure =
      Write(dir + "/unsure.yaml",
            Spec(absl::StrFormat("  - metric: loss.auc\n    max: %.17g\n  - metric: loss.auc\n    "
                                 "max: 0.999\n",
                                 auc)));
  ASSERT_NO_FATAL_FAILURE(StartCluster(2));
  const std::string submitted = Cli("submit --watch " + unsure);
  EXPECT_THAT(submitted, HasSubstr("exit=5"));
  EXPECT_THAT(submitted, HasSubstr(": INCONCLUSIVE ("));
  EXPECT_THAT(submitted, HasSubstr("contains the limit"));
  const std::string id = submitted.substr(0, submitted.find('\n'));
  ASSERT_THAT(id, ::testing::StartsWith("a-"));
  EXPECT_THAT(Cli("watch " + id), HasSubstr("exit=5"));
  EXPECT_THAT(Cli("report " + id), HasSubstr("exit=5"));
  // Gates that all pass: 0.
  const std::string passing =
      Write(dir + "/passing.yaml", Spec("  - metric: loss.auc\n    max: 0.999\n"));
  EXPECT_THAT(Cli("submit --watch " + passing), HasSubstr("exit=0"));
}

TEST_F(GatesTest, AGateOnAMetricTheKindDoesNotReportIsRefusedByField) {
  const std::string dir = FreshTestDir();
  ASSERT_EQ(std::system(absl::StrCat("mkdir -p '", dir, "'").c_str()), 0);
  const std::string bad =
      Write(dir + "/bad.yaml", Spec("  - metric: lira_online.auc\n    max: 0.6\n"));
  Output out = Shell(absl::StrCat(Memaudit(), " validate ", bad));
  EXPECT_EQ(out.exit_code, 2) << out.text;
  EXPECT_THAT(out.text, HasSubstr("gates[0].metric: \"lira_online.auc\" is not a metric of this "
                                  "membership audit; it reports: loss.auc"));
}

// The quickstart's recipe with and without weight decay: `diff` names the
// metrics that changed; two runs of one spec change nothing.
TEST(DiffTest, WeightDecayChangesSomeMetricsSignificantlyARerunNone) {
  const std::string dir = FreshTestDir();
  ASSERT_EQ(std::system(absl::StrCat("mkdir -p '", dir, "'").c_str()), 0);
  std::ifstream in(std::string(MEMAUDIT_SOURCE_DIR) + "/examples/quickstart.yaml");
  std::stringstream text;
  text << in.rdbuf();
  const std::string base = Write(dir + "/base.yaml", text.str());
  std::string decayed_text = text.str();
  const size_t at = decayed_text.find("    momentum: 0.9\n");
  ASSERT_NE(at, std::string::npos);
  decayed_text.insert(at, "    weight_decay: 0.005\n");
  const std::string decayed = Write(dir + "/decayed.yaml", decayed_text);
  for (const auto& [spec, run] :
       {std::pair{base, "a"}, std::pair{base, "b"}, std::pair{decayed, "c"}}) {
    Output out = Shell(absl::StrCat(Memaudit(), " run ", spec, " -w 2 --dir ", dir, "/", run));
    ASSERT_EQ(out.exit_code, 0) << out.text;
  }
  const auto diff = [&](const std::string& old_run, const std::string& new_run,
                        const std::string& flags) {
    return Shell(absl::StrCat(Memaudit(), " diff ", dir, "/", old_run, "/results.json ", dir, "/",
                              new_run, "/results.json", flags));
  };
  Output same = diff("a", "b", " --fail-on-regression");
  EXPECT_EQ(same.exit_code, 0) << same.text;
  EXPECT_THAT(same.text, HasSubstr("0 of 24 metrics changed significantly"));
  Output decay = diff("a", "c", " --fail-on-regression");
  EXPECT_EQ(decay.exit_code, 0) << decay.text;  // better, not worse
  EXPECT_THAT(decay.text, ::testing::ContainsRegex("lira_online.auc .* better"));
  EXPECT_THAT(decay.text, ::testing::Not(HasSubstr(" 0 of 24 metrics changed")));
  // The other way round, the change is a regression.
  Output back = diff("c", "a", " --fail-on-regression");
  EXPECT_EQ(back.exit_code, 4) << back.text;
  EXPECT_THAT(back.text, HasSubstr("WORSE"));
  EXPECT_EQ(diff("c", "a", "").exit_code, 0);
}

}  // namespace
}  // namespace memaudit::testing
