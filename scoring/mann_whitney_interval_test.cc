#include "scoring/mann_whitney_interval.h"

#include <cmath>

#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace memaudit::scoring {
namespace {

// One member and one non-member: V(θ) = θ(1−θ), so at θ̂ = 1 the lower end
// solves (1−θ)² = z²θ(1−θ): θ = 1/(1+z²); at θ̂ = ½ the ends solve
// (1+z²)θ² − (1+z²)θ + ¼ = 0.
TEST(MannWhitneyScoreIntervalTest, ClosedFormsForOnePairAndHandComputedVariance) {
  const double z2 = kZ95 * kZ95;
  auto perfect = MannWhitneyScoreInterval(1.0, 1, 1);
  MEMAUDIT_ASSERT_OK(perfect);
  EXPECT_NEAR(perfect->lo, 1 / (1 + z2), 1e-10);
  EXPECT_EQ(perfect->hi, 1.0);
  auto half = MannWhitneyScoreInterval(0.5, 1, 1);
  MEMAUDIT_ASSERT_OK(half);
  const double root = std::sqrt(1 - 1 / (1 + z2));
  EXPECT_NEAR(half->lo, (1 - root) / 2, 1e-10);
  EXPECT_NEAR(half->hi, (1 + root) / 2, 1e-10);
  // V(0.8) for 3 members and 4 non-members, by hand:
  // 0.8·0.2·(1 + 2·0.2/1.2 + 3·0.8/1.8) / 12 = 0.16·2.6667 / 12.
  EXPECT_NEAR(HanleyMcNeilVariance(0.8, 3, 4), 0.16 * (1 + 1.0 / 3 + 4.0 / 3) / 12, 1e-15);
}

// Eight perfectly separated pairs of groups: not the point [1, 1] but
// "at least 0.756" (the bisection's value, checked against an independent
// one), and mirror images at θ̂ and 1 − θ̂.
TEST(MannWhitneyScoreIntervalTest, APerfectAucGetsARealLowerEndAndMirrorsAtZero) {
  auto one = MannWhitneyScoreInterval(1.0, 8, 8);
  auto zero = MannWhitneyScoreInterval(0.0, 8, 8);
  MEMAUDIT_ASSERT_OK(one);
  MEMAUDIT_ASSERT_OK(zero);
  EXPECT_NEAR(one->lo, 0.755646561023, 1e-9);
  EXPECT_EQ(one->hi, 1.0);
  EXPECT_EQ(zero->lo, 0.0);
  EXPECT_NEAR(zero->hi, 1 - one->lo, 1e-10);
  auto a = MannWhitneyScoreInterval(0.75, 10, 20);
  auto b = MannWhitneyScoreInterval(0.25, 20, 10);
  MEMAUDIT_ASSERT_OK(a);
  MEMAUDIT_ASSERT_OK(b);
  EXPECT_NEAR(a->lo, 0.526360788678, 1e-9);
  EXPECT_NEAR(a->hi, 0.891743749261, 1e-9);
  EXPECT_NEAR(a->lo, 1 - b->hi, 1e-10);
  // Many pairs: close to the Wald interval on the same variance.
  auto large = MannWhitneyScoreInterval(0.9, 1000, 1000);
  MEMAUDIT_ASSERT_OK(large);
  const double half_width = kZ95 * std::sqrt(HanleyMcNeilVariance(0.9, 1000, 1000));
  EXPECT_NEAR(large->lo, 0.9 - half_width, 1e-3);
  EXPECT_NEAR(large->hi, 0.9 + half_width, 1e-3);
}

TEST(MannWhitneyScoreIntervalTest, RefusesWhatIsNoAuc) {
  EXPECT_FALSE(MannWhitneyScoreInterval(1.5, 3, 3).ok());
  EXPECT_FALSE(MannWhitneyScoreInterval(std::nan(""), 3, 3).ok());
  EXPECT_FALSE(MannWhitneyScoreInterval(0.5, 0, 3).ok());
  EXPECT_FALSE(MannWhitneyScoreInterval(0.5, 3, 3, 1.0).ok());
}

}  // namespace
}  // namespace memaudit::scoring
