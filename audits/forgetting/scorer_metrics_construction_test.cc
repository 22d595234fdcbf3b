#include "audits/forgetting/scorer_metrics_construction.h"

#include "audits/forgetting/signals.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scoring/intervals.h"

namespace memaudit::scorer {
namespace {

using ::memaudit::testing::StatusIs;
using ::testing::HasSubstr;

v1::AuditSpec Spec() {
  v1::AuditSpec spec;
  spec.set_name("test");
  v1::ForgettingAudit* f = spec.mutable_forgetting();
  f->mutable_construction()->set_name("mean_estimation");
  f->mutable_construction()->set_sampling("random");
  f->mutable_construction()->set_sigma(1);
  f->mutable_construction()->set_injected(1);
  f->mutable_training()->set_learning_rate(0.01);
  f->set_trials(4);
  f->add_eval_points(0);
  f->add_eval_points(1);
  return spec;
}

// Point 0: IN arms guessed IN in trials 0-2, no OUT arm guessed IN. Point 1:
// trial 3 has not sent it yet.
ForgettingSignals HandBuilt() {
  ForgettingSignals s;
  for (uint32_t t = 0; t < 4; ++t) {
    s[{"0", forgetting::kGuessInjected}][t] = {t < 3 ? 1.0 : 0.0};
    s[{"0", forgetting::kGuessBaseline}][t] = {0};
    s[{"0", forgetting::kArmsIdentical}][t] = {0};
    if (t == 3) continue;
    for (const char* signal :
         {forgetting::kGuessInjected, forgetting::kGuessBaseline, forgetting::kArmsIdentical}) {
      s[{"1", signal}][t] = {1};
    }
  }
  return s;
}

TEST(ConstructionScoringTest, TalliesTheGuessesOfEveryTrialWithExactIntervals) {
  auto results = ScoreConstruction(Spec(), HandBuilt());
  MEMAUDIT_ASSERT_OK(results);
  EXPECT_FALSE(results->complete());
  const v1::ForgettingResults& f = results->forgetting();
  EXPECT_EQ(f.construction(), "mean_estimation");
  ASSERT_EQ(f.construction_curve_size(), 1);
  const v1::ForgettingConstructionPoint& p = f.construction_curve(0);
  EXPECT_EQ(p.true_positives(), 3u);
  EXPECT_EQ(p.false_negatives(), 1u);
  EXPECT_EQ(p.false_positives(), 0u);
  EXPECT_EQ(p.true_negatives(), 4u);
  EXPECT_DOUBLE_EQ(p.accuracy(), 7.0 / 8);
  // 7 of 8 right: the exact binomial interval, from the one implementation.
  auto ci = scoring::ClopperPearson(7, 8);
  MEMAUDIT_ASSERT_OK(ci);
  EXPECT_DOUBLE_EQ(p.accuracy_low(), ci->lo);
  EXPECT_DOUBLE_EQ(p.accuracy_high(), ci->hi);
  EXPECT_DOUBLE_EQ(p.precision(), 1.0);
  EXPECT_FALSE(p.precision_undefined());
  // Random mean estimation at k = 0: the arms are two points.
  EXPECT_EQ(p.optimal_accuracy(), 1.0);

  // Every trial's point 1 in: complete; all guessed IN, so precision 1/2.
  ForgettingSignals all = HandBuilt();
  for (const char* signal :
       {forgetting::kGuessInjected, forgetting::kGuessBaseline, forgetting::kArmsIdentical}) {
    all[{"1", signal}][3] = {1};
  }
  results = ScoreConstruction(Spec(), all);
  MEMAUDIT_ASSERT_OK(results);
  EXPECT_TRUE(results->complete());
  ASSERT_EQ(results->forgetting().construction_curve_size(), 2);
  const v1::ForgettingConstructionPoint& q = results->forgetting().construction_curve(1);
  EXPECT_DOUBLE_EQ(q.accuracy(), 0.5);
  EXPECT_DOUBLE_EQ(q.precision(), 0.5);
  EXPECT_EQ(q.identical_trials(), 4u);
  EXPECT_NEAR(q.optimal_accuracy(), 0.836457, 1e-6);
  EXPECT_NEAR(q.kl_divergence(), 1.9208, 1e-12);
  EXPECT_DOUBLE_EQ(q.kl_bound(), 2);

  auto arrays = ConstructionExport(Spec(), all);
  MEMAUDIT_ASSERT_OK(arrays);
  ASSERT_EQ(arrays->size(), 4u);
  EXPECT_EQ((*arrays)[1].name(), "guess_injected");
}

TEST(ConstructionScoringTest, NoInGuessLeavesPrecisionUndefinedAndUndecided) {
  ForgettingSignals s;
  for (uint32_t t = 0; t < 4; ++t) {
    for (const char* signal :
         {forgetting::kGuessInjected, forgetting::kGuessBaseline, forgetting::kArmsIdentical}) {
      s[{"0", signal}][t] = {0};
    }
  }
  v1::AuditSpec spec = Spec();
  spec.mutable_forgetting()->clear_eval_points();
  spec.mutable_forgetting()->add_eval_points(0);
  auto results = ScoreConstruction(spec, s);
  MEMAUDIT_ASSERT_OK(results);
  const v1::ForgettingConstructionPoint& p = results->forgetting().construction_curve(0);
  EXPECT_TRUE(p.precision_undefined());
  EXPECT_EQ(p.precision_low(), 0);
  EXPECT_EQ(p.precision_high(), 1);
  EXPECT_DOUBLE_EQ(p.accuracy(), 0.5);
}

TEST(ConstructionScoringTest, RefusesObservationsThatAreNotGuesses) {
  const v1::ForgettingAudit f = Spec().forgetting();
  v1::Observation o;
  o.set_point("0");
  o.set_signal(forgetting::kGuessInjected);
  o.add_values(1);
  MEMAUDIT_EXPECT_OK(ValidateConstructionObservation(f, o));
  o.set_values(0, 0.5);
  EXPECT_THAT(ValidateConstructionObservation(f, o),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("observation.values")));
  o.set_values(0, 1);
  o.set_signal(forgetting::kPhiInjected);
  EXPECT_THAT(ValidateConstructionObservation(f, o),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("observation.signal")));
  o.set_signal(forgetting::kGuessBaseline);
  o.set_point("2");
  EXPECT_THAT(ValidateConstructionObservation(f, o),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("observation.point")));
}

}  // namespace
}  // namespace memaudit::scorer
