// Standard normal log-density and log-CDF that stay finite far in the tails,
// where the plain CDF underflows to 0 (Φ(-40) ≈ 3.6e-350).
#ifndef MEMAUDIT_SCORING_NORMAL_H_
#define MEMAUDIT_SCORING_NORMAL_H_

namespace memaudit::scoring {

// log φ(z) for the standard normal density.
double LogNormalPdf(double z);
// log N(x; mean, sd) = log φ((x - mean) / sd) - log sd. sd must be > 0.
double LogNormalPdf(double x, double mean, double sd);
// log Φ(z). Finite for every finite z; -inf at -inf, 0 at +inf, NaN at NaN.
double LogNormalCdf(double z);
// The standard normal's p-quantile Φ⁻¹(p), 0 < p < 1 (Boost.Math).
double NormalQuantile(double p);

}  // namespace memaudit::scoring

#endif  // MEMAUDIT_SCORING_NORMAL_H_
