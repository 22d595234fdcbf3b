#include "scoring/skew_normal.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "boost/math/distributions/skew_normal.hpp"
#include "boost/math/quadrature/gauss_kronrod.hpp"
#include "common/base/status_macros.h"
#include "scoring/nelder_mead.h"
#include "scoring/normal.h"
#include "scoring/validation.h"

namespace memaudit::scoring {
namespace {

constexpr double kLog2 = 0.69314718055994530942;
constexpr double kPi = 3.14159265358979323846;
// Below this CDF value the Owen's-T difference starts to lose digits (for
// α > 0 it cancels) and soon underflows; switch to the log-space integral.
constexpr double kDirectCdfFloor = 1e-3;

// d/dx log f(x).
double LogPdfSlope(double x, const SkewNormalParams& p) {
  const double z = (x - p.location) / p.scale;
  const double u = p.shape * z;
  const double mills = std::exp(LogNormalPdf(u) - LogNormalCdf(u));  // φ(u)/Φ(u)
  return (-z + p.shape * mills) / p.scale;
}

}  // namespace

double SkewNormalLogPdf(double x, const SkewNormalParams& p) {
  const double z = (x - p.location) / p.scale;
  return kLog2 - std::log(p.scale) + LogNormalPdf(z) + LogNormalCdf(p.shape * z);
}

double SkewNormalCdf(double x, const SkewNormalParams& p) {
  const boost::math::skew_normal_distribution<double> d(p.location, p.scale, p.shape);
  if (std::isinf(x)) return x > 0 ? 1.0 : 0.0;
  return std::clamp(boost::math::cdf(d, x), 0.0, 1.0);
}

double SkewNormalLogCdf(double x, const SkewNormalParams& p) {
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return x > 0 ? 0.0 : -std::numeric_limits<double>::infinity();
  const double direct = SkewNormalCdf(x, p);
  const double slope = LogPdfSlope(x, p);
  if (direct >= kDirectCdfFloor || !(slope > 0.0)) return std::log(direct);
  const double hx = SkewNormalLogPdf(x, p);
  // s = u / slope; log-concavity bounds the integrand by e^{−u}, so [0, 50]
  // loses less than e^{−50} of the mass.
  auto integrand = [&](double u) { return std::exp(SkewNormalLogPdf(x - u / slope, p) - hx); };
  const double integral = boost::math::quadrature::gauss_kronrod<double, 31>::integrate(
      integrand, 0.0, 50.0, 15, 1e-13);
  return hx + std::log(integral) - std::log(slope);
}

absl::StatusOr<SkewNormalParams> SkewNormalMoments(absl::Span<const double> samples) {
  if (samples.size() < 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("samples has ", samples.size(), " values; a skew-normal fit needs >= 3"));
  }
  MEMAUDIT_RETURN_IF_ERROR(CheckFinite("samples", samples));
  const double n = static_cast<double>(samples.size());
  double mean = 0.0;
  for (double v : samples) mean += v;
  mean /= n;
  double m2 = 0.0, m3 = 0.0;
  for (double v : samples) {
    const double d = v - mean;
    m2 += d * d;
    m3 += d * d * d;
  }
  m2 /= n;
  m3 /= n;
  if (!(m2 > 0.0)) return absl::InvalidArgumentError("samples are all equal; cannot fit a scale");
  const double skew = std::clamp(m3 / std::pow(m2, 1.5), -0.99, 0.99);
  // Invert γ1(δ): |δ| = sqrt(π/2 · g / (g + ((4 − π)/2)^{2/3})), g = |γ1|^{2/3}.
  const double g = std::pow(std::abs(skew), 2.0 / 3.0);
  const double delta =
      std::copysign(std::sqrt(kPi / 2.0 * g / (g + std::pow((4.0 - kPi) / 2.0, 2.0 / 3.0))), skew);
  SkewNormalParams p;
  p.shape = std::clamp(delta / std::sqrt(1.0 - delta * delta), -kMaxSkewShape, kMaxSkewShape);
  p.scale = std::sqrt(m2 / (1.0 - 2.0 * delta * delta / kPi));
  p.location = mean - p.scale * delta * std::sqrt(2.0 / kPi);
  return p;
}

absl::StatusOr<SkewNormalFit> FitSkewNormal(absl::Span<const double> samples) {
  MEMAUDIT_ASSIGN_OR_RETURN(auto start, SkewNormalMoments(samples));
  // Work on standardized data so the simplex steps are scale-free.
  const double n = static_cast<double>(samples.size());
  double mean = 0.0, var = 0.0;
  for (double v : samples) mean += v;
  mean /= n;
  for (double v : samples) var += (v - mean) * (v - mean);
  const double sd = std::sqrt(var / n);
  std::vector<double> y(samples.size());
  for (size_t i = 0; i < y.size(); ++i) y[i] = (samples[i] - mean) / sd;

  auto nll = [&](const std::vector<double>& t) {
    if (std::abs(t[2]) > kMaxSkewShape || std::abs(t[1]) > 30.0) {
      return std::numeric_limits<double>::infinity();
    }
    const SkewNormalParams q{t[0], std::exp(t[1]), t[2]};
    double sum = 0.0;
    for (double v : y) sum -= SkewNormalLogPdf(v, q);
    return sum;
  };
  std::vector<double> x = {(start.location - mean) / sd, std::log(start.scale / sd), start.shape};
  NelderMeadOptions opts;
  opts.f_tolerance = 1e-10 * n;
  opts.x_tolerance = 1e-7;
  SkewNormalFit fit;
  double best = nll(x);
  for (int restart = 0; restart < 5; ++restart) {
    const NelderMeadResult r = NelderMead(nll, x, {0.2, 0.2, 0.5}, opts);
    fit.evaluations += r.evaluations;
    fit.converged = r.converged;
    const bool improved = r.value < best - opts.f_tolerance;
    if (r.value < best) {
      best = r.value;
      x = r.x;
    }
    if (!improved) break;
  }
  fit.params = {mean + sd * x[0], sd * std::exp(x[1]), x[2]};
  // Back to the original units: log f_X(x) = log f_Y(y) − log sd.
  fit.log_likelihood = -best - n * std::log(sd);
  const SkewNormalParams params = fit.params;
  MEMAUDIT_ASSIGN_OR_RETURN(auto ks,
                            KsTest(samples, [&](double v) { return SkewNormalCdf(v, params); }));
  fit.ks = ks;
  return fit;
}

double ExtrapolatedExposure(const SkewNormalParams& fit, double canary_px) {
  return -SkewNormalLogCdf(canary_px, fit) / kLog2;
}

absl::StatusOr<ExtrapolatedExposureResult> ExtrapolatedExposureFromReferences(
    absl::Span<const double> reference_px, double canary_px) {
  if (!std::isfinite(canary_px)) {
    return absl::InvalidArgumentError(absl::StrCat("canary_px = ", canary_px, "; must be finite"));
  }
  MEMAUDIT_ASSIGN_OR_RETURN(auto fit, FitSkewNormal(reference_px));
  return ExtrapolatedExposureResult{ExtrapolatedExposure(fit.params, canary_px), fit};
}

}  // namespace memaudit::scoring
