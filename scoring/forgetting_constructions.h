// The closed-form learners of "Measuring Forgetting of Memorized Training
// Examples", Section 5 and Appendix D, their fixed-rule adversaries, and the
// mean-estimation closed forms (docs/audits/forgetting.md, "Constructions").
// Plain C++ on doubles with the portable generator of common/base/seeding.h: a
// trial is a pure function of its seed.
#ifndef MEMAUDIT_SCORING_FORGETTING_CONSTRUCTIONS_H_
#define MEMAUDIT_SCORING_FORGETTING_CONSTRUCTIONS_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/types/span.h"

namespace memaudit::scoring {

// What the adversary guessed in the two arms of one trial at one point.
struct ConstructionGuesses {
  bool guessed_in_when_in = false;   // IN arm
  bool guessed_in_when_out = false;  // OUT arm
  // The two arms' final parameters are the same double (deterministic mean
  // estimation): no adversary can tell them apart.
  bool identical = false;
};

// --- k-means (Section 5.1, Appendix D.1) ---------------------------------
// Clusters c1 ~ N(-1, sigma^2), c2 ~ N(middle, sigma^2), c3 ~ N(1, sigma^2).
// D0 = m samples of c1 and of c3, plus the outlier in the IN arm; D1 = n
// samples of each cluster.
struct KMeansConstruction {
  double sigma = 0.03;
  double middle = 0.03;
  double outlier = -0.01;
  uint32_t initial_per_cluster = 10;
  uint32_t update_per_cluster = 100;
};

// The optimal two centres (lower, upper) of 1-D points: the split of the
// sorted points with the least within-cluster sum of squares (exact; ties go
// to the first split). At least two points.
std::pair<double, double> OptimalTwoMeans(std::vector<double> points);

// Lloyd's iterations from `centres` until no point changes cluster (at most
// 1000): each point joins the nearer centre (ties: the lower), each centre
// moves to its points' mean (an empty cluster keeps its centre).
std::pair<double, double> LloydTwoMeans(absl::Span<const double> points,
                                        std::pair<double, double> centres);

// One trial: stage 1 fits D0 exactly, stage 2 updates on D0 u D1 by Lloyd
// from the stage-1 centres; the adversary guesses IN when the final decision
// boundary lies right of c2's centre (c2 merged with c1). Each arm draws its
// own samples from `seed`.
ConstructionGuesses KMeansTrial(const KMeansConstruction& c, uint64_t seed);

// --- Mean estimation (Sections 5.2-5.3, Appendices D.2-D.3) --------------
// theta_0 = 0 is the mean of the data N(0, sigma^2). The injection step
// moves theta toward +v (IN) or -v (OUT) by per-example gradient descent on
// (theta - x)^2 with step size eta: theta <- theta - 2 eta (theta - x); then
// k steps on fresh samples.
struct MeanEstimationConstruction {
  double sigma = 1;
  double injected = 1;  // v
  double eta = 0.01;
  // true: Algorithm 3 (both arms see the same samples in an order the
  // adversary knows; it replays both arms and picks the nearer); false:
  // Algorithm 4 (each arm draws its own samples; the adversary guesses IN
  // when theta_k lies on +v's side of the two arms' mean midpoint, the
  // Bayes-optimal rule).
  bool deterministic = false;
};

// The guesses at each of `points` (ascending steps since the injection).
std::vector<ConstructionGuesses> MeanEstimationTrial(const MeanEstimationConstruction& c,
                                                     absl::Span<const uint64_t> points,
                                                     uint64_t seed);

// Algorithm 4 after k steps: the arms' parameters are N(+-Delta_k / 2,
// sigma_k^2) with Delta_k = 4 eta |v| (1 - 2 eta)^k and sigma_k^2 =
// eta (1 - (1 - 2 eta)^(2k)) sigma^2 / (1 - eta).
struct MeanEstimationGap {
  double delta = 0;
  double sd = 0;
};
MeanEstimationGap MeanEstimationArms(const MeanEstimationConstruction& c, uint64_t k);
// The best accuracy of any adversary: Phi(Delta_k / (2 sigma_k)); 1 at k = 0.
double MeanEstimationOptimalAccuracy(const MeanEstimationConstruction& c, uint64_t k);
// KL divergence of the arms, Delta_k^2 / (2 sigma_k^2) (the Renyi
// divergence of order 1), and Theorem 1's bound 2 v^2 / (k sigma^2); both
// infinite at k = 0.
double MeanEstimationKl(const MeanEstimationConstruction& c, uint64_t k);
double MeanEstimationKlBound(const MeanEstimationConstruction& c, uint64_t k);

}  // namespace memaudit::scoring

#endif  // MEMAUDIT_SCORING_FORGETTING_CONSTRUCTIONS_H_
