#include "scoring/ranked_scores.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

#include "common/base/seeding.h"
#include "gtest/gtest.h"
#include "scoring/auc_interval.h"
#include "scoring/balanced_accuracy_interval.h"
#include "scoring/roc.h"

namespace memaudit::scoring {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

uint64_t Bits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// The order the radix sort must reproduce: decreasing score, +0 before -0,
// ties by index.
std::vector<uint32_t> StableDescending(const std::vector<double>& scores) {
  std::vector<uint32_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const double x = scores[a], y = scores[b];
    return x > y || (x == y && !std::signbit(x) && std::signbit(y));
  });
  return order;
}

// Scores drawn from a few values, so most tie: both zeros, both infinities,
// subnormals, both signs and many binades (every radix digit varies).
std::vector<double> TiedScores(SplitMix64& rng, size_t n) {
  const std::vector<double> values = {0.0, -0.0, kInf, -kInf, 4.9e-324, -4.9e-324, 1e-300,  -1e-300,
                                      1.0, -1.0, 0.5,  -0.75, 3.25e10,  -7e200,    1.7e308, 1e-10};
  std::vector<double> s(n);
  for (double& v : s) v = values[rng.Uniform(values.size())];
  return s;
}

// Continuous scores rounded to a grid: clustered pairs as an audit pools
// them, with ties, and members shifted up.
struct Pairs {
  std::vector<double> scores;
  std::vector<uint8_t> member;
  std::vector<uint32_t> cluster;
};

Pairs AuditPairs(SplitMix64& rng, uint32_t clusters, uint32_t per_cluster, double shift,
                 double grid) {
  Pairs p;
  for (uint32_t c = 0; c < clusters; ++c) {
    const double u = rng.UniformDouble() - 0.5;
    for (uint32_t k = 0; k < per_cluster; ++k) {
      const bool member = rng.Uniform(2) == 1;
      const double s = u + (member ? shift : 0.0) + rng.UniformDouble();
      p.scores.push_back(grid > 0 ? std::round(s / grid) * grid : s);
      p.member.push_back(member);
      p.cluster.push_back(c);
    }
  }
  return p;
}

TEST(RankedScoresTest, OrderIsTheStableDescendingOrder) {
  SplitMix64 rng(1);
  for (size_t n : {0, 1, 2, 3, 100, 5000, 100000}) {
    const std::vector<double> tied = TiedScores(rng, n);
    EXPECT_EQ(internal::DescendingOrder(tied), StableDescending(tied)) << "tied, n = " << n;
    std::vector<double> spread(n);
    for (double& v : spread) v = (rng.UniformDouble() - 0.5) * std::ldexp(1.0, rng.Uniform(200));
    EXPECT_EQ(internal::DescendingOrder(spread), StableDescending(spread)) << "spread, n = " << n;
  }
}

TEST(RankedScoresTest, DescendingHoldsTheScoresInOrder) {
  SplitMix64 rng(2);
  const std::vector<double> s = TiedScores(rng, 1000);
  auto ranked = RankedScores::Rank(s);
  ASSERT_TRUE(ranked.ok()) << ranked.status();
  ASSERT_EQ(ranked->size(), s.size());
  EXPECT_EQ(ranked->scores().data(), s.data());
  for (size_t k = 0; k < s.size(); ++k) {
    ASSERT_EQ(Bits(ranked->descending()[k]), Bits(s[ranked->order()[k]]));
  }
}

TEST(RankedScoresTest, RefusesNaN) {
  EXPECT_FALSE(RankedScores::Rank(std::vector<double>{1.0, NAN}).ok());
  EXPECT_TRUE(RankedScores::Rank(std::vector<double>{}).ok());
}

void ExpectSameCurve(const RocCurve& a, const RocCurve& b) {
  EXPECT_EQ(a.positives, b.positives);
  EXPECT_EQ(a.negatives, b.negatives);
  ASSERT_EQ(a.thresholds.size(), b.thresholds.size());
  for (size_t k = 0; k < a.thresholds.size(); ++k) {
    // A tie group's threshold is its first score: of both zeros, which one
    // the comparison sort puts first is unspecified.
    if (a.thresholds[k] == 0) {
      ASSERT_EQ(a.thresholds[k], b.thresholds[k]) << k;
    } else {
      ASSERT_EQ(Bits(a.thresholds[k]), Bits(b.thresholds[k])) << k;
    }
    ASSERT_EQ(Bits(a.tpr[k]), Bits(b.tpr[k])) << k;
    ASSERT_EQ(Bits(a.fpr[k]), Bits(b.fpr[k])) << k;
  }
  EXPECT_EQ(a.true_positives, b.true_positives);
  EXPECT_EQ(a.false_positives, b.false_positives);
}

TEST(RankedScoresTest, RocFromTheRankingIsComputeRocs) {
  SplitMix64 rng(3);
  for (double grid : {0.0, 0.01, 0.25}) {
    const Pairs p = AuditPairs(rng, 700, 9, 0.3, grid);
    auto ranked = RankedScores::Rank(p.scores);
    ASSERT_TRUE(ranked.ok());
    auto fast = ComputeRoc(*ranked, p.member);
    auto plain = ComputeRoc(p.scores, p.member);
    ASSERT_TRUE(fast.ok() && plain.ok());
    ExpectSameCurve(*fast, *plain);
  }
  const std::vector<double> tied = TiedScores(rng, 3000);
  std::vector<uint8_t> member(tied.size());
  for (uint8_t& m : member) m = rng.Uniform(2);
  auto ranked = RankedScores::Rank(tied);
  ASSERT_TRUE(ranked.ok());
  ExpectSameCurve(*ComputeRoc(*ranked, member), *ComputeRoc(tied, member));
  // The tie group of both zeros has the threshold +0.
  const RocCurve roc = *ComputeRoc(*ranked, member);
  const auto zero = std::find(roc.thresholds.begin(), roc.thresholds.end(), 0.0);
  ASSERT_NE(zero, roc.thresholds.end());
  EXPECT_FALSE(std::signbit(*zero));
  // The ranked path refuses what ComputeRoc refuses.
  EXPECT_FALSE(ComputeRoc(*ranked, std::vector<uint8_t>(tied.size(), 1)).ok());
}

TEST(RankedScoresTest, AucIntervalFromTheRankingIsTheSameToTheBit) {
  SplitMix64 rng(4);
  for (double grid : {0.0, 0.01, 0.25}) {
    const Pairs p = AuditPairs(rng, 700, 9, 0.3, grid);
    auto ranked = RankedScores::Rank(p.scores);
    ASSERT_TRUE(ranked.ok());
    auto fast = ClusteredAucInterval(*ranked, p.member, p.cluster, 700);
    auto plain = ClusteredAucInterval(p.scores, p.member, p.cluster, 700);
    ASSERT_TRUE(fast.ok() && plain.ok());
    EXPECT_EQ(Bits(fast->auc), Bits(plain->auc)) << grid;
    EXPECT_EQ(Bits(fast->variance), Bits(plain->variance)) << grid;
    EXPECT_EQ(Bits(fast->interval.lo), Bits(plain->interval.lo)) << grid;
    EXPECT_EQ(Bits(fast->interval.hi), Bits(plain->interval.hi)) << grid;
  }
  // Infinite scores rank but have no interval, as before.
  const std::vector<double> s = {kInf, 0.5, 0.2, 0.1};
  auto ranked = RankedScores::Rank(s);
  ASSERT_TRUE(ranked.ok());
  EXPECT_FALSE(ClusteredAucInterval(*ranked, std::vector<uint8_t>{1, 0, 1, 0},
                                    std::vector<uint32_t>{0, 1, 0, 1}, 2)
                   .ok());
}

TEST(RankedScoresTest, BalancedAccuracyIntervalFromTheRankingIsTheSameOnAnyThreads) {
  SplitMix64 rng(5);
  // With a signal (the maximizer's deviation) and without (the curve's
  // infimum); resample counts that fill the last pass and that do not.
  for (double shift : {0.3, 0.0}) {
    for (double grid : {0.0, 0.05}) {
      const Pairs p = AuditPairs(rng, 300, 7, shift, grid);
      auto ranked = RankedScores::Rank(p.scores);
      ASSERT_TRUE(ranked.ok());
      for (uint32_t resamples : {1u, 99u, 200u}) {
        auto plain = BalancedAccuracyInterval(p.scores, p.member, p.cluster, 300, 9, resamples);
        ASSERT_TRUE(plain.ok());
        for (uint32_t threads : {1u, 2u, 3u, 0u}) {
          auto fast = BalancedAccuracyInterval(*ranked, p.member, p.cluster, 300, 9, resamples,
                                               0.95, threads);
          ASSERT_TRUE(fast.ok());
          SCOPED_TRACE(testing::Message() << "shift " << shift << " grid " << grid << " resamples "
                                          << resamples << " threads " << threads);
          EXPECT_EQ(Bits(fast->estimate), Bits(plain->estimate));
          EXPECT_EQ(Bits(fast->interval.lo), Bits(plain->interval.lo));
          EXPECT_EQ(Bits(fast->interval.hi), Bits(plain->interval.hi));
          EXPECT_EQ(fast->resamples_used, plain->resamples_used);
        }
      }
    }
  }
}

// Clusters of one class: some resamples hold one class and are left out,
// the same ones on every thread count.
TEST(RankedScoresTest, BalancedAccuracyIntervalLeavesOutTheSameResamples) {
  const std::vector<double> s = {0.9, 0.1, 0.8, 0.3};
  const std::vector<uint8_t> m = {1, 0, 1, 0};
  const std::vector<uint32_t> c = {0, 1, 2, 3};
  auto ranked = RankedScores::Rank(s);
  ASSERT_TRUE(ranked.ok());
  auto plain = BalancedAccuracyInterval(s, m, c, 4, 7);
  ASSERT_TRUE(plain.ok());
  for (uint32_t threads : {1u, 2u, 4u}) {
    auto fast =
        BalancedAccuracyInterval(*ranked, m, c, 4, 7, kBalancedAccuracyResamples, 0.95, threads);
    ASSERT_TRUE(fast.ok());
    EXPECT_EQ(fast->resamples_used, plain->resamples_used);
    EXPECT_LT(fast->resamples_used, kBalancedAccuracyResamples);
    EXPECT_EQ(Bits(fast->interval.lo), Bits(plain->interval.lo));
    EXPECT_EQ(Bits(fast->interval.hi), Bits(plain->interval.hi));
  }
  EXPECT_FALSE(BalancedAccuracyInterval(*ranked, m, std::vector<uint32_t>{0, 0, 0, 0}, 1, 7).ok())
      << "1 cluster";
}

}  // namespace
}  // namespace memaudit::scoring
