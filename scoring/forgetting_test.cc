#include "scoring/forgetting.h"

#include <cmath>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace memaudit::scoring {
namespace {

// Injected {10, 9, 7, 5}, baseline {8, 6, 4, 3, 2, 1, 0, -1, -2, -3}.
TrialScores HandTrial() { return {{10, 9, 7, 5}, {8, 6, 4, 3, 2, 1, 0, -1, -2, -3}}; }

TEST(ForgettingTest, TrialMetricsHandComputed) {
  auto m = ForgettingTrialMetrics(HandTrial(), 0.1);
  MEMAUDIT_ASSERT_OK(m);
  // FPR <= 0.1 allows one false positive (8): τ = 7, TP = 3.
  EXPECT_DOUBLE_EQ(m->tpr, 0.75);
  EXPECT_DOUBLE_EQ(m->fpr, 0.1);
  EXPECT_DOUBLE_EQ(m->threshold, 7.0);
  EXPECT_DOUBLE_EQ(m->precision, 0.75);
  EXPECT_NEAR(m->epsilon, std::log(7.5), 1e-12);
  // Pairs won: 10→10, 9→10, 7→9, 5→8 = 37 of 40.
  EXPECT_DOUBLE_EQ(m->auc, 37.0 / 40.0);
  // Best at τ = 5: (1 + 0.8) / 2.
  EXPECT_DOUBLE_EQ(m->accuracy, 0.9);
}

// Each trial draws its own D, Dp, init and order, as a re-run does, so a
// point's re-run interval is the prediction interval of its trials' values
// (SummarizeMean), nothing added: identical trials give the mean itself.
TEST(ForgettingTest, TheReRunIntervalIsThePredictionIntervalOfTheTrials) {
  const TrialScores perfect = {{5, 6}, {1, 2}};
  const TrialScores chance = {{1, 2}, {1, 2}};
  auto same = ForgettingCurve({ForgettingEvalPoint{0, {perfect, perfect, perfect}}});
  MEMAUDIT_ASSERT_OK(same);
  EXPECT_EQ((*same)[0].auc.rerun.lo, 1.0);
  EXPECT_EQ((*same)[0].auc.rerun.hi, 1.0);
  auto mixed = ForgettingCurve({ForgettingEvalPoint{0, {perfect, HandTrial(), chance}}});
  MEMAUDIT_ASSERT_OK(mixed);
  const ForgettingCurvePoint& p = (*mixed)[0];
  auto expected = SummarizeMean({1.0, 37.0 / 40.0, 0.5}, 0.95, kUnitInterval);
  MEMAUDIT_ASSERT_OK(expected);
  EXPECT_DOUBLE_EQ(p.auc.rerun.lo, expected->rerun.lo);
  EXPECT_DOUBLE_EQ(p.auc.rerun.hi, expected->rerun.hi);
  EXPECT_LT(p.auc.rerun.lo, p.auc.interval.lo) << "wider than the mean's own interval";
}

TEST(ForgettingTest, CurveIsSortedAndAveragedAcrossTrials) {
  TrialScores chance = {{1, 2}, {1, 2}};  // identical arms: AUC ½
  TrialScores perfect = {{5, 6}, {1, 2}};
  std::vector<ForgettingEvalPoint> points = {
      {1000, {chance, chance}},
      {0, {perfect, HandTrial(), perfect}},
  };
  auto curve = ForgettingCurve(points);
  MEMAUDIT_ASSERT_OK(curve);
  ASSERT_EQ(curve->size(), 2u);
  const ForgettingCurvePoint& first = (*curve)[0];
  EXPECT_EQ(first.steps_since_seen, 0);
  EXPECT_EQ(first.trials.size(), 3u);
  EXPECT_NEAR(first.auc.mean, (1.0 + 37.0 / 40.0 + 1.0) / 3.0, 1e-12);
  EXPECT_NEAR(first.accuracy.mean, (1.0 + 0.9 + 1.0) / 3.0, 1e-12);
  EXPECT_EQ(first.auc.n, 3u);
  EXPECT_LT(first.auc.interval.lo, first.auc.mean);
  // Perfect trials have FPR 0 at TPR 1: ε is clamped with FPR = 1/2.
  EXPECT_EQ(first.epsilon_clamped_trials, 2u);
  EXPECT_TRUE(std::isinf(first.trials[0].epsilon));
  EXPECT_NEAR(first.epsilon.mean, (2 * std::log(2.0) + std::log(7.5)) / 3.0, 1e-12);

  const ForgettingCurvePoint& late = (*curve)[1];
  EXPECT_EQ(late.steps_since_seen, 1000);
  EXPECT_DOUBLE_EQ(late.auc.mean, 0.5);
  EXPECT_DOUBLE_EQ(late.accuracy.mean, 0.5);
  EXPECT_DOUBLE_EQ(late.epsilon.mean, 0.0);
  // FPR <= 0.1 admits no threshold with ties across arms: nothing predicted.
  EXPECT_EQ(late.precision_undefined_trials, 2u);
  EXPECT_DOUBLE_EQ(late.tpr.mean, 0.0);
}

// k = 0 of a checkpoint-calibrated attack: every non-member's score is 0,
// so the point is counted as tied in every trial; a spread baseline is not.
TEST(ForgettingTest, TiedBaselinesAreCountedPerTrial) {
  TrialScores tied = {{0.3, -0.1, 0.2}, {0.0, 0.0, 0.0}};
  TrialScores spread = {{0.3, -0.1, 0.2}, {0.0, 0.1, 0.0}};
  auto curve =
      ForgettingCurve(std::vector<ForgettingEvalPoint>{{0, {tied, tied}}, {10, {tied, spread}}});
  MEMAUDIT_ASSERT_OK(curve);
  EXPECT_EQ((*curve)[0].tied_baseline_trials, 2u);
  EXPECT_EQ((*curve)[1].tied_baseline_trials, 1u);
}

TEST(ForgettingTest, RejectsBadInput) {
  EXPECT_FALSE(ForgettingCurve({}).ok());
  std::vector<ForgettingEvalPoint> dup = {{5, {HandTrial()}}, {5, {HandTrial()}}};
  EXPECT_FALSE(ForgettingCurve(dup).ok());
  std::vector<ForgettingEvalPoint> no_trials = {{5, {}}};
  EXPECT_FALSE(ForgettingCurve(no_trials).ok());
  std::vector<ForgettingEvalPoint> empty_arm = {{5, {TrialScores{{1.0}, {}}}}};
  EXPECT_FALSE(ForgettingCurve(empty_arm).ok());
  std::vector<ForgettingEvalPoint> nan = {{5, {TrialScores{{NAN}, {1.0}}}}};
  EXPECT_FALSE(ForgettingCurve(nan).ok());
  ForgettingOptions bad;
  bad.fpr_target = 2.0;
  std::vector<ForgettingEvalPoint> ok = {{5, {HandTrial()}}};
  EXPECT_FALSE(ForgettingCurve(ok, bad).ok());
}

}  // namespace
}  // namespace memaudit::scoring
