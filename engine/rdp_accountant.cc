#include "engine/rdp_accountant.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace memaudit::engine {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

double LogAdd(double x, double y) {
  const double a = std::min(x, y), b = std::max(x, y);
  if (a == kNegInf) return b;
  return std::log1p(std::exp(a - b)) + b;
}

// log(exp(x) - exp(y)) for x >= y.
double LogSub(double x, double y) {
  if (y == kNegInf) return x;
  if (x <= y) return kNegInf;
  return std::log(std::expm1(x - y)) + y;
}

double LogBinom(double n, double k) {
  return std::lgamma(n + 1) - std::lgamma(k + 1) - std::lgamma(n - k + 1);
}

// log(erfc(x)), stable for large x where erfc underflows.
double LogErfc(double x) {
  if (x < 20) return std::log(std::erfc(x));
  // Asymptotic series of erfc for large x.
  const double r = 1.0 / (x * x);
  return -std::log(M_PI) / 2 - std::log(x) - x * x - r + 2.5 * r * r - 37.0 / 3 * r * r * r;
}

// log A_alpha for integer alpha: a binomial expansion (Mironov et al. 2019, Sec. 3.3).
double LogAInt(double q, double sigma, int64_t alpha) {
  double log_a = kNegInf;
  for (int64_t i = 0; i <= alpha; ++i) {
    const double log_coef = LogBinom(static_cast<double>(alpha), static_cast<double>(i)) +
                            i * std::log(q) + (alpha - i) * std::log(1 - q);
    log_a = LogAdd(log_a, log_coef + (static_cast<double>(i) * i - i) / (2 * sigma * sigma));
  }
  return log_a;
}

// log A_alpha for fractional alpha: the two-sided series of Sec. 3.3, summed
// until terms fall below e^-30.
double LogAFrac(double q, double sigma, double alpha) {
  double log_a0 = kNegInf, log_a1 = kNegInf;
  const double z0 = sigma * sigma * std::log(1 / q - 1) + 0.5;
  for (int64_t i = 0;; ++i) {
    // binom(alpha, i) for real alpha: sign from the falling factorial.
    double coef = 1;
    for (int64_t k = 0; k < i; ++k) coef *= (alpha - k) / (k + 1);
    const double log_coef = std::log(std::abs(coef));
    const double j = alpha - i;
    const double log_t0 = log_coef + i * std::log(q) + j * std::log(1 - q);
    const double log_t1 = log_coef + j * std::log(q) + i * std::log(1 - q);
    const double log_e0 = std::log(0.5) + LogErfc((i - z0) / (std::sqrt(2.0) * sigma));
    const double log_e1 = std::log(0.5) + LogErfc((z0 - j) / (std::sqrt(2.0) * sigma));
    const double log_s0 = log_t0 + (static_cast<double>(i) * i - i) / (2 * sigma * sigma) + log_e0;
    const double log_s1 = log_t1 + (j * j - j) / (2 * sigma * sigma) + log_e1;
    if (coef > 0) {
      log_a0 = LogAdd(log_a0, log_s0);
      log_a1 = LogAdd(log_a1, log_s1);
    } else {
      log_a0 = LogSub(log_a0, log_s0);
      log_a1 = LogSub(log_a1, log_s1);
    }
    if (std::max(log_s0, log_s1) < -30 || i > 100000) break;
  }
  return LogAdd(log_a0, log_a1);
}

}  // namespace

double SampledGaussianRdp(double q, double sigma, double alpha) {
  if (q == 0) return 0;
  if (q == 1) return alpha / (2 * sigma * sigma);
  if (std::isinf(alpha)) return std::numeric_limits<double>::infinity();
  const double log_a = alpha == std::floor(alpha) ? LogAInt(q, sigma, static_cast<int64_t>(alpha))
                                                  : LogAFrac(q, sigma, alpha);
  return log_a / (alpha - 1);
}

std::vector<double> DefaultRdpOrders() {
  std::vector<double> orders;
  for (int x = 1; x < 100; ++x) orders.push_back(1 + x / 10.0);
  for (int a = 12; a < 64; ++a) orders.push_back(a);
  return orders;
}

double RdpToEpsilon(double rdp, double alpha, double delta, RdpConversion conversion) {
  if (conversion == RdpConversion::kClassic) return rdp - std::log(delta) / (alpha - 1);
  if (delta * delta + std::expm1(-rdp) >= 0) return 0;
  return rdp + std::log1p(-1 / alpha) - std::log(delta * alpha) / (alpha - 1);
}

absl::StatusOr<DpEpsilon> ComputeDpSgdEpsilon(double q, double sigma, uint64_t steps, double delta,
                                              const std::vector<double>& orders,
                                              RdpConversion conversion) {
  if (!(q >= 0 && q <= 1)) return absl::InvalidArgumentError("q: must be in [0, 1]");
  if (!(sigma > 0)) return absl::InvalidArgumentError("sigma: must be > 0");
  if (!(delta > 0 && delta < 1)) return absl::InvalidArgumentError("delta: must be in (0, 1)");
  if (orders.empty()) return absl::InvalidArgumentError("orders: empty");
  DpEpsilon best{std::numeric_limits<double>::infinity(), 0};
  for (double a : orders) {
    if (!(a > 1)) return absl::InvalidArgumentError(absl::StrCat("orders: ", a, " is not > 1"));
    const double rdp = SampledGaussianRdp(q, sigma, a) * static_cast<double>(steps);
    const double eps = RdpToEpsilon(rdp, a, delta, conversion);
    if (eps < best.epsilon) best = {eps, a};
  }
  best.epsilon = std::max(0.0, best.epsilon);
  return best;
}

absl::StatusOr<DpEpsilon> DpSgdEpsilonForEpochs(uint64_t n, uint64_t batch_size, double sigma,
                                                double epochs, double delta,
                                                RdpConversion conversion) {
  if (n == 0 || batch_size == 0 || batch_size > n) {
    return absl::InvalidArgumentError("batch_size: must be in [1, n]");
  }
  const double q = static_cast<double>(batch_size) / static_cast<double>(n);
  const uint64_t steps = static_cast<uint64_t>(std::ceil(epochs * n / batch_size));
  return ComputeDpSgdEpsilon(q, sigma, steps, delta, DefaultRdpOrders(), conversion);
}

absl::StatusOr<double> NoiseMultiplierForEpsilon(
    const std::function<double(double sigma)>& epsilon_of_sigma, double target) {
  if (!(target > 0) || !std::isfinite(target)) {
    return absl::InvalidArgumentError(
        absl::StrCat("target_epsilon: must be > 0 (got ", target, ")"));
  }
  double lo = 0.01, hi = 1e4;
  if (epsilon_of_sigma(hi) > target) {
    return absl::InvalidArgumentError(absl::StrCat(
        "target_epsilon: ", target, " is out of reach even with noise multiplier ", hi));
  }
  if (epsilon_of_sigma(lo) <= target) return lo;
  // Invariant: eps(lo) > target >= eps(hi).
  while (hi / lo > 1 + 1e-6) {
    const double mid = std::sqrt(lo * hi);
    (epsilon_of_sigma(mid) <= target ? hi : lo) = mid;
  }
  return hi;
}

double DpEpsilonOfPhases(const std::vector<std::pair<uint64_t, uint64_t>>& phases,
                         uint32_t batch_size, double noise_multiplier, double delta) {
  double best = std::numeric_limits<double>::infinity();
  for (double a : DefaultRdpOrders()) {
    double rdp = 0;
    for (const auto& [examples, steps] : phases) {
      if (examples == 0 || steps == 0) continue;
      const double q = std::min(1.0, static_cast<double>(batch_size) / examples);
      rdp += SampledGaussianRdp(q, noise_multiplier, a) * static_cast<double>(steps);
    }
    best = std::min(best, RdpToEpsilon(rdp, a, delta, RdpConversion::kImproved));
  }
  return std::max(0.0, best);
}

}  // namespace memaudit::engine
