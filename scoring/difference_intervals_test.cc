#include "scoring/difference_intervals.h"

#include <cmath>
#include <vector>

#include "common/base/seeding.h"
#include "gtest/gtest.h"

namespace memaudit::scoring {
namespace {

constexpr double kZ = 1.959963984540054;

// Wilson 0/10: hi = z²/(n + z²); 5/10: 1/2 ± z√(1/40 + z²/400)/(1 + z²/10).
TEST(WilsonScoreTest, HandComputed) {
  auto zero = WilsonScore(0, 10);
  ASSERT_TRUE(zero.ok());
  EXPECT_EQ(zero->lo, 0.0);
  EXPECT_NEAR(zero->hi, kZ * kZ / (10 + kZ * kZ), 1e-15);
  auto half = WilsonScore(5, 10);
  ASSERT_TRUE(half.ok());
  EXPECT_NEAR(half->lo, 0.236593090512564, 1e-12);
  EXPECT_NEAR(half->hi, 0.763406909487436, 1e-12);
  EXPECT_EQ(WilsonScore(10, 10)->hi, 1.0);
  EXPECT_FALSE(WilsonScore(0, 0).ok());
  EXPECT_FALSE(WilsonScore(3, 2).ok());
  EXPECT_FALSE(WilsonScore(1, 2, 0.0).ok());
}

// Newcombe (1998), Table II, method 10, to the 4 decimals printed there.
TEST(NewcombeDifferenceTest, MatchesThePublishedExamples) {
  struct Case {
    size_t k1, n1, k2, n2;
    double lo, hi;
  };
  for (const Case& c : {Case{56, 70, 48, 80, 0.0524, 0.3339}, Case{9, 10, 3, 10, 0.1705, 0.8090},
                        Case{5, 56, 0, 29, -0.0381, 0.1926}, Case{0, 10, 0, 20, -0.1611, 0.2775},
                        Case{0, 10, 0, 10, -0.2775, 0.2775}, Case{10, 10, 0, 20, 0.6791, 1.0},
                        Case{10, 10, 0, 10, 0.6075, 1.0}}) {
    auto d = NewcombeDifference(c.k1, c.n1, c.k2, c.n2);
    ASSERT_TRUE(d.ok());
    EXPECT_NEAR(d->lo, c.lo, 5e-5) << c.k1 << "/" << c.n1 << " - " << c.k2 << "/" << c.n2;
    EXPECT_NEAR(d->hi, c.hi, 5e-5) << c.k1 << "/" << c.n1 << " - " << c.k2 << "/" << c.n2;
  }
  EXPECT_FALSE(NewcombeDifference(1, 0, 0, 1).ok());
}

// d = 0.5 − 0.2 = 0.3 from [0.3, 0.6] and [0.1, 0.4]: the low end adds the
// first's distance below (0.2) and the second's above (0.2) in quadrature,
// the high end the first's above (0.1) and the second's below (0.1).
TEST(MoverDifferenceTest, HandComputed) {
  const Interval d = MoverDifference(0.5, {0.3, 0.6}, 0.2, {0.1, 0.4});
  EXPECT_NEAR(d.lo, 0.3 - std::sqrt(0.08), 1e-15);
  EXPECT_NEAR(d.hi, 0.3 + std::sqrt(0.02), 1e-15);
  // Cut to [−1, 1]: 1 − 0 from two whole-range intervals reaches 1 − √2
  // below and 1 + 0 above.
  const Interval cut = MoverDifference(1.0, {0.0, 1.0}, 0.0, {0.0, 1.0});
  EXPECT_NEAR(cut.lo, 1.0 - std::sqrt(2.0), 1e-15);
  EXPECT_EQ(cut.hi, 1.0);
  EXPECT_EQ(MoverDifference(0.0, {0.0, 1.0}, 1.0, {0.0, 1.0}).lo, -1.0);
}

TEST(SuccessRateIntervalsTest, ZeroOneRecordsAreCountedAndFractionsAveraged) {
  // Exact match: 3 of 4 and 1 of 4 → Clopper–Pearson and Newcombe.
  const std::vector<double> train = {1, 1, 0, 1}, val = {0, 1, 0, 0};
  auto binary = SuccessRateIntervals(train, val);
  ASSERT_TRUE(binary.ok()) << binary.status();
  EXPECT_EQ(binary->first.lo, ClopperPearson(3, 4)->lo);
  EXPECT_EQ(binary->first.hi, ClopperPearson(3, 4)->hi);
  EXPECT_EQ(binary->second.hi, ClopperPearson(1, 4)->hi);
  EXPECT_EQ(binary->difference.lo, NewcombeDifference(3, 4, 1, 4)->lo);
  EXPECT_EQ(binary->difference.hi, NewcombeDifference(3, 4, 1, 4)->hi);
  // Digit F1: Student t per split, cut to [0, 1], and MOVER from them.
  const std::vector<double> f1_train = {1, 0.5, 0.75, 1}, f1_val = {0, 0.25, 0.5, 0};
  auto fractional = SuccessRateIntervals(f1_train, f1_val);
  ASSERT_TRUE(fractional.ok());
  const Interval t_train = SummarizeMean(f1_train, 0.95, kUnitInterval)->interval;
  const Interval t_val = SummarizeMean(f1_val, 0.95, kUnitInterval)->interval;
  EXPECT_EQ(fractional->first.lo, t_train.lo);
  EXPECT_EQ(fractional->first.hi, 1.0);
  EXPECT_EQ(fractional->second.lo, 0.0);
  const Interval mover = MoverDifference(0.8125, t_train, 0.1875, t_val);
  EXPECT_DOUBLE_EQ(fractional->difference.lo, mover.lo);
  EXPECT_DOUBLE_EQ(fractional->difference.hi, mover.hi);
  // A 0/1 split beside a fractional one: its own interval exact, Wilson's
  // in the difference, so an all-ones split still has width there.
  const std::vector<double> all = {1, 1, 1, 1}, third = {1.0 / 3, 1.0 / 3, 1.0 / 3, 1.0 / 3};
  auto mixed = SuccessRateIntervals(all, third);
  ASSERT_TRUE(mixed.ok());
  EXPECT_EQ(mixed->first.lo, ClopperPearson(4, 4)->lo);
  EXPECT_NEAR(mixed->second.lo, 1.0 / 3, 1e-15) << "no spread among the fractions";
  EXPECT_NEAR(mixed->difference.lo, 2.0 / 3 - (1.0 - WilsonScore(4, 4)->lo), 1e-12);
  EXPECT_NEAR(mixed->difference.hi, 2.0 / 3, 1e-12);
  // One fractional record says nothing about the spread: [0, 1].
  auto one = SuccessRateIntervals(std::vector<double>{0.5}, f1_val);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->first.lo, 0.0);
  EXPECT_EQ(one->first.hi, 1.0);
  EXPECT_LE(one->difference.lo, (0.5 - 0.1875) - 0.5) << "the record's whole range below";
  EXPECT_FALSE(SuccessRateIntervals({}, val).ok());
  EXPECT_FALSE(SuccessRateIntervals(std::vector<double>{1.5}, val).ok());
}

// 128 records per split (the phone book's default), success 0.3 on
// training and 0.1 held out: Newcombe's interval holds the true 0.2 in
// about 95% of 2,000 draws; digit-F1-like fractions (the mean of 4 coin
// flips per record) with MOVER from Student t intervals likewise.
TEST(SuccessRateIntervalsTest, CoverTheTrueDifference) {
  SplitMix64 rng(DeriveSeed(3, "success_coverage", 0));
  int binary_covered = 0, fractional_covered = 0;
  constexpr int kDraws = 2000;
  for (int e = 0; e < kDraws; ++e) {
    std::vector<double> train(128), val(128), f_train(128), f_val(128);
    for (size_t i = 0; i < 128; ++i) {
      train[i] = rng.UniformDouble() < 0.3;
      val[i] = rng.UniformDouble() < 0.1;
      double a = 0, b = 0;
      for (int k = 0; k < 4; ++k) {
        a += rng.UniformDouble() < 0.3;
        b += rng.UniformDouble() < 0.1;
      }
      f_train[i] = a / 4;
      f_val[i] = b / 4;
    }
    auto binary = SuccessRateIntervals(train, val);
    auto fractional = SuccessRateIntervals(f_train, f_val);
    ASSERT_TRUE(binary.ok() && fractional.ok());
    binary_covered += binary->difference.lo <= 0.2 && 0.2 <= binary->difference.hi;
    fractional_covered += fractional->difference.lo <= 0.2 && 0.2 <= fractional->difference.hi;
  }
  EXPECT_NEAR(static_cast<double>(binary_covered) / kDraws, 0.95, 0.015);
  EXPECT_NEAR(static_cast<double>(fractional_covered) / kDraws, 0.95, 0.015);
}

}  // namespace
}  // namespace memaudit::scoring
