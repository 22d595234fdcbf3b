// One-sample Kolmogorov–Smirnov goodness-of-fit test.
#ifndef MEMAUDIT_SCORING_KS_TEST_H_
#define MEMAUDIT_SCORING_KS_TEST_H_

#include <functional>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace memaudit::scoring {

struct KsResult {
  double statistic = 0.0;  // D = sup |F_n(x) − F(x)|
  double p_value = 0.0;    // asymptotic, with Stephens' small-n correction
};

// Kolmogorov's survival function Q(λ) = 2 Σ_{k>=1} (−1)^{k−1} exp(−2k²λ²).
double KolmogorovSurvival(double lambda);

// D against a continuous CDF, and p = Q((√n + 0.12 + 0.11/√n)·D).
// When F's parameters were fitted to the same samples the p-value is
// optimistic (too large); see docs/scoring.md. Samples must be non-empty, no NaN.
absl::StatusOr<KsResult> KsTest(absl::Span<const double> samples,
                                const std::function<double(double)>& cdf);

}  // namespace memaudit::scoring

#endif  // MEMAUDIT_SCORING_KS_TEST_H_
