#include "scoring/balanced_accuracy_interval.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "common/base/seeding.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scoring/roc.h"

namespace memaudit::scoring {
namespace {

// A standard normal from two uniforms (Box–Muller): reproducible anywhere.
double Normal(SplitMix64& rng) {
  const double u = 1.0 - rng.UniformDouble();  // in (0, 1]
  return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * M_PI * rng.UniformDouble());
}

double Phi(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

struct Pairs {
  std::vector<double> scores;
  std::vector<uint8_t> member;
  std::vector<uint32_t> cluster;
};

// `clusters` examples, each scored `per_cluster` times: score = u_example +
// shift * member + noise, u ~ N(0, cluster_sd^2). With several pairs per
// example half of them are members (a membership audit's keep-matrix);
// with one, the class is a coin flip.
Pairs Draw(SplitMix64& rng, uint32_t clusters, uint32_t per_cluster, double shift,
           double cluster_sd) {
  Pairs p;
  for (uint32_t c = 0; c < clusters; ++c) {
    const double u = cluster_sd * Normal(rng);
    for (uint32_t k = 0; k < per_cluster; ++k) {
      const bool member = per_cluster > 1 ? k % 2 == 0 : rng.Uniform(2) == 1;
      p.scores.push_back(u + (member ? shift : 0.0) + Normal(rng));
      p.member.push_back(member);
      p.cluster.push_back(c);
    }
  }
  return p;
}

// Members score N(shift, 1 + sd²) and non-members N(0, 1 + sd²) whatever
// the example, so the best threshold is shift / 2 and the population's
// balanced accuracy Φ(shift / (2 √(1 + sd²))).
double TrueBalancedAccuracy(double shift, double cluster_sd) {
  return Phi(shift / (2.0 * std::sqrt(1.0 + cluster_sd * cluster_sd)));
}

// Of `experiments` fresh draws, the share whose interval holds the true
// value; `by_pair` treats every pair as its own cluster.
double Coverage(int experiments, uint32_t clusters, uint32_t per_cluster, double shift,
                double cluster_sd, bool by_pair = false) {
  const double truth = TrueBalancedAccuracy(shift, cluster_sd);
  SplitMix64 rng(DeriveSeed(11, "balanced_accuracy_coverage", per_cluster));
  int covered = 0;
  for (int e = 0; e < experiments; ++e) {
    Pairs p = Draw(rng, clusters, per_cluster, shift, cluster_sd);
    uint32_t groups = clusters;
    if (by_pair) {
      for (uint32_t i = 0; i < p.cluster.size(); ++i) p.cluster[i] = i;
      groups = static_cast<uint32_t>(p.cluster.size());
    }
    auto ba = BalancedAccuracyInterval(p.scores, p.member, p.cluster, groups, rng.Next());
    EXPECT_TRUE(ba.ok()) << ba.status();
    if (ba.ok() && ba->interval.lo <= truth && truth <= ba->interval.hi) ++covered;
  }
  return static_cast<double>(covered) / experiments;
}

// Independent pairs (balanced accuracy Φ(1/2) = 0.691), pairs clustered by
// example (Φ(1 / (2√2)) = 0.638) and scores without signal (0.5, where
// the max over thresholds sits on its bound and a percentile bootstrap
// covers nothing): about 95% each. 300 experiments each: the share's sd is
// about 0.013 at 95%.
TEST(BalancedAccuracyIntervalTest, CoversAKnownBalancedAccuracy) {
  const double independent = Coverage(300, 200, 1, 1.0, 0.0);
  EXPECT_GE(independent, 0.93);
  EXPECT_LE(independent, 0.995);
  const double clustered = Coverage(300, 100, 4, 1.0, 1.0);
  EXPECT_GE(clustered, 0.93);
  EXPECT_LE(clustered, 0.995);
  const double no_signal = Coverage(300, 100, 4, 0.0, 1.0);
  EXPECT_GE(no_signal, 0.93);
  EXPECT_LE(no_signal, 0.995);
}

// Two clusters, each one member and one non-member: {3 m, 0 n} and
// {2 m, 1 n}. Sorted: m 3, m 2, n 1, n 0; J = TPR − FPR = 1/2, 1, 1/2, 0,
// so BA = 1 at τ̂ = 2. Resamples: both clusters (p 1/2) reproduce the data;
// cluster 0 twice (p 1/4) gives J* = 1, 1, 1, 0, deviations 1/2, 0, 1/2, 0;
// cluster 1 twice (p 1/4) gives J* = 0, 1, 0, 0, deviations ≤ 0. So the
// deviation at the resample's maximizer (the first J* = 1) is 1/2 with
// probability 1/4 > 2.5%, else 0: low = 1 − 1/4; the deviation at τ̂ is
// always 0: high = 1.
TEST(BalancedAccuracyIntervalTest, MatchesAHandComputation) {
  const std::vector<double> s = {3, 0, 2, 1};
  const std::vector<uint8_t> m = {1, 0, 1, 0};
  const std::vector<uint32_t> c = {0, 0, 1, 1};
  auto ba = BalancedAccuracyInterval(s, m, c, 2, /*seed=*/1);
  ASSERT_TRUE(ba.ok()) << ba.status();
  EXPECT_EQ(ba->estimate, 1.0);
  EXPECT_EQ(ba->resamples_used, kBalancedAccuracyResamples);
  EXPECT_DOUBLE_EQ(ba->interval.lo, 0.75);
  EXPECT_EQ(ba->interval.hi, 1.0);
}

TEST(BalancedAccuracyIntervalTest, EqualsBalancedAccuracyAndIsSeeded) {
  SplitMix64 rng(5);
  const Pairs p = Draw(rng, 300, 4, 0.7, 0.5);
  auto point = BalancedAccuracy(p.scores, p.member);
  auto ba = BalancedAccuracyInterval(p.scores, p.member, p.cluster, 300, 42);
  ASSERT_TRUE(point.ok() && ba.ok());
  EXPECT_EQ(ba->estimate, *point) << "to the bit";
  EXPECT_LT(ba->interval.lo, *point);
  EXPECT_GT(ba->interval.hi, *point);
  auto again = BalancedAccuracyInterval(p.scores, p.member, p.cluster, 300, 42);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->interval.lo, ba->interval.lo);
  EXPECT_EQ(again->interval.hi, ba->interval.hi);
  auto other = BalancedAccuracyInterval(p.scores, p.member, p.cluster, 300, 43);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->interval.lo, ba->interval.lo);
  auto wide = BalancedAccuracyInterval(p.scores, p.member, p.cluster, 300, 42,
                                       kBalancedAccuracyResamples, 0.99);
  ASSERT_TRUE(wide.ok());
  EXPECT_LT(wide->interval.lo, ba->interval.lo);
}

// The interval from a plain, one-resample-at-a-time computation of its
// definition: the same draws, the deviations at each tie group's end in the
// same arithmetic, numpy's percentile. The implementation runs eight
// resamples per vectorized pass; it must give these bits. Scores with ties,
// with signal (a maximizer) and without (the curve's infimum).
struct Reference {
  double lo, hi;
};

Reference PlainInterval(const Pairs& p, uint32_t clusters, uint64_t seed) {
  const size_t n = p.scores.size();
  std::vector<uint32_t> order(n);
  for (uint32_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return p.scores[a] > p.scores[b]; });
  std::vector<uint32_t> dense(clusters, UINT32_MAX);
  uint32_t used = 0;
  for (uint32_t c : p.cluster) {
    if (dense[c] == UINT32_MAX) dense[c] = used++;
  }
  // J(τ) and its balanced accuracy at every tie group's end, for weights w.
  auto curve = [&](const std::vector<int64_t>& w, std::vector<int64_t>* tps,
                   std::vector<int64_t>* fps, int64_t* pos, int64_t* neg) {
    *pos = *neg = 0;
    for (size_t i = 0; i < n; ++i) (p.member[i] ? *pos : *neg) += w[dense[p.cluster[i]]];
    int64_t tp = 0, fp = 0;
    tps->clear();
    fps->clear();
    for (size_t k = 0; k < n; ++k) {
      const uint32_t i = order[k];
      (p.member[i] ? tp : fp) += w[dense[p.cluster[i]]];
      if (k + 1 == n || p.scores[order[k + 1]] != p.scores[i]) {
        tps->push_back(tp);
        fps->push_back(fp);
      }
    }
  };
  std::vector<int64_t> tps, fps, w(used, 1);
  int64_t pos, neg;
  curve(w, &tps, &fps, &pos, &neg);
  std::vector<double> j;
  double ba = 0.5;
  int64_t best = -1;
  for (size_t g = 0; g < tps.size(); ++g) {
    const double tpr = static_cast<double>(tps[g]) / pos, fpr = static_cast<double>(fps[g]) / neg;
    j.push_back(tpr - fpr);
    ba = std::max(ba, 0.5 * (tpr + 1.0 - fpr));
    if (j[g] > (best < 0 ? 0.0 : j[best])) best = static_cast<int64_t>(g);
  }
  SplitMix64 rng(seed);
  std::vector<double> above, below;
  for (uint32_t b = 0; b < kBalancedAccuracyResamples; ++b) {
    std::fill(w.begin(), w.end(), 0);
    for (uint32_t k = 0; k < used; ++k) ++w[rng.Uniform(used)];
    curve(w, &tps, &fps, &pos, &neg);
    if (pos == 0 || neg == 0) continue;
    const double pd = static_cast<double>(pos), qd = static_cast<double>(neg);
    int64_t top = 0, top_g = -1;
    double low = 0;
    for (size_t g = 0; g < tps.size(); ++g) {
      const int64_t score = tps[g] * neg - fps[g] * pos;
      if (score > top) {
        top = score;
        top_g = static_cast<int64_t>(g);
      }
      low = std::min(low, (tps[g] / pd - fps[g] / qd) - j[g]);
    }
    above.push_back(top_g >= 0 ? static_cast<double>(top) / (pd * qd) - j[top_g] : 0.0);
    below.push_back(best >= 0 ? (tps[best] / pd - fps[best] / qd) - j[best] : low);
  }
  std::sort(above.begin(), above.end());
  std::sort(below.begin(), below.end());
  auto percentile = [](const std::vector<double>& v, double q) {
    const double at = q * static_cast<double>(v.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(at)), hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (at - static_cast<double>(lo)) * (v[hi] - v[lo]);
  };
  return {std::max(0.5, ba - 0.5 * percentile(above, 0.975)),
          std::min(1.0, std::max(ba, ba - 0.5 * percentile(below, 0.025)))};
}

TEST(BalancedAccuracyIntervalTest, MatchesAPlainPassPerResampleToTheBit) {
  SplitMix64 rng(17);
  for (double shift : {0.8, 0.0}) {
    Pairs p = Draw(rng, 203, 6, shift, 0.5);
    // Ties: scores on a grid of 0.05.
    for (double& s : p.scores) s = std::round(s * 20) / 20;
    auto ba = BalancedAccuracyInterval(p.scores, p.member, p.cluster, 203, 99);
    ASSERT_TRUE(ba.ok()) << ba.status();
    const Reference plain = PlainInterval(p, 203, 99);
    EXPECT_EQ(ba->interval.lo, plain.lo) << "shift " << shift;
    EXPECT_EQ(ba->interval.hi, plain.hi) << "shift " << shift;
    // The one-resample pass, which resamples too large for the batched one
    // take: the same bits.
    auto one = internal::BalancedAccuracyIntervalWithBatchLimit(p.scores, p.member, p.cluster, 203,
                                                                99, /*batched_pairs=*/0);
    ASSERT_TRUE(one.ok()) << one.status();
    EXPECT_EQ(one->interval.lo, plain.lo) << "shift " << shift;
    EXPECT_EQ(one->interval.hi, plain.hi) << "shift " << shift;
  }
}

// One cluster holding only members: a resample drawing it alone has no
// non-member and is left out, not counted as 0.5 or 1.
TEST(BalancedAccuracyIntervalTest, LeavesOutResamplesWithOneClass) {
  const std::vector<double> s = {0.9, 0.1, 0.8, 0.3};
  const std::vector<uint8_t> m = {1, 0, 1, 0};
  const std::vector<uint32_t> c = {0, 1, 2, 3};
  auto ba = BalancedAccuracyInterval(s, m, c, 4, 7);
  ASSERT_TRUE(ba.ok());
  EXPECT_LT(ba->resamples_used, kBalancedAccuracyResamples);
  EXPECT_GT(ba->resamples_used, kBalancedAccuracyResamples / 2);
  EXPECT_EQ(ba->estimate, 1.0);
  EXPECT_EQ(ba->interval.hi, 1.0);
}

TEST(BalancedAccuracyIntervalTest, RefusesBadInput) {
  const std::vector<double> s = {0.1, 0.2};
  const std::vector<uint8_t> m = {0, 1};
  const std::vector<uint32_t> c = {0, 1};
  EXPECT_FALSE(BalancedAccuracyInterval(s, m, c, 1, 0).ok()) << "cluster 1 >= clusters";
  EXPECT_FALSE(BalancedAccuracyInterval(s, m, std::vector<uint32_t>{0, 0}, 2, 0).ok())
      << "1 cluster";
  EXPECT_FALSE(BalancedAccuracyInterval(s, std::vector<uint8_t>{1, 1}, c, 2, 0).ok());
  EXPECT_FALSE(BalancedAccuracyInterval(std::vector<double>{0.1}, m, c, 2, 0).ok()) << "lengths";
  EXPECT_FALSE(BalancedAccuracyInterval(std::vector<double>{0.1, NAN}, m, c, 2, 0).ok());
  EXPECT_FALSE(BalancedAccuracyInterval(s, m, c, 2, 0, 0).ok()) << "resamples";
  EXPECT_FALSE(BalancedAccuracyInterval(s, m, c, 2, 0, 100, 1.0).ok()) << "confidence";
}

}  // namespace
}  // namespace memaudit::scoring
