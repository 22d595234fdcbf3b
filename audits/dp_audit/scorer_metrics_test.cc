#include "audits/dp_audit/scorer_metrics.h"

#include <cmath>

#include "audits/dp_audit/signals.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scoring/one_run_audit.h"

namespace memaudit::scorer {
namespace {

using ::memaudit::testing::StatusIs;
using ::testing::HasSubstr;

v1::AuditSpec Spec(uint32_t canaries, uint32_t runs) {
  v1::AuditSpec spec;
  spec.set_seed(3);
  v1::DpAudit* d = spec.mutable_dp_audit();
  d->set_canaries(canaries);
  d->set_runs(runs);
  d->set_canary_type("gradient");
  d->set_confidence(0.95);
  d->set_delta(1e-5);
  d->mutable_dp_sgd()->set_noise_multiplier(1);
  return spec;
}

// Scores that order the canaries by their inclusion bit: every guess right.
DpAuditSignals Perfect(const v1::AuditSpec& spec) {
  DpAuditSignals s;
  for (uint32_t run = 0; run < spec.dp_audit().runs(); ++run) {
    for (uint8_t b : dp_audit::Included(spec, run)) s.scores[run].push_back(b ? 1.0 : -1.0);
    s.summary[run] = {0.9, 4.0 + run, 1.1};
  }
  return s;
}

TEST(DpAuditScorerTest, PerfectGuessesReachTheLargestProvableEpsilon) {
  const v1::AuditSpec spec = Spec(500, 2);
  auto results = ScoreDpAudit(spec, Perfect(spec));
  ASSERT_TRUE(results.ok()) << results.status();
  const v1::DpAuditResults& r = results->dp_audit();
  EXPECT_EQ(results->kind(), v1::DP_AUDIT);
  EXPECT_TRUE(results->complete());
  EXPECT_EQ(r.audited(), 1000u);
  EXPECT_EQ(results->members() + results->non_members(), 1000u);
  EXPECT_EQ(r.included(), results->members());
  EXPECT_EQ(r.auc(), 1.0);
  EXPECT_GT(r.epsilon_lower(), 0);
  EXPECT_EQ(r.epsilon_lower(), r.max_certifiable_epsilon());
  const v1::DpAuditBudget& best = r.budgets(r.best_budget());
  EXPECT_EQ(best.correct(), best.guesses());
  // The same number straight from the scoring library.
  EXPECT_EQ(r.epsilon_lower(),
            scoring::OneRunEpsilonLowerBound(1000, best.guesses(), best.correct(), 1e-5,
                                             r.significance_per_test()));
  EXPECT_EQ(r.significance_per_test(),
            scoring::OneRunSignificance(0.95, static_cast<size_t>(r.budgets_size())));
  // The accountant's epsilon is the largest over the runs.
  EXPECT_EQ(r.accountant_epsilon(), 5.0);
  EXPECT_TRUE(r.dp_sgd());
  EXPECT_NEAR(r.train_accuracy(), 0.9, 1e-12);
}

TEST(DpAuditScorerTest, ScoresThatIgnoreInclusionProveNothing) {
  const v1::AuditSpec spec = Spec(1000, 1);
  DpAuditSignals s;
  for (uint32_t i = 0; i < 1000; ++i) s.scores[0].push_back(std::sin(i * 7.1));
  s.summary[0] = {0.9, 4.0, 1.1};
  auto results = ScoreDpAudit(spec, s);
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_LT(results->dp_audit().epsilon_lower(), 0.5);
  EXPECT_NEAR(results->dp_audit().auc(), 0.5, 0.06);
}

TEST(DpAuditScorerTest, AMissingRunIsNotScored) {
  const v1::AuditSpec spec = Spec(100, 2);
  DpAuditSignals s = Perfect(spec);
  s.scores.erase(1);
  EXPECT_THAT(ScoreDpAudit(spec, s), StatusIs(absl::StatusCode::kFailedPrecondition));
}

TEST(DpAuditScorerTest, ObservationsAreCheckedByField) {
  const v1::DpAudit d = Spec(100, 2).dp_audit();
  v1::Observation o;
  o.set_run(0);
  o.set_point(dp_audit::kPoint);
  o.set_signal(dp_audit::kScores);
  o.mutable_values()->Resize(100, 0.5);
  EXPECT_TRUE(ValidateDpAuditObservation(d, o).ok());
  o.set_values(3, NAN);
  EXPECT_THAT(ValidateDpAuditObservation(d, o).message(), HasSubstr("observation.values[3]"));
  o.mutable_values()->Resize(99, 0);
  EXPECT_THAT(ValidateDpAuditObservation(d, o).message(), HasSubstr("holds 100 values"));
  o.set_run(2);
  EXPECT_THAT(ValidateDpAuditObservation(d, o).message(), HasSubstr("observation.run"));
  o.set_run(0);
  o.set_signal("phi");
  EXPECT_THAT(ValidateDpAuditObservation(d, o).message(), HasSubstr("observation.signal"));
  // The accountant's epsilon of a run without noise is +inf; other values
  // may not be.
  o.set_signal(dp_audit::kSummary);
  o.clear_values();
  o.add_values(0.9);
  o.add_values(HUGE_VAL);
  o.add_values(0);
  EXPECT_TRUE(ValidateDpAuditObservation(d, o).ok());
  o.set_values(0, HUGE_VAL);
  EXPECT_THAT(ValidateDpAuditObservation(d, o).message(), HasSubstr("observation.values[0]"));
}

}  // namespace
}  // namespace memaudit::scorer
