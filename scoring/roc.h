// ROC analysis of membership scores. Convention everywhere: a higher score
// means "more likely a member", and a threshold τ predicts member iff
// score >= τ, so a threshold always takes every example tied at τ.
#ifndef MEMAUDIT_SCORING_ROC_H_
#define MEMAUDIT_SCORING_ROC_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "scoring/ranked_scores.h"

namespace memaudit::scoring {

// The empirical ROC curve. Point 0 is the origin (threshold +inf, nothing
// predicted member); then one point per distinct score, in decreasing score
// order, so the last point is (1, 1). Plotting code can draw straight lines
// between consecutive points (ties are diagonal segments).
struct RocCurve {
  size_t positives = 0;  // members
  size_t negatives = 0;  // non-members
  std::vector<double> thresholds;
  std::vector<double> fpr;
  std::vector<double> tpr;
  std::vector<size_t> true_positives;
  std::vector<size_t> false_positives;
};

// Scores may be ±inf but not NaN; is_member entries must be 0/1 with both
// classes present. Errors are InvalidArgument.
absl::StatusOr<RocCurve> ComputeRoc(absl::Span<const double> scores,
                                    absl::Span<const uint8_t> is_member);
// The same curve, to the bit, from scores already ranked (shared with the
// other statistics of the same scores). A tie group of both zeros has the
// threshold +0, where ComputeRoc's sort leaves +0 or -0.
absl::StatusOr<RocCurve> ComputeRoc(const RankedScores& ranked,
                                    absl::Span<const uint8_t> is_member);

// Mann–Whitney AUC = P(score_member > score_nonmember) + ½ P(tie). O(n log n).
absl::StatusOr<double> Auc(absl::Span<const double> scores, absl::Span<const uint8_t> is_member);

struct OperatingPoint {
  double fpr_target = 0.0;
  double tpr = 0.0;
  double fpr = 0.0;
  double threshold = 0.0;
  // Raw counts, so callers can put Clopper–Pearson intervals on tpr and fpr.
  size_t true_positives = 0;
  size_t false_positives = 0;
  size_t positives = 0;
  size_t negatives = 0;
};

// The LARGEST TPR over all thresholds whose FPR is <= fpr_target ("≤", not
// "<"). Among thresholds reaching that TPR, the one with the smallest FPR
// (highest threshold) is returned. When no score threshold qualifies the
// result is threshold = +inf, tpr = fpr = 0. fpr_target must be in [0, 1].
absl::StatusOr<OperatingPoint> TprAtFpr(absl::Span<const double> scores,
                                        absl::Span<const uint8_t> is_member, double fpr_target);
// Same, on a curve that is already computed (avoids re-sorting for several
// targets).
absl::StatusOr<OperatingPoint> TprAtFpr(const RocCurve& roc, double fpr_target);
// TprAtFpr at each of several targets; increasing targets take one scan of
// the curve between them (a plotted curve asks for ~100 points of a curve
// with a point per distinct score).
absl::StatusOr<std::vector<OperatingPoint>> TprAtFprs(const RocCurve& roc,
                                                      absl::Span<const double> fpr_targets);

// max over thresholds (including ±inf, so the result is >= 0.5) of
// (TPR + TNR) / 2.
absl::StatusOr<double> BalancedAccuracy(absl::Span<const double> scores,
                                        absl::Span<const uint8_t> is_member);
double BalancedAccuracy(const RocCurve& roc);
// Area under the curve, identical to the Mann–Whitney AUC above.
double Auc(const RocCurve& roc);

}  // namespace memaudit::scoring

#endif  // MEMAUDIT_SCORING_ROC_H_
