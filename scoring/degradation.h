// Privacy degradation of an unlearning attack over the classical MIA
// (Chen et al., DegCount and DegRate). b = 1 marks a member (⟨in, out⟩:
// in the original model, deleted from the unlearned one); p_u is our
// attack's member confidence and p_m the classical MIA's.
#ifndef MEMAUDIT_SCORING_DEGRADATION_H_
#define MEMAUDIT_SCORING_DEGRADATION_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "scoring/intervals.h"

namespace memaudit::scoring {

struct Degradation {
  // (1/n) Σ [b·1(p_u > p_m) + (1−b)·1(p_u < p_m)]; ties count 0. In [0, 1].
  double deg_count = 0.0;
  // (1/n) Σ [b·(p_u − p_m) + (1−b)·(p_m − p_u)]. In [−1, 1].
  double deg_rate = 0.0;
  // 95% intervals over the rows, each row's two confidences a pair. Given
  // the two fitted attacks the rows are independent, so DegCount's count of
  // 0/1 row outcomes is binomial: Clopper–Pearson. DegRate is the mean of
  // the per-row gains: the paired Student-t interval, cut to [−1, 1]; with
  // one row nothing bounds it, so [−1, 1].
  Interval deg_count_interval;
  Interval deg_rate_interval;
  // Per row: whether the attack beat the classical MIA (DegCount's 0/1) and
  // its gain (DegRate's term), for resampling (rerun_interval.h).
  std::vector<double> wins, gains;
};

// Equal lengths >= 1, b in {0, 1}, confidences in [0, 1]; 0 < confidence < 1.
absl::StatusOr<Degradation> ComputeDegradation(absl::Span<const uint8_t> is_member,
                                               absl::Span<const double> p_attack,
                                               absl::Span<const double> p_classical,
                                               double confidence = 0.95);

}  // namespace memaudit::scoring

#endif  // MEMAUDIT_SCORING_DEGRADATION_H_
