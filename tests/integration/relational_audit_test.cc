// Relational audits (Differential Relational Privacy) through real
// coordinator, scorer and worker processes: a tiny phone book a small LSTM
// memorizes in seconds, and the linear model on both sides of d = N.
#include <unistd.h>

#include <algorithm>
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

// The exact-match points of a curve, by step.
std::vector<const v1::RelationalPoint*> ExactMatch(const v1::RelationalCurve& c) {
  std::vector<const v1::RelationalPoint*> out;
  for (const v1::RelationalPoint& p : c.points()) {
    if (p.metric() == "exact_match") out.push_back(&p);
  }
  return out;
}

class RelationalAuditTest : public ClusterTest {};

TEST_F(RelationalAuditTest, PhoneBookIsMemorizedAndTheCurveFillsInWhileTraining) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/1));
  auto submitted = client_->Submit(TinyPhoneBookSpec());
  MEMAUDIT_ASSERT_OK(submitted);
  EXPECT_EQ(submitted->tasks(), 1u);
  const std::vector<v1::AuditResults> updates = WatchResults(submitted->audit_id());
  ASSERT_FALSE(updates.empty());
  int partial_points = 0;
  for (const v1::AuditResults& update : updates) {
    if (!update.complete() && update.relational().curves_size() > 0) {
      partial_points = std::max(partial_points, update.relational().curves(0).points_size());
    }
  }
  const v1::AuditResults& last = updates.back();
  ASSERT_TRUE(last.complete());
  EXPECT_GE(partial_points, 2) << "epochs must be scored while training goes on";

  v1::Audit audit = WaitForEnd(submitted->audit_id());
  ASSERT_EQ(audit.state(), v1::SUCCEEDED) << audit.error();
  EXPECT_EQ(audit.steps_total(), 80u * 2u);  // 8 records in batches of 4
  auto results = client_->Report(submitted->audit_id());
  MEMAUDIT_ASSERT_OK(results);
  ASSERT_TRUE(results->complete());
  EXPECT_EQ(results->kind(), v1::RELATIONAL);
  const v1::RelationalResults& r = results->relational();
  EXPECT_EQ(r.model(), "phone_book");
  ASSERT_EQ(r.curves_size(), 1);
  EXPECT_EQ(r.curves(0).variant(), "units=64");
  ASSERT_EQ(r.curves(0).points_size(), 160);  // 80 epochs x 2 metrics
  const auto em = ExactMatch(r.curves(0));
  const v1::RelationalPoint& first = *em.front();
  const v1::RelationalPoint& final = *em.back();
  EXPECT_EQ(final.step(), 80u);
  EXPECT_GT(final.rm_norm(), 0.3);
  EXPECT_GT(final.rm_norm(), first.rm_norm());
  EXPECT_LE(final.success_val(), 0.125) << "unseen names give their number away only by chance";
  EXPECT_GT(final.clean_train(), final.clean_val());
  // Every number with its 95% interval; the final RM_norm's is clear of 0.
  for (const v1::RelationalPoint& p : r.curves(0).points()) {
    EXPECT_LE(p.success_train_low(), p.success_train()) << p.step() << " " << p.metric();
    EXPECT_GE(p.success_train_high(), p.success_train()) << p.step() << " " << p.metric();
    EXPECT_LE(p.success_val_low(), p.success_val()) << p.step() << " " << p.metric();
    EXPECT_GE(p.success_val_high(), p.success_val()) << p.step() << " " << p.metric();
    EXPECT_LE(p.rm_norm_low(), p.rm_norm()) << p.step() << " " << p.metric();
    EXPECT_GE(p.rm_norm_high(), p.rm_norm()) << p.step() << " " << p.metric();
  }
  EXPECT_GT(final.rm_norm_low(), 0.0);

  // The gauge, lint-clean.
  const std::string metrics = HttpGet(cluster_->scorer_metrics_port(), "/metrics");
  EXPECT_TRUE(HasSeries(
      metrics, "memaudit_relational_rm_norm_ratio",
      {{"audit", submitted->audit_id()}, {"metric", "exact_match"}, {"variant", "units=64"}}))
      << metrics;
  EXPECT_TRUE(HasSeries(
      metrics, "memaudit_relational_rm_norm_low_ratio",
      {{"audit", submitted->audit_id()}, {"metric", "exact_match"}, {"variant", "units=64"}}));
  if (access(kPromtoolBinary, X_OK) == 0) {
    const PromtoolLint lint = RunPromtool(dir_, "relational-scorer", metrics);
    EXPECT_EQ(lint.exit_code, 0) << lint.output;
    EXPECT_EQ(lint.output, "");
  }

  // The CLI's renderings.
  EXPECT_THAT(cli::ResultsTable(*results), HasSubstr("exact_match"));
  EXPECT_THAT(cli::ResultsTable(*results), HasSubstr("units=64"));
  EXPECT_THAT(cli::HtmlReport(audit, *results), HasSubstr("Relational memorization: numbers"));
  const std::string csv_dir = dir_ + "/csv";
  MEMAUDIT_ASSERT_OK(cli::WriteResultsCsv(*results, csv_dir));
  const std::string csv = Slurp(csv_dir + "/relational_curve.csv");
  EXPECT_THAT(csv,
              HasSubstr(absl::StrCat(submitted->audit_id(), ",phone_book,units=64,80,digit_f1,")));
}

TEST_F(RelationalAuditTest, LinearModelMemorizesOnlyAboveTheInterpolationThreshold) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/2));
  auto submitted = client_->Submit(TinyLinearRelationalSpec());
  MEMAUDIT_ASSERT_OK(submitted);
  EXPECT_EQ(submitted->tasks(), 2u);
  v1::Audit audit = WaitForEnd(submitted->audit_id());
  ASSERT_EQ(audit.state(), v1::SUCCEEDED) << audit.error();
  auto results = client_->Report(submitted->audit_id());
  MEMAUDIT_ASSERT_OK(results);
  ASSERT_TRUE(results->complete());
  const v1::RelationalResults& r = results->relational();
  EXPECT_EQ(r.model(), "linear");
  ASSERT_EQ(r.curves_size(), 2);
  EXPECT_EQ(r.curves(0).variant(), "d_x=20");
  ASSERT_EQ(r.curves(0).points_size(), 6);  // default steps 1 ... 1e5
  for (const v1::RelationalPoint& p : r.curves(0).points()) {
    EXPECT_LT(std::abs(p.rm_norm()), 0.15) << "d < N, step " << p.step();
  }
  const v1::RelationalPoint& high = r.curves(1).points(5);
  EXPECT_EQ(high.step(), 100000u);
  EXPECT_GE(high.rm_norm(), 0.5);
  EXPECT_GT(high.success_train(), 0.95);
  EXPECT_LT(high.clean_train(), 1e-6) << "interpolates the training set";
  EXPECT_THAT(cli::ResultsTable(*results), HasSubstr("d_x=2000"));
}

// Replicates through the services: replicate 0's curves are the audit
// without replicates bit for bit, and each point carries its numbers across
// the replicates, whose re-run interval holds replicate 0's RM_norm.
TEST_F(RelationalAuditTest, ReplicatesRedrawTheSamplesAndGiveReRunIntervals) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/2));
  v1::AuditSpec spec = TinyLinearRelationalSpec();
  auto plain = client_->Submit(spec);
  MEMAUDIT_ASSERT_OK(plain);
  spec.mutable_relational()->set_replicates(3);
  auto replicated = client_->Submit(spec);
  MEMAUDIT_ASSERT_OK(replicated);
  EXPECT_EQ(replicated->tasks(), 6u);  // 2 key_dims x 3 replicates
  ASSERT_EQ(WaitForEnd(plain->audit_id()).state(), v1::SUCCEEDED);
  ASSERT_EQ(WaitForEnd(replicated->audit_id()).state(), v1::SUCCEEDED);
  auto one = client_->Report(plain->audit_id());
  auto three = client_->Report(replicated->audit_id());
  MEMAUDIT_ASSERT_OK(one);
  MEMAUDIT_ASSERT_OK(three);
  ASSERT_TRUE(three->complete());
  EXPECT_EQ(three->relational().replicates(), 3u);
  ASSERT_EQ(three->relational().curves_size(), 2);
  for (int c = 0; c < 2; ++c) {
    const v1::RelationalCurve& a = one->relational().curves(c);
    const v1::RelationalCurve& b = three->relational().curves(c);
    ASSERT_EQ(a.points_size(), b.points_size());
    for (int i = 0; i < a.points_size(); ++i) {
      EXPECT_EQ(a.points(i).rm_norm(), b.points(i).rm_norm()) << "replicate 0 is the audit";
      ASSERT_TRUE(b.points(i).has_across_replicates());
      const v1::TrialMean& rm = b.points(i).across_replicates().rm_norm();
      EXPECT_LE(rm.rerun_low(), b.points(i).rm_norm());
      EXPECT_GE(rm.rerun_high(), b.points(i).rm_norm());
    }
  }
  // The replicates drew other samples: at the memorizing width the held-out
  // success differs between them.
  const v1::TrialMean& val =
      three->relational().curves(1).points(5).across_replicates().success_val();
  EXPECT_GT(val.stddev(), 0.0);
  EXPECT_THAT(cli::ResultsTable(*three), HasSubstr("across 3 replicates"));
}

TEST_F(RelationalAuditTest, MalformedSpecIsRefusedWithTheFieldNamed) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/1));
  v1::AuditSpec spec = TinyPhoneBookSpec();
  spec.mutable_relational()->mutable_phone_book()->set_template_("{number} is {name}'s");
  spec.mutable_relational()->add_metrics("bleu");
  auto refused = client_->Submit(spec);
  ASSERT_THAT(refused, StatusIs(absl::StatusCode::kInvalidArgument));
  const std::string message(refused.status().message());
  EXPECT_THAT(message, HasSubstr("relational.phone_book.template"));
  EXPECT_THAT(message, HasSubstr("relational.metrics[0]"));
  v1::AuditSpec linear = TinyLinearRelationalSpec();
  linear.mutable_relational()->mutable_linear()->set_step_fraction(3);
  refused = client_->Submit(linear);
  ASSERT_THAT(refused, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("relational.linear.step_fraction: must be in (0, 2)"));
}

}  // namespace
}  // namespace memaudit::testing
