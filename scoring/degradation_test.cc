#include "scoring/degradation.h"

#include <cmath>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace memaudit::scoring {
namespace {

TEST(DegradationTest, HandComputed) {
  // b:   1     1     0     0     1
  // p_u: 0.9   0.5   0.2   0.6   0.5
  // p_m: 0.6   0.5   0.4   0.5   0.75
  // count: 1 + 0 (tie) + 1 + 0 + 0 = 2 → 0.4
  // rate:  0.3 + 0 + 0.2 − 0.1 − 0.25 = 0.15 → 0.03
  const std::vector<uint8_t> b = {1, 1, 0, 0, 1};
  const std::vector<double> pu = {0.9, 0.5, 0.2, 0.6, 0.5};
  const std::vector<double> pm = {0.6, 0.5, 0.4, 0.5, 0.75};
  auto d = ComputeDegradation(b, pu, pm);
  MEMAUDIT_ASSERT_OK(d);
  EXPECT_DOUBLE_EQ(d->deg_count, 0.4);
  EXPECT_NEAR(d->deg_rate, 0.03, 1e-15);
  // DegCount: 2 of 5 rows, Clopper–Pearson [Beta⁻¹(0.025; 2, 4),
  // Beta⁻¹(0.975; 3, 3)] = [0.052745, 0.853367] (binomial tails
  // solved by bisection).
  EXPECT_NEAR(d->deg_count_interval.lo, 0.05274495052631695, 1e-12);
  EXPECT_NEAR(d->deg_count_interval.hi, 0.8533672003653269, 1e-12);
  // DegRate: gains 0.3, 0, 0.2, −0.1, −0.25; squared deviations from 0.03
  // sum to 0.198, s² = 0.0495, and the paired t interval is
  // 0.03 ± t_4 √(0.0495 / 5), t_4 = 2.776445.
  const double half = 2.7764451051977987 * std::sqrt(0.0495 / 5);
  EXPECT_NEAR(d->deg_rate_interval.lo, 0.03 - half, 1e-12);
  EXPECT_NEAR(d->deg_rate_interval.hi, 0.03 + half, 1e-12);
}

TEST(DegradationTest, IntervalsAtTheEdges) {
  // Every row gains fully: DegCount's exact interval reaches 1 and stops
  // at (α/2)^(1/n) below; DegRate has no spread.
  auto all = ComputeDegradation(std::vector<uint8_t>{1, 0, 1, 0}, std::vector<double>{1, 0, 1, 0},
                                std::vector<double>{0, 1, 0, 1});
  ASSERT_TRUE(all.ok());
  EXPECT_NEAR(all->deg_count_interval.lo, std::pow(0.025, 0.25), 1e-12);
  EXPECT_EQ(all->deg_count_interval.hi, 1.0);
  EXPECT_EQ(all->deg_rate_interval.lo, 1.0);
  EXPECT_EQ(all->deg_rate_interval.hi, 1.0);
  // One row: nothing bounds the mean gain.
  auto one = ComputeDegradation(std::vector<uint8_t>{1}, std::vector<double>{0.6},
                                std::vector<double>{0.5});
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->deg_rate_interval.lo, -1.0);
  EXPECT_EQ(one->deg_rate_interval.hi, 1.0);
  EXPECT_NEAR(one->deg_count_interval.lo, 0.025, 1e-15);
}

TEST(DegradationTest, Extremes) {
  // A perfect attack against a clueless baseline: count 1, rate 1.
  auto best = ComputeDegradation(std::vector<uint8_t>{1, 0}, std::vector<double>{1.0, 0.0},
                                 std::vector<double>{0.0, 1.0});
  EXPECT_DOUBLE_EQ(best->deg_count, 1.0);
  EXPECT_DOUBLE_EQ(best->deg_rate, 1.0);
  auto same = ComputeDegradation(std::vector<uint8_t>{1, 0}, std::vector<double>{0.3, 0.3},
                                 std::vector<double>{0.3, 0.3});
  EXPECT_DOUBLE_EQ(same->deg_count, 0.0);
  EXPECT_DOUBLE_EQ(same->deg_rate, 0.0);
}

TEST(DegradationTest, RejectsBadInput) {
  const std::vector<double> p = {0.5};
  EXPECT_FALSE(ComputeDegradation({}, {}, {}).ok());
  EXPECT_FALSE(ComputeDegradation(std::vector<uint8_t>{1, 0}, p, p).ok());
  EXPECT_FALSE(ComputeDegradation(std::vector<uint8_t>{2}, p, p).ok());
  EXPECT_FALSE(ComputeDegradation(std::vector<uint8_t>{1}, std::vector<double>{1.5}, p).ok());
  EXPECT_FALSE(ComputeDegradation(std::vector<uint8_t>{1}, p, std::vector<double>{NAN}).ok());
}

}  // namespace
}  // namespace memaudit::scoring
