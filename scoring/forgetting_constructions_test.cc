#include "scoring/forgetting_constructions.h"

#include <cmath>
#include <vector>

#include "common/base/seeding.h"
#include "gmock/gmock.h"

namespace memaudit::scoring {
namespace {

using ::testing::DoubleNear;
using ::testing::Pair;

constexpr uint32_t kTrials = 200;

struct Tally {
  uint32_t tp = 0, fp = 0, identical = 0;
  double Accuracy() const { return (tp + (kTrials - fp)) / (2.0 * kTrials); }
  double Precision() const { return tp / static_cast<double>(tp + fp); }
  void Add(const ConstructionGuesses& g) {
    tp += g.guessed_in_when_in;
    fp += g.guessed_in_when_out;
    identical += g.identical;
  }
};

std::vector<Tally> MeanEstimationTallies(const MeanEstimationConstruction& c,
                                         const std::vector<uint64_t>& points) {
  std::vector<Tally> tallies(points.size());
  for (uint32_t t = 0; t < kTrials; ++t) {
    const auto guesses = MeanEstimationTrial(c, points, DeriveSeed(11, "trial", t));
    for (size_t p = 0; p < points.size(); ++p) tallies[p].Add(guesses[p]);
  }
  return tallies;
}

TEST(OptimalTwoMeansTest, PicksTheSplitWithTheLeastSumOfSquares) {
  // Splits of {0, 1, 10, 11, 12}: after 1 costs 0 + 2 (mean 11); any other
  // split costs more.
  EXPECT_THAT(OptimalTwoMeans({12, 0, 11, 1, 10}), Pair(0.5, 11.0));
  // An outlier between two tight groups joins the nearer group's side only
  // when that is cheaper: {-1, -1, -0.01 | 1, 1}.
  const auto [low, high] = OptimalTwoMeans({-1, -1, -0.01, 1, 1});
  EXPECT_DOUBLE_EQ(low, -2.01 / 3);
  EXPECT_DOUBLE_EQ(high, 1);
}

TEST(LloydTwoMeansTest, IteratesUntilNoPointChangesCluster) {
  // From (0, 2): {0} | {2, 10, 12} -> centres (0, 8); then {0, 2} | {10, 12}
  // -> (1, 11), which is stable.
  const std::vector<double> points = {0, 2, 10, 12};
  EXPECT_THAT(LloydTwoMeans(points, {0, 2}), Pair(1.0, 11.0));
}

TEST(KMeansTrialTest, TheOutlierIsDetectedWithPerfectPrecisionOver200Trials) {
  // The paper's setting: 97% accuracy, perfect precision. When x is OUT, c2
  // never joins c1: no false positive is possible.
  const KMeansConstruction c;
  Tally tally;
  for (uint32_t t = 0; t < kTrials; ++t) tally.Add(KMeansTrial(c, DeriveSeed(3, "trial", t)));
  EXPECT_EQ(tally.fp, 0u);
  EXPECT_GE(tally.Accuracy(), 0.9);
  EXPECT_DOUBLE_EQ(tally.Precision(), 1.0);
}

TEST(KMeansTrialTest, WithoutTheGapBetweenClustersTheOutlierIsNotRemembered) {
  // c2 centred on the outlier's side of zero: both arms merge c2 with c1
  // alike, so the guess says nothing about x.
  KMeansConstruction c;
  c.middle = -0.2;
  Tally tally;
  for (uint32_t t = 0; t < kTrials; ++t) tally.Add(KMeansTrial(c, DeriveSeed(3, "trial", t)));
  EXPECT_NEAR(tally.Accuracy(), 0.5, 0.05);
}

TEST(MeanEstimationTest, DeterministicOrderNeverForgets) {
  MeanEstimationConstruction c;
  c.deterministic = true;
  const std::vector<uint64_t> points = {0, 1, 10, 100, 1000};
  for (const Tally& t : MeanEstimationTallies(c, points)) {
    EXPECT_EQ(t.tp, kTrials);
    EXPECT_EQ(t.fp, 0u);
    EXPECT_EQ(t.identical, 0u);
  }
}

TEST(MeanEstimationTest, RoundingMergesTheDeterministicArmsWhenTheGapFallsBelowAnUlp) {
  // eta = 0.05 contracts the gap by 0.9 a step: below an ulp of theta long
  // before step 1000, so the arms become the same double and the replaying
  // adversary is left guessing (OUT, by its tie rule).
  MeanEstimationConstruction c;
  c.deterministic = true;
  c.eta = 0.05;
  const std::vector<Tally> t = MeanEstimationTallies(c, {10, 1000});
  EXPECT_EQ(t[0].identical, 0u);
  EXPECT_EQ(t[0].tp, kTrials);
  EXPECT_EQ(t[1].identical, kTrials);
  EXPECT_EQ(t[1].tp, 0u);
  EXPECT_DOUBLE_EQ(t[1].Accuracy(), 0.5);
}

TEST(MeanEstimationTest, RandomSamplingForgetsAsTheClosedFormSays) {
  const MeanEstimationConstruction c;
  const std::vector<uint64_t> points = {0, 1, 5, 20, 100, 1000};
  const std::vector<Tally> tallies = MeanEstimationTallies(c, points);
  EXPECT_EQ(tallies[0].Accuracy(), 1.0);
  for (size_t p = 0; p < points.size(); ++p) {
    const double optimal = MeanEstimationOptimalAccuracy(c, points[p]);
    // Four standard errors of 2 x 200 guesses.
    const double se = std::sqrt(optimal * (1 - optimal) / (2.0 * kTrials));
    EXPECT_NEAR(tallies[p].Accuracy(), optimal, 4 * se + 1e-12) << "k = " << points[p];
  }
  EXPECT_LE(tallies.back().Accuracy(), 0.6);
}

TEST(MeanEstimationTest, ClosedFormsMatchHandValues) {
  // eta = 0.01, v = sigma = 1, k = 1: Delta = 0.04 x 0.98 = 0.0392,
  // sigma_1^2 = 0.01 (1 - 0.98^2) / 0.99 = 0.0004, so Delta / (2 sigma_1) =
  // 0.98 and Phi(0.98) = 0.836457; KL = 0.0392^2 / 0.0008 = 1.9208 <= 2 / 1.
  const MeanEstimationConstruction c;
  EXPECT_THAT(MeanEstimationArms(c, 1).delta, DoubleNear(0.0392, 1e-15));
  EXPECT_THAT(MeanEstimationArms(c, 1).sd, DoubleNear(0.02, 1e-15));
  EXPECT_THAT(MeanEstimationOptimalAccuracy(c, 1), DoubleNear(0.836457, 1e-6));
  EXPECT_THAT(MeanEstimationKl(c, 1), DoubleNear(1.9208, 1e-12));
  EXPECT_DOUBLE_EQ(MeanEstimationKlBound(c, 1), 2);
  EXPECT_EQ(MeanEstimationOptimalAccuracy(c, 0), 1);
  EXPECT_TRUE(std::isinf(MeanEstimationKl(c, 0)));
  // Theorem 1 at every k, and for a steeper step size.
  for (const double eta : {0.01, 0.2, 0.45}) {
    MeanEstimationConstruction s = c;
    s.eta = eta;
    for (uint64_t k = 1; k <= 200; ++k) {
      EXPECT_LE(MeanEstimationKl(s, k), MeanEstimationKlBound(s, k)) << eta << " " << k;
    }
  }
}

}  // namespace
}  // namespace memaudit::scoring
