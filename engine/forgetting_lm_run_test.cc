// Poison (Alg. 1) for LM canaries. The Inject tests live with the image
// facade's in forgetting_run_test.cc.
#include "engine/forgetting_lm_run.h"

#include <cmath>
#include <numeric>

#include "common/base/seeding.h"
#include "common/testing/random_text.h"
#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace memaudit::engine {
namespace {

using memaudit::testing::RandomLetterLines;

// Canaries 0, 1 once, 2, 3 16 times each in the canary batch (34 windows),
// then 4 controls; |R| = 10^4 (enumerated: exact ranks). T_I = 200 steps of
// 16 windows over 1250 corpus windows + the batch: about 2.5 epochs, so each
// 16-copy canary is seen about 40 times before it is removed.
ForgettingLmRunSpec PoisonSpec() {
  ForgettingLmRunSpec spec;
  spec.corpus_text = RandomLetterLines(30000);
  spec.prefix = "pin ";
  spec.digits = 4;
  spec.copies = {1, 1, 16, 16};
  spec.controls = 4;
  spec.units = 32;
  spec.embedding = 8;
  spec.optimizer.learning_rate = 1e-2;
  spec.window = 24;
  spec.batch_size = 16;
  spec.steps_before = 200;
  spec.poison = true;
  spec.eval_points = {0, 50, 100, 200, 400};
  spec.canary_seed = 3;
  spec.init_seed = 4;
  spec.order_seed = 5;
  return spec;
}

double Mean(const std::vector<double>& v, size_t begin, size_t end) {
  return std::accumulate(v.begin() + begin, v.begin() + end, 0.0) /
         static_cast<double>(end - begin);
}

TEST(ForgettingLmPoisonTest, RemovedCanariesStandAboveTheBaselineThenFade) {
  uint64_t reported = 0;
  auto result = RunForgettingLm(PoisonSpec(), [&](uint64_t steps) {
    reported = steps;
    return true;
  });
  MEMAUDIT_ASSERT_OK(result);
  // No injection steps: each arm trains T_I, then both run to the last point.
  EXPECT_EQ(result->injection_steps, 0u);
  EXPECT_EQ(result->steps, 2u * 200u + 2u * 400u);
  EXPECT_EQ(result->steps, ForgettingLmTrialSteps(PoisonSpec()));
  EXPECT_EQ(ForgettingLmInjectionSteps(PoisonSpec()), 0u);
  EXPECT_EQ(reported, result->steps);
  ASSERT_EQ(result->points.size(), 5u);
  // The checkpoint is the baseline at T_I, which k = 0 reuses.
  EXPECT_EQ(result->points[0].baseline.exposure, result->checkpoint.exposure);
  for (const ForgettingLmPoint& p : result->points) {
    for (size_t i = 0; i < 8; ++i) {
      EXPECT_EQ(p.injected.exact[i], 1);
      EXPECT_EQ(p.baseline.exact[i], 1);
    }
  }

  // Mean exposure of the 16-copy canaries (2, 3) and the controls (4..7).
  auto often = [&](const CanaryExposures& e) { return Mean(e.exposure, 2, 4); };
  auto controls = [&](const CanaryExposures& e) { return Mean(e.exposure, 4, 8); };
  const ForgettingLmPoint& removed = result->points[0];
  const ForgettingLmPoint& last = result->points.back();
  // Right after removal the poisoned canaries stand far above the same
  // canaries under the baseline arm and above the never-inserted controls
  // (9.77 bits of 13.29 against 0.38 and 1.37)...
  EXPECT_GT(often(removed.injected), often(removed.baseline) + 3);
  EXPECT_GT(often(removed.injected), controls(removed.injected) + 3);
  // ...and fade as training continues on the corpus alone (7.63 bits at
  // k = 400; over audit seeds 0-4 the drop was 0.86 to 3.4 bits, though not
  // monotone at every point).
  EXPECT_LT(often(last.injected), often(removed.injected) - 0.5);
  double later = 0;
  for (size_t i = 1; i < result->points.size(); ++i) later += often(result->points[i].injected);
  EXPECT_LT(later / static_cast<double>(result->points.size() - 1), often(removed.injected));
  // The baseline never saw them: it stays near chance throughout.
  EXPECT_LT(often(last.baseline), often(last.injected));

  // The baseline arm never sees the canary batch: other copy counts (same
  // canaries, same corpus) leave its every bit unchanged, while the injected
  // arm's exposures move.
  ForgettingLmRunSpec fewer = PoisonSpec();
  fewer.copies = {1, 1, 2, 2};
  fewer.eval_points = {0, 100};
  auto other = RunForgettingLm(fewer, nullptr);
  MEMAUDIT_ASSERT_OK(other);
  EXPECT_EQ(other->checkpoint.exposure, result->checkpoint.exposure);
  EXPECT_EQ(other->points[1].baseline.exposure, result->points[2].baseline.exposure);
  EXPECT_NE(other->points[0].injected.exposure, result->points[0].injected.exposure);
}

TEST(ForgettingLmPoisonTest, DeterministicAndPairingMovesOnlyTheBaselineOrder) {
  ForgettingLmRunSpec spec = PoisonSpec();
  spec.steps_before = 40;
  spec.eval_points = {0, 30};
  auto a = RunForgettingLm(spec, nullptr);
  auto b = RunForgettingLm(spec, nullptr);
  MEMAUDIT_ASSERT_OK(a);
  MEMAUDIT_ASSERT_OK(b);
  EXPECT_EQ(a->points[1].injected.exposure, b->points[1].injected.exposure);
  EXPECT_EQ(a->points[1].baseline.exposure, b->points[1].baseline.exposure);
  // Unpaired: the baseline draws its own order, the injected arm is unchanged.
  spec.paired = false;
  auto unpaired = RunForgettingLm(spec, nullptr);
  MEMAUDIT_ASSERT_OK(unpaired);
  EXPECT_EQ(unpaired->points[1].injected.exposure, a->points[1].injected.exposure);
  EXPECT_NE(unpaired->checkpoint.exposure, a->checkpoint.exposure);
}

// The built-in transformer through Poison: both arms train, the 16-copy
// canaries stand above the controls right after removal.
TEST(ForgettingLmPoisonTest, ATransformerRunsBothArms) {
  ForgettingLmRunSpec spec = PoisonSpec();
  spec.lm = ModelKind::kTransformerLm;
  spec.layers = 1;
  spec.embedding = 32;
  spec.heads = 4;
  spec.units = 64;
  spec.optimizer.learning_rate = 3e-3;
  spec.eval_points = {0, 100};
  auto result = RunForgettingLm(spec, nullptr);
  MEMAUDIT_ASSERT_OK(result);
  ASSERT_EQ(result->points.size(), 2u);
  const ForgettingLmPoint& removed = result->points[0];
  EXPECT_GT(Mean(removed.injected.exposure, 2, 4), Mean(removed.injected.exposure, 4, 8) + 3);
}

}  // namespace
}  // namespace memaudit::engine
