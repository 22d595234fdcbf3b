// RMIA (Zarifzadeh et al., "Low-Cost High-Power Membership Inference
// Attacks"): compare the likelihood ratio Pr(x|θ)/Pr(x) of a candidate x with
// that of population samples z.
#ifndef MEMAUDIT_SCORING_RMIA_H_
#define MEMAUDIT_SCORING_RMIA_H_

#include <cstddef>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "scoring/matrix.h"

namespace memaudit::scoring {

struct RmiaOptions {
  // x beats z when (Pr(x|θ)/Pr(x)) / (Pr(z|θ)/Pr(z)) >= gamma; gamma > 0.
  double gamma = 1.0;
  // Offline (reference models never trained on x): Pr(x) is extrapolated
  // from the OUT average as ½((1 + a)·Pr_out(x) + (1 − a)), a in [0, 1]; the
  // paper tunes a per dataset, a = 1 means no correction. Online: Pr(x) is
  // the plain mean over the reference models (IN and OUT alike).
  bool offline = true;
  double a = 1.0;
};

struct RmiaResult {
  std::vector<double> scores;  // fraction of population z that x beats, in [0, 1]
  double gamma = 1.0;
  double a = 1.0;  // as used (recorded even online, where it is ignored)
  bool offline = true;
  size_t population_size = 0;
};

// target_pr_x: Pr(x|θ) for the n candidates; reference_pr_x: R × n, the
// same probability under each reference model. Likewise for the population
// z (target_pr_z, R × |Z|); Pr(z) uses the same rule as Pr(x). Probabilities
// must be finite and > 0. O((n + |Z|)·(R + log |Z|)): population ratios are
// sorted once and each x is a binary search.
absl::StatusOr<RmiaResult> RmiaScores(absl::Span<const double> target_pr_x,
                                      const Matrix& reference_pr_x,
                                      absl::Span<const double> target_pr_z,
                                      const Matrix& reference_pr_z,
                                      const RmiaOptions& options = {});

// The same definition evaluated pair by pair, O(n·|Z|); for tests and audits
// of the fast path.
absl::StatusOr<RmiaResult> RmiaScoresDense(absl::Span<const double> target_pr_x,
                                           const Matrix& reference_pr_x,
                                           absl::Span<const double> target_pr_z,
                                           const Matrix& reference_pr_z,
                                           const RmiaOptions& options = {});

}  // namespace memaudit::scoring

#endif  // MEMAUDIT_SCORING_RMIA_H_
