#include "scoring/auc_interval.h"

#include <cmath>
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

struct Pairs {
  std::vector<double> scores;
  std::vector<uint8_t> member;
  std::vector<uint32_t> cluster;
};

// `clusters` examples, each scored `per_cluster` times: score = u_example +
// shift * member + noise, u ~ N(0, cluster_sd^2). `mixed`: half of each
// example's pairs are members (as in a membership audit); else every pair
// of an example has its class, alternating by example.
Pairs Draw(SplitMix64& rng, uint32_t clusters, uint32_t per_cluster, double shift,
           double cluster_sd, bool mixed = true) {
  Pairs p;
  for (uint32_t c = 0; c < clusters; ++c) {
    const double u = cluster_sd * Normal(rng);
    for (uint32_t k = 0; k < per_cluster; ++k) {
      const bool member = (mixed && per_cluster > 1 ? k : c) % 2 == 0;
      p.scores.push_back(u + (member ? shift : 0.0) + Normal(rng));
      p.member.push_back(member);
      p.cluster.push_back(c);
    }
  }
  return p;
}

double Phi(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

// The pooled AUC's expectation: a member and a non-member of one example
// (1 in `clusters` of all member/non-member pairs) differ by shift + noise,
// of two examples by shift + noise + u - u'.
double TrueAuc(double shift, double cluster_sd, uint32_t clusters, uint32_t per_cluster,
               bool mixed) {
  const double across = Phi(shift / std::sqrt(2.0 * cluster_sd * cluster_sd + 2.0));
  if (per_cluster == 1 || !mixed) return across;
  const double within = 1.0 / clusters;
  return within * Phi(shift / std::sqrt(2.0)) + (1 - within) * across;
}

// Of `experiments` fresh draws, the share whose 95% interval holds the true
// AUC; `by_pair` treats every pair as its own cluster.
double Coverage(int experiments, uint32_t clusters, uint32_t per_cluster, double cluster_sd,
                bool by_pair, bool mixed = true) {
  constexpr double kShift = 1.0;
  const double truth = TrueAuc(kShift, cluster_sd, clusters, per_cluster, mixed);
  SplitMix64 rng(DeriveSeed(7, "coverage", per_cluster));
  int covered = 0;
  for (int e = 0; e < experiments; ++e) {
    Pairs p = Draw(rng, clusters, per_cluster, kShift, cluster_sd, mixed);
    uint32_t groups = clusters;
    if (by_pair) {
      for (uint32_t i = 0; i < p.cluster.size(); ++i) p.cluster[i] = i;
      groups = static_cast<uint32_t>(p.cluster.size());
    }
    auto auc = ClusteredAucInterval(p.scores, p.member, p.cluster, groups);
    EXPECT_TRUE(auc.ok()) << auc.status();
    if (auc.ok() && auc->interval.lo <= truth && truth <= auc->interval.hi) ++covered;
  }
  return static_cast<double>(covered) / experiments;
}

// Independent pairs with a known AUC, Phi(1 / sqrt 2) = 0.760: the 95%
// interval holds it in about 95% of 1,000 experiments (sd of the share
// 0.007).
TEST(ClusteredAucIntervalTest, CoversAKnownAucAtItsConfidence) {
  const double coverage = Coverage(1000, 300, 1, 0.0, /*by_pair=*/false);
  EXPECT_GE(coverage, 0.925);
  EXPECT_LE(coverage, 0.975);
}

// Pairs of one example share its effect. Treating them as independent
// (DeLong's variance) gets the width wrong either way: too narrow when an
// example's pairs share a class, too wide when each example is a member in
// half of its pairs (a membership audit's design: the shared effect then
// cancels in part, S11 < 0). Knowing the clusters, the coverage holds in
// both.
TEST(ClusteredAucIntervalTest, ClusteredPairsAreCoveredOnlyWhenTheClustersAreKnown) {
  const double mixed = Coverage(500, 60, 8, 1.5, /*by_pair=*/false);
  const double mixed_as_pairs = Coverage(500, 60, 8, 1.5, /*by_pair=*/true);
  EXPECT_GE(mixed, 0.91);
  EXPECT_LE(mixed, 0.985);
  EXPECT_GT(mixed_as_pairs, 0.985) << "too wide";
  const double one_class = Coverage(500, 60, 8, 1.5, /*by_pair=*/false, /*mixed=*/false);
  const double one_class_as_pairs = Coverage(500, 60, 8, 1.5, /*by_pair=*/true, /*mixed=*/false);
  EXPECT_GE(one_class, 0.90);
  EXPECT_LE(one_class, 0.985);
  EXPECT_LT(one_class_as_pairs, 0.80) << "too narrow";
}

// Members 0.9, 0.6; non-members 0.7, 0.2; one pair per cluster (I = 4).
// AUC = 3/4. Placement values: 1 and 1/2 (members), 1/2 and 1 (non-members).
// S10 = I/((I-1) M) * ((1 - 3/4)^2 + (1/2 - 3/4)^2) = (4/6)(1/8) = 1/12,
// S01 = 1/12 alike, S11 = 0 (no cluster holds both classes):
// variance = S10/M + S01/N = 1/24 + 1/24 = 1/12.
TEST(ClusteredAucIntervalTest, MatchesAHandComputation) {
  const std::vector<double> s = {0.9, 0.6, 0.7, 0.2};
  const std::vector<uint8_t> m = {1, 1, 0, 0};
  const std::vector<uint32_t> c = {0, 1, 2, 3};
  auto auc = ClusteredAucInterval(s, m, c, 4);
  ASSERT_TRUE(auc.ok()) << auc.status();
  EXPECT_DOUBLE_EQ(auc->auc, 0.75);
  EXPECT_NEAR(auc->variance, 1.0 / 12, 1e-15);
  EXPECT_NEAR(auc->interval.lo, 0.75 - 1.959963984540054 * std::sqrt(1.0 / 12), 1e-12);
  EXPECT_EQ(auc->interval.hi, 1.0) << "cut to [0, 1]";
  // Two clusters, each one member and one non-member: S11 counts too.
  // Cluster 0 = {0.9 m, 0.7 n}, cluster 1 = {0.6 m, 0.2 n}: per cluster
  // V10 - m*AUC = 1/4, -1/4 and V01 - n*AUC = -1/4, 1/4, so
  // S10 = S01 = 2/(1*2) * 1/8 = 1/8, S11 = 2 * (-1/16 - 1/16) = -1/4;
  // variance = 1/16 + 1/16 - 2/4/4 = 0.
  auto paired = ClusteredAucInterval(s, m, std::vector<uint32_t>{0, 1, 0, 1}, 2);
  ASSERT_TRUE(paired.ok());
  EXPECT_NEAR(paired->variance, 0.0, 1e-15);
}

TEST(ClusteredAucIntervalTest, HoldsThePointAucAndEqualsAuc) {
  SplitMix64 rng(3);
  const Pairs p = Draw(rng, 100, 4, 1.0, 0.5);
  auto auc = Auc(p.scores, p.member);
  auto clustered = ClusteredAucInterval(p.scores, p.member, p.cluster, 100);
  ASSERT_TRUE(auc.ok() && clustered.ok());
  EXPECT_NEAR(clustered->auc, *auc, 1e-12);
  EXPECT_LT(clustered->interval.lo, *auc);
  EXPECT_GT(clustered->interval.hi, *auc);
  auto wide = ClusteredAucInterval(p.scores, p.member, p.cluster, 100, 0.99);
  ASSERT_TRUE(wide.ok());
  EXPECT_LT(wide->interval.lo, clustered->interval.lo);
}

// Every member above every non-member, or every score tied: no variance.
TEST(ClusteredAucIntervalTest, SeparatedAndTiedScoresGiveAPointInterval) {
  const std::vector<uint8_t> member = {0, 0, 0, 0, 1, 1, 1, 1};
  const std::vector<uint32_t> cluster = {0, 1, 2, 3, 0, 1, 2, 3};
  auto one =
      ClusteredAucInterval(std::vector<double>{0, 1, 2, 3, 10, 11, 12, 13}, member, cluster, 4);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->interval.lo, 1.0);
  EXPECT_EQ(one->interval.hi, 1.0);
  auto half = ClusteredAucInterval(std::vector<double>(8, 0.5), member, cluster, 4);
  ASSERT_TRUE(half.ok());
  EXPECT_EQ(half->interval.lo, 0.5);
  EXPECT_EQ(half->interval.hi, 0.5);
}

TEST(ClusteredAucIntervalTest, RefusesBadInput) {
  const std::vector<double> s = {0.1, 0.2};
  const std::vector<uint8_t> m = {0, 1};
  const std::vector<uint32_t> c = {0, 1};
  EXPECT_FALSE(ClusteredAucInterval(s, m, c, 1).ok()) << "cluster 1 >= clusters";
  EXPECT_FALSE(ClusteredAucInterval(s, m, std::vector<uint32_t>{0, 0}, 2).ok()) << "1 cluster";
  EXPECT_FALSE(ClusteredAucInterval(s, std::vector<uint8_t>{1, 1}, c, 2).ok()) << "one class";
  EXPECT_FALSE(ClusteredAucInterval(std::vector<double>{0.1}, m, c, 2).ok()) << "lengths";
  EXPECT_FALSE(ClusteredAucInterval(std::vector<double>{0.1, NAN}, m, c, 2).ok());
  EXPECT_FALSE(ClusteredAucInterval(s, m, c, 2, 1.0).ok()) << "confidence";
}

}  // namespace
}  // namespace memaudit::scoring
