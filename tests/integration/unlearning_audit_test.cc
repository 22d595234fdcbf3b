// An unlearning audit (Scratch, single deletion, Fashion-MNIST, logistic
// regression) through real coordinator, scorer and worker processes, scaled
// down to seconds.
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "cli/csv_export.h"
#include "cli/html_report.h"
#include "cli/render.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "tests/integration/cluster_fixture.h"
#include "tests/integration/prometheus_server.h"

namespace memaudit::testing {
namespace {

using ::testing::HasSubstr;

const v1::UnlearningAttackResult* Find(const v1::UnlearningResults& u, const std::string& defense,
                                       const std::string& feature) {
  for (const v1::UnlearningAttackResult& a : u.attacks()) {
    if (a.defense() == defense && a.feature() == feature) return &a;
  }
  return nullptr;
}

class UnlearningAuditTest : public ClusterTest {};

// A team's own architecture: an MLP exported as TorchScript by Debian's
// python3-torch (tests/python/export_mlp.py) is trained and audited like a
// built-in model.
TEST_F(UnlearningAuditTest, TorchScriptModelIsAuditedLikeABuiltInOne) {
  const std::string model_dir = FreshTestDir("model");
  const std::string model = model_dir + "/user_mlp.pt";
  const std::string export_cmd =
      absl::StrCat("mkdir -p ", model_dir, " && /usr/bin/python3 ", MEMAUDIT_SOURCE_DIR,
                   "/tests/python/export_mlp.py ", model, " 784 10 32 >/dev/null 2>&1");
  if (std::system(export_cmd.c_str()) != 0) GTEST_SKIP() << "python3-torch is not installed";
  v1::AuditSpec spec = TinyUnlearningSpec();
  spec.mutable_unlearning()->mutable_model()->set_architecture("torchscript");
  spec.mutable_unlearning()->mutable_model()->set_torchscript_path(model);
  data_roots_ = {model_dir};  // the services may read the module there
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/2));
  auto submitted = client_->Submit(spec);
  MEMAUDIT_ASSERT_OK(submitted);
  v1::Audit audit = WaitForEnd(submitted->audit_id());
  ASSERT_EQ(audit.state(), v1::SUCCEEDED) << audit.error();
  auto results = client_->Report(submitted->audit_id());
  MEMAUDIT_ASSERT_OK(results);
  const v1::UnlearningResults& u = results->unlearning();
  EXPECT_GT(u.target_test_accuracy(), 0.5) << "the user model learned the task";
  const auto* baseline = Find(u, "none", "baseline");
  const auto* sorted_diff = Find(u, "none", "sorted_diff");
  ASSERT_TRUE(baseline && sorted_diff);
  EXPECT_GT(sorted_diff->auc(), baseline->auc() + 0.1);

  // A path that holds no TorchScript module fails the audit with the reason.
  spec.mutable_unlearning()->mutable_model()->set_torchscript_path(model + ".missing");
  auto missing = client_->Submit(spec);
  if (missing.ok()) {
    v1::Audit failed = WaitForEnd(missing->audit_id());
    EXPECT_EQ(failed.state(), v1::FAILED);
    EXPECT_THAT(failed.error(), HasSubstr("torchscript"));
  } else {
    EXPECT_THAT(std::string(missing.status().message()), HasSubstr("torchscript_path"));
  }
}

TEST_F(UnlearningAuditTest, DeletionLeaksBeyondClassicalMembershipInference) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/2));
  auto submitted = client_->Submit(TinyUnlearningSpec());
  MEMAUDIT_ASSERT_OK(submitted);
  EXPECT_EQ(submitted->tasks(), 10u);  // one per original model, both sides
  v1::Audit audit = WaitForEnd(submitted->audit_id());
  ASSERT_EQ(audit.state(), v1::SUCCEEDED) << audit.error();
  // 5 originals x (1 + 20 children) x 10 epochs x ceil(400 or 399 / 64), per side.
  EXPECT_EQ(audit.steps_total(), 2u * 5u * 21u * 10u * 7u);
  EXPECT_EQ(audit.steps_done(), audit.steps_total());
  auto results = client_->Report(submitted->audit_id());
  MEMAUDIT_ASSERT_OK(results);
  ASSERT_TRUE(results->complete());
  EXPECT_EQ(results->kind(), v1::UNLEARNING);
  const v1::UnlearningResults& u = results->unlearning();
  EXPECT_EQ(u.method(), "scratch");
  EXPECT_EQ(u.seed_policy(), "shared");
  EXPECT_EQ(u.models_trained(), 2u * 5u * 21u);
  EXPECT_EQ(u.shadow_rows(), 200u);
  EXPECT_EQ(u.target_rows(), 200u);
  EXPECT_GT(u.target_train_accuracy(), 0.6);
  EXPECT_GT(u.target_test_accuracy(), 0.6);

  const auto* baseline = Find(u, "none", "baseline");
  const auto* sorted_diff = Find(u, "none", "sorted_diff");
  const auto* label_only = Find(u, "label_only", "sorted_diff");
  ASSERT_TRUE(baseline && sorted_diff && label_only);
  // The paper's finding: comparing both model versions reveals the deleted
  // sample where the original's posterior alone does not...
  EXPECT_GT(sorted_diff->auc(), 0.7);
  EXPECT_GT(sorted_diff->auc(), baseline->auc() + 0.15);
  EXPECT_GT(sorted_diff->deg_count(), 0.5);
  // ...and publishing labels only hides it.
  EXPECT_LT(std::abs(label_only->auc() - 0.5), 0.15);

  // Gauges with bounded labels, lint-clean.
  const std::string metrics = HttpGet(cluster_->scorer_metrics_port(), "/metrics");
  EXPECT_TRUE(HasSeries(metrics, "memaudit_unlearning_auc_ratio",
                        {{"audit", submitted->audit_id()},
                         {"classifier", "random_forest"},
                         {"defense", "none"},
                         {"feature", "sorted_diff"}}))
      << metrics;
  EXPECT_THAT(metrics, HasSubstr("memaudit_unlearning_degcount_ratio{audit="));
  EXPECT_THAT(metrics, HasSubstr("memaudit_unlearning_degrate_ratio{audit="));
  if (access(kPromtoolBinary, X_OK) == 0) {
    const PromtoolLint lint = RunPromtool(dir_, "unlearning-scorer", metrics);
    EXPECT_EQ(lint.exit_code, 0) << lint.output;
    EXPECT_EQ(lint.output, "");
  }

  // Every AUC comes with its 95% interval over the target rows.
  for (const v1::UnlearningAttackResult& a : results->unlearning().attacks()) {
    EXPECT_LE(a.auc_low(), a.auc()) << a.feature();
    EXPECT_GE(a.auc_high(), a.auc()) << a.feature();
    EXPECT_LT(a.auc_low(), a.auc_high()) << a.feature();
    if (a.feature() == "baseline") continue;
    // And DegCount / DegRate with theirs (Clopper–Pearson, paired t).
    EXPECT_LE(a.deg_count_low(), a.deg_count()) << a.feature();
    EXPECT_GE(a.deg_count_high(), a.deg_count()) << a.feature();
    EXPECT_LT(a.deg_count_low(), a.deg_count_high()) << a.feature();
    EXPECT_LE(a.deg_rate_low(), a.deg_rate()) << a.feature();
    EXPECT_GE(a.deg_rate_high(), a.deg_rate()) << a.feature();
  }
  EXPECT_THAT(metrics, HasSubstr("memaudit_unlearning_degcount_low_ratio{audit="));
  EXPECT_THAT(metrics, HasSubstr("memaudit_unlearning_degrate_high_ratio{audit="));
  // The CLI's renderings.
  EXPECT_THAT(cli::ResultsTable(*results), HasSubstr("sorted_diff"));
  EXPECT_THAT(cli::HtmlReport(audit, *results), HasSubstr("Unlearning attack"));
  const std::string csv_dir = dir_ + "/csv";
  MEMAUDIT_ASSERT_OK(cli::WriteResultsCsv(*results, csv_dir));
  const std::string csv = Slurp(csv_dir + "/unlearning_attacks.csv");
  EXPECT_THAT(csv, HasSubstr("deg_count_low,deg_count_high,deg_rate_low,deg_rate_high,"
                             "auc_rerun_low,auc_rerun_high,deg_count_rerun_low,"
                             "deg_count_rerun_high,deg_rate_rerun_low,deg_rate_rerun_high\n"));
  // The table prints the re-run intervals (the audit has several target
  // originals to resample).
  EXPECT_THAT(cli::ResultsTable(*results), HasSubstr("re-run 95%"));
  EXPECT_THAT(cli::ResultsTable(*results), ::testing::Not(HasSubstr("n/a")));
  EXPECT_THAT(csv,
              HasSubstr(absl::StrCat(submitted->audit_id(), ",none,sorted_diff,random_forest,")));
}

TEST_F(UnlearningAuditTest, MalformedSpecIsRefusedWithTheFieldNamed) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/1));
  v1::AuditSpec spec = TinyUnlearningSpec();
  spec.mutable_unlearning()->mutable_shadow()->set_samples(1);
  spec.mutable_unlearning()->set_deletion("everything");
  spec.mutable_unlearning()->add_defenses("top_0");
  auto refused = client_->Submit(spec);
  ASSERT_THAT(refused, StatusIs(absl::StatusCode::kInvalidArgument));
  const std::string message(refused.status().message());
  EXPECT_THAT(message, HasSubstr("unlearning.shadow.samples: must be >= 2 (got 1)"));
  EXPECT_THAT(message, HasSubstr("unlearning.deletion"));
  EXPECT_THAT(message, HasSubstr("unlearning.defenses[2]"));
  auto list = client_->List(10);
  MEMAUDIT_ASSERT_OK(list);
  EXPECT_EQ(list->audits_size(), 0) << "a refused spec must not create an audit";
}

}  // namespace
}  // namespace memaudit::testing
