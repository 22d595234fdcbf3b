#include "scoring/forgetting_constructions.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/base/seeding.h"

namespace memaudit::scoring {
namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr int kMaxLloydIterations = 1000;

// Normal draws from the portable generator (Box-Muller, cosine branch): the
// standard distributions are implementation-defined.
class Gaussian {
 public:
  explicit Gaussian(uint64_t seed) : rng_(seed) {}
  double Draw(double mean, double sd) {
    const double u1 = 1.0 - rng_.UniformDouble();  // (0, 1]: log is finite
    const double u2 = rng_.UniformDouble();
    return mean + sd * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * kPi * u2);
  }

 private:
  SplitMix64 rng_;
};

void AppendCluster(Gaussian& g, double centre, double sd, uint32_t count,
                   std::vector<double>* out) {
  for (uint32_t i = 0; i < count; ++i) out->push_back(g.Draw(centre, sd));
}

// One arm's final decision boundary (the midpoint of the two centres).
double KMeansBoundary(const KMeansConstruction& c, bool outlier_in, uint64_t seed) {
  Gaussian g(seed);
  std::vector<double> points;
  AppendCluster(g, -1.0, c.sigma, c.initial_per_cluster, &points);
  AppendCluster(g, 1.0, c.sigma, c.initial_per_cluster, &points);
  if (outlier_in) points.push_back(c.outlier);
  const std::pair<double, double> fitted = OptimalTwoMeans(points);
  for (double centre : {-1.0, c.middle, 1.0}) {
    AppendCluster(g, centre, c.sigma, c.update_per_cluster, &points);
  }
  const auto [low, high] = LloydTwoMeans(points, fitted);
  return (low + high) / 2;
}

double Step(double theta, double x, double eta) { return theta - 2 * eta * (theta - x); }

}  // namespace

std::pair<double, double> OptimalTwoMeans(std::vector<double> points) {
  std::sort(points.begin(), points.end());
  const size_t n = points.size();
  // Prefix sums give each split's within-cluster sum of squares in O(1):
  // sum (x - mean)^2 = sum x^2 - (sum x)^2 / count.
  std::vector<double> sum(n + 1, 0), squares(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    sum[i + 1] = sum[i] + points[i];
    squares[i + 1] = squares[i] + points[i] * points[i];
  }
  const auto sse = [&](size_t from, size_t to) {
    const double s = sum[to] - sum[from];
    return squares[to] - squares[from] - s * s / static_cast<double>(to - from);
  };
  size_t best = 1;
  double best_cost = std::numeric_limits<double>::infinity();
  for (size_t split = 1; split < n; ++split) {
    const double cost = sse(0, split) + sse(split, n);
    if (cost < best_cost) {
      best_cost = cost;
      best = split;
    }
  }
  return {sum[best] / static_cast<double>(best),
          (sum[n] - sum[best]) / static_cast<double>(n - best)};
}

std::pair<double, double> LloydTwoMeans(absl::Span<const double> points,
                                        std::pair<double, double> centres) {
  std::vector<uint8_t> upper(points.size(), 2);  // 2 = not yet assigned
  for (int iteration = 0; iteration < kMaxLloydIterations; ++iteration) {
    bool changed = false;
    double sums[2] = {0, 0};
    size_t counts[2] = {0, 0};
    for (size_t i = 0; i < points.size(); ++i) {
      const uint8_t side =
          std::abs(points[i] - centres.second) < std::abs(points[i] - centres.first) ? 1 : 0;
      changed |= side != upper[i];
      upper[i] = side;
      sums[side] += points[i];
      ++counts[side];
    }
    if (!changed) break;
    if (counts[0] > 0) centres.first = sums[0] / static_cast<double>(counts[0]);
    if (counts[1] > 0) centres.second = sums[1] / static_cast<double>(counts[1]);
  }
  return centres;
}

ConstructionGuesses KMeansTrial(const KMeansConstruction& c, uint64_t seed) {
  ConstructionGuesses out;
  out.guessed_in_when_in = KMeansBoundary(c, true, DeriveSeed(seed, "kmeans/in", 0)) > c.middle;
  out.guessed_in_when_out = KMeansBoundary(c, false, DeriveSeed(seed, "kmeans/out", 0)) > c.middle;
  return out;
}

std::vector<ConstructionGuesses> MeanEstimationTrial(const MeanEstimationConstruction& c,
                                                     absl::Span<const uint64_t> points,
                                                     uint64_t seed) {
  // theta_0 = 0, then the injection step toward +v or -v.
  double in = Step(0, c.injected, c.eta), out = Step(0, -c.injected, c.eta);
  // The deterministic adversary replays both arms from the known samples and
  // order; the replays reproduce the arms bit for bit, so they are `in` and
  // `out` themselves.
  Gaussian draws_in(DeriveSeed(seed, "mean_estimation/in", 0));
  Gaussian draws_out(DeriveSeed(seed, "mean_estimation/out", 0));
  std::vector<ConstructionGuesses> guesses;
  uint64_t k = 0;
  for (uint64_t point : points) {
    for (; k < point; ++k) {
      const double x_in = draws_in.Draw(0, c.sigma);
      in = Step(in, x_in, c.eta);
      if (c.deterministic) {
        out = Step(out, x_in, c.eta);
      } else {
        out = Step(out, draws_out.Draw(0, c.sigma), c.eta);
      }
    }
    ConstructionGuesses g;
    if (c.deterministic) {
      // The nearer replay; a tie (the arms merged) reads as OUT.
      const auto guess = [&](double theta) { return std::abs(theta - in) < std::abs(theta - out); };
      g.guessed_in_when_in = guess(in);
      g.guessed_in_when_out = guess(out);
      g.identical = in == out;
    } else {
      // Both arms' means are symmetric about 0 (theta_0 = 0 = the data
      // mean): +v's side is the sign of v.
      const auto guess = [&](double theta) { return c.injected > 0 ? theta > 0 : theta < 0; };
      g.guessed_in_when_in = guess(in);
      g.guessed_in_when_out = guess(out);
    }
    guesses.push_back(g);
  }
  return guesses;
}

MeanEstimationGap MeanEstimationArms(const MeanEstimationConstruction& c, uint64_t k) {
  const double contraction = std::pow(1 - 2 * c.eta, static_cast<double>(k));
  MeanEstimationGap gap;
  gap.delta = 4 * c.eta * std::abs(c.injected) * contraction;
  gap.sd = std::sqrt(c.eta * (1 - contraction * contraction) * c.sigma * c.sigma / (1 - c.eta));
  return gap;
}

double MeanEstimationOptimalAccuracy(const MeanEstimationConstruction& c, uint64_t k) {
  const MeanEstimationGap gap = MeanEstimationArms(c, k);
  if (gap.sd == 0) return 1;
  return 0.5 * std::erfc(-gap.delta / (2 * gap.sd) / std::sqrt(2.0));
}

double MeanEstimationKl(const MeanEstimationConstruction& c, uint64_t k) {
  const MeanEstimationGap gap = MeanEstimationArms(c, k);
  if (gap.sd == 0) return std::numeric_limits<double>::infinity();
  return gap.delta * gap.delta / (2 * gap.sd * gap.sd);
}

double MeanEstimationKlBound(const MeanEstimationConstruction& c, uint64_t k) {
  if (k == 0) return std::numeric_limits<double>::infinity();
  return 2 * c.injected * c.injected / (static_cast<double>(k) * c.sigma * c.sigma);
}

}  // namespace memaudit::scoring
