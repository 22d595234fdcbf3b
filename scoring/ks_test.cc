#include "scoring/ks_test.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "scoring/validation.h"

namespace memaudit::scoring {

double KolmogorovSurvival(double lambda) {
  if (lambda <= 0.0) return 1.0;
  // Below ~0.2 the alternating series converges too slowly to be summed in
  // 100 terms, but Q is 1 to double precision there.
  if (lambda < 0.2) return 1.0;
  double sum = 0.0, sign = 1.0;
  for (int k = 1; k <= 100; ++k) {
    const double term = std::exp(-2.0 * k * k * lambda * lambda);
    sum += sign * term;
    if (term < 1e-17 * sum) break;
    sign = -sign;
  }
  return std::clamp(2.0 * sum, 0.0, 1.0);
}

absl::StatusOr<KsResult> KsTest(absl::Span<const double> samples,
                                const std::function<double(double)>& cdf) {
  if (auto s = CheckNonEmpty("samples", samples.size()); !s.ok()) return s;
  if (auto s = CheckNoNaN("samples", samples); !s.ok()) return s;
  std::vector<double> x(samples.begin(), samples.end());
  std::sort(x.begin(), x.end());
  const double n = static_cast<double>(x.size());
  double d = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double f = cdf(x[i]);
    d = std::max({d, (i + 1) / n - f, f - i / n});
  }
  const double sqrt_n = std::sqrt(n);
  return KsResult{d, KolmogorovSurvival((sqrt_n + 0.12 + 0.11 / sqrt_n) * d)};
}

}  // namespace memaudit::scoring
