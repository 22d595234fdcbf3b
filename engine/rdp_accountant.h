// Renyi-DP accountant for the sampled Gaussian mechanism (Mironov, Talwar,
// Zhang 2019), the analysis behind DP-SGD's epsilon. Pure C++, no LibTorch.
#ifndef MEMAUDIT_ENGINE_RDP_ACCOUNTANT_H_
#define MEMAUDIT_ENGINE_RDP_ACCOUNTANT_H_

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace memaudit::engine {

// RDP of one step of the sampled Gaussian mechanism with sampling rate q and
// noise multiplier sigma, at order alpha > 1 (integer or fractional).
double SampledGaussianRdp(double q, double sigma, double alpha);

// TF-Privacy's default orders: 1.1, 1.2, ..., 10.9, then 12..63.
std::vector<double> DefaultRdpOrders();

enum class RdpConversion {
  // eps = rdp - log(delta) / (alpha - 1) (Mironov 2017), as TF-Privacy's
  // compute_dp_sgd_privacy printed when the published tutorial values were made.
  kClassic,
  // eps = rdp + log1p(-1/alpha) - log(delta * alpha) / (alpha - 1)
  // (Canonne, Kamath, Steinke 2020 / Balle et al. 2020), never larger.
  kImproved,
};

// (epsilon, delta)-DP of a mechanism with RDP `rdp` at order `alpha` > 1:
// the one conversion every epsilon in memaudit goes through.
double RdpToEpsilon(double rdp, double alpha, double delta, RdpConversion conversion);

struct DpEpsilon {
  double epsilon = 0;
  double order = 0;  // the optimal RDP order
};

// epsilon for `steps` compositions at (q, sigma), minimised over `orders`.
absl::StatusOr<DpEpsilon> ComputeDpSgdEpsilon(double q, double sigma, uint64_t steps, double delta,
                                              const std::vector<double>& orders,
                                              RdpConversion conversion);

// Convenience in TF-Privacy's compute_dp_sgd_privacy terms: q = batch / n and
// steps = ceil(epochs * n / batch).
absl::StatusOr<DpEpsilon> DpSgdEpsilonForEpochs(uint64_t n, uint64_t batch_size, double sigma,
                                                double epochs, double delta,
                                                RdpConversion conversion);

// The smallest noise multiplier sigma whose `epsilon_of_sigma(sigma)` is at
// most `target` (epsilon falls as sigma grows), found by bisection on
// log(sigma) over [0.01, 10^4] to a relative precision of 1e-6.
// InvalidArgument for a target <= 0 or one even sigma = 10^4 cannot reach.
absl::StatusOr<double> NoiseMultiplierForEpsilon(
    const std::function<double(double sigma)>& epsilon_of_sigma, double target);

// DP-SGD epsilon (RDP accountant, Balle et al. conversion) of training in
// phases of (examples, steps) with Poisson-rate q = batch / examples, at
// `delta`. One phase: a Scratch model; one phase per slice: a SISA shard.
double DpEpsilonOfPhases(const std::vector<std::pair<uint64_t, uint64_t>>& phases,
                         uint32_t batch_size, double noise_multiplier, double delta);

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_RDP_ACCOUNTANT_H_
