#include "scoring/privacy_bounds.h"

#include <cmath>
#include <limits>

#include "common/base/status_macros.h"
#include "scoring/validation.h"

namespace memaudit::scoring {
namespace {

PrecisionResult FromCounts(size_t tp, size_t fp) {
  PrecisionResult r;
  r.true_positives = tp;
  r.false_positives = fp;
  r.defined = tp + fp > 0;
  if (r.defined) r.precision = static_cast<double>(tp) / static_cast<double>(tp + fp);
  return r;
}

// ln(tpr / fpr) floored at 0; fpr > 0.
double LogRatio(double tpr, double fpr) { return tpr <= fpr ? 0.0 : std::log(tpr / fpr); }

}  // namespace

absl::StatusOr<EpsilonBound> EpsilonLowerBound(const OperatingPoint& op, double confidence) {
  if (op.positives == 0 || op.negatives == 0 || op.true_positives > op.positives ||
      op.false_positives > op.negatives) {
    return absl::InvalidArgumentError(
        "op must carry counts with positives, negatives >= 1 and TP <= positives, FP <= "
        "negatives (as TprAtFpr returns)");
  }
  MEMAUDIT_ASSIGN_OR_RETURN(auto tpr_ci,
                            ClopperPearson(op.true_positives, op.positives, confidence));
  MEMAUDIT_ASSIGN_OR_RETURN(auto fpr_ci,
                            ClopperPearson(op.false_positives, op.negatives, confidence));
  EpsilonBound e;
  e.confidence = confidence;
  e.tpr_ci = tpr_ci;
  e.fpr_ci = fpr_ci;
  const double tpr = static_cast<double>(op.true_positives) / static_cast<double>(op.positives);
  const double fpr = static_cast<double>(op.false_positives) / static_cast<double>(op.negatives);
  if (tpr <= fpr) {
    e.point = e.clamped = 0.0;
  } else if (op.false_positives == 0) {
    e.fpr_zero = true;
    e.point = std::numeric_limits<double>::infinity();
    e.clamped = LogRatio(tpr, 1.0 / static_cast<double>(op.negatives));
  } else {
    e.point = e.clamped = std::log(tpr / fpr);
  }
  e.lower = LogRatio(e.tpr_ci.lo, e.fpr_ci.hi);
  return e;
}

absl::StatusOr<PrecisionResult> PrecisionAtThreshold(absl::Span<const double> scores,
                                                     absl::Span<const uint8_t> is_member,
                                                     double threshold) {
  MEMAUDIT_RETURN_IF_ERROR(CheckLabeledScores(scores, is_member));
  if (std::isnan(threshold)) return absl::InvalidArgumentError("threshold is NaN");
  size_t tp = 0, fp = 0;
  for (size_t i = 0; i < scores.size(); ++i) {
    if (scores[i] >= threshold) ++(is_member[i] ? tp : fp);
  }
  return FromCounts(tp, fp);
}

PrecisionResult PrecisionAt(const OperatingPoint& op) {
  return FromCounts(op.true_positives, op.false_positives);
}

}  // namespace memaudit::scoring
