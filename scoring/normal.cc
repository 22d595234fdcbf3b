#include "scoring/normal.h"

#include <cmath>

#include "boost/math/distributions/normal.hpp"

namespace memaudit::scoring {
namespace {

constexpr double kHalfLog2Pi = 0.91893853320467274178;  // ½ log(2π)
constexpr double kInvSqrt2 = 0.70710678118654752440;
// Below this, 0.5·erfc(-z/√2) (≈ 1e-197 at z = -30) is replaced by the
// asymptotic series, long before it underflows near z ≈ -38.5.
constexpr double kSeriesBelow = -30.0;

}  // namespace

double LogNormalPdf(double z) { return -0.5 * z * z - kHalfLog2Pi; }

double LogNormalPdf(double x, double mean, double sd) {
  return LogNormalPdf((x - mean) / sd) - std::log(sd);
}

double LogNormalCdf(double z) {
  if (std::isnan(z)) return z;
  if (z >= 0.0) {
    // Φ(z) = 1 - Q(z) with Q small: log1p keeps the digits of Q.
    return std::log1p(-0.5 * std::erfc(z * kInvSqrt2));
  }
  if (z >= kSeriesBelow) return std::log(0.5 * std::erfc(-z * kInvSqrt2));
  if (std::isinf(z)) return -INFINITY;
  // Φ(z) = φ(z)/|z| · Σ_k (-1)^k (2k-1)!! / z^{2k}. At |z| >= 30 the terms fall
  // by a factor (2k+1)/z² <= 1/40 each, so 12 terms reach double precision.
  const double inv_z2 = 1.0 / (z * z);
  double term = 1.0;
  double sum = 0.0;  // Σ minus its leading 1, for log1p
  for (int k = 1; k <= 12; ++k) {
    term *= -(2.0 * k - 1.0) * inv_z2;
    sum += term;
  }
  return LogNormalPdf(z) - std::log(-z) + std::log1p(sum);
}

double NormalQuantile(double p) {
  return boost::math::quantile(boost::math::normal_distribution<double>(), p);
}

}  // namespace memaudit::scoring
