// Skew-normal model of reference Px values and the extrapolated exposure of
// The Secret Sharer §4.3. Azzalini parameterization: location ξ, scale ω,
// shape α; pdf f(x) = (2/ω) φ(z) Φ(αz), z = (x − ξ)/ω.
#ifndef MEMAUDIT_SCORING_SKEW_NORMAL_H_
#define MEMAUDIT_SCORING_SKEW_NORMAL_H_

#include <cstddef>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "scoring/ks_test.h"

namespace memaudit::scoring {

struct SkewNormalParams {
  double location = 0.0;  // ξ
  double scale = 1.0;     // ω > 0
  double shape = 0.0;     // α; 0 is the normal
};

// The MLE of α diverges for samples at the skewness limit; it is kept in
// [−kMaxSkewShape, kMaxSkewShape].
inline constexpr double kMaxSkewShape = 100.0;

double SkewNormalLogPdf(double x, const SkewNormalParams& p);
// CDF F(x) = Φ(z) − 2 T(z, α) (Owen's T, Boost).
double SkewNormalCdf(double x, const SkewNormalParams& p);
// log F(x), finite far into the left tail where F underflows: there it is
// h(x) + log ∫_0^∞ exp(h(x − s) − h(x)) ds with h = log f, integrated by
// Gauss–Kronrod after rescaling s by h'(x) (the density is log-concave).
double SkewNormalLogCdf(double x, const SkewNormalParams& p);

// Method-of-moments estimate (sample skewness clipped to the family's
// limit, ±0.99). Needs >= 3 samples, finite, not all equal.
absl::StatusOr<SkewNormalParams> SkewNormalMoments(absl::Span<const double> samples);

struct SkewNormalFit {
  SkewNormalParams params;
  double log_likelihood = 0.0;
  KsResult ks;  // goodness of fit against the fitted CDF (p-value optimistic)
  size_t evaluations = 0;
  bool converged = false;
};

// Maximum likelihood: standardize, start from the moments, Nelder–Mead on
// (ξ, log ω, α), restarted from its own optimum until it stops improving.
absl::StatusOr<SkewNormalFit> FitSkewNormal(absl::Span<const double> samples);

// Extrapolated exposure = −log2 F(Px_canary), from log F so it stays finite
// (and may exceed log2|R|) far in the left tail.
double ExtrapolatedExposure(const SkewNormalParams& fit, double canary_px);

struct ExtrapolatedExposureResult {
  double exposure = 0.0;
  SkewNormalFit fit;
};
// Fit on the reference Px (canaries excluded), then extrapolate.
absl::StatusOr<ExtrapolatedExposureResult> ExtrapolatedExposureFromReferences(
    absl::Span<const double> reference_px, double canary_px);

}  // namespace memaudit::scoring

#endif  // MEMAUDIT_SCORING_SKEW_NORMAL_H_
