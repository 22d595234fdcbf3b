// Quantities read off one ROC operating point: precision and the empirical
// ε lower bound ln(TPR/FPR) (a pure ε-DP mechanism has TPR <= e^ε·FPR for
// every test, so an attack's TPR/FPR lower-bounds e^ε).
#ifndef MEMAUDIT_SCORING_PRIVACY_BOUNDS_H_
#define MEMAUDIT_SCORING_PRIVACY_BOUNDS_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "scoring/intervals.h"
#include "scoring/roc.h"

namespace memaudit::scoring {

struct EpsilonBound {
  // ln(TPR/FPR). 0 when TPR <= FPR (no evidence against any ε >= 0,
  // including TPR = FPR = 0). When FPR = 0 < TPR the ratio is unbounded:
  // `point` is +inf and fpr_zero is set, so callers can print "∞".
  double point = 0.0;
  bool fpr_zero = false;
  // ln(TPR/FPR) with FPR clamped to 1/|negatives| when it is 0: a finite
  // stand-in for averaging across trials. Equal to `point` otherwise.
  double clamped = 0.0;
  // ε_lo = ln(TPR_lo / FPR_hi) from the Clopper–Pearson bounds, floored at
  // 0; always finite since FPR_hi > 0 whenever there are negatives.
  double lower = 0.0;
  Interval tpr_ci;
  Interval fpr_ci;
  double confidence = 0.95;
};

// From the counts carried by an OperatingPoint (see TprAtFpr).
absl::StatusOr<EpsilonBound> EpsilonLowerBound(const OperatingPoint& op, double confidence = 0.95);

struct PrecisionResult {
  double precision = 0.0;  // TP / (TP + FP); 0 when nothing is predicted member
  bool defined = false;    // false when TP + FP = 0
  size_t true_positives = 0;
  size_t false_positives = 0;
};

// Precision when predicting member for score >= threshold.
absl::StatusOr<PrecisionResult> PrecisionAtThreshold(absl::Span<const double> scores,
                                                     absl::Span<const uint8_t> is_member,
                                                     double threshold);
// Precision at an operating point already computed (e.g. TPR at FPR 10%).
PrecisionResult PrecisionAt(const OperatingPoint& op);

}  // namespace memaudit::scoring

#endif  // MEMAUDIT_SCORING_PRIVACY_BOUNDS_H_
