#include "scoring/roc.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "common/status_macros.h"
#include "scoring/validation.h"

namespace memaudit::scoring {

absl::StatusOr<RocCurve> ComputeRoc(absl::Span<const double> scores,
                                    absl::Span<const uint8_t> is_member) {
  MEMAUDIT_RETURN_IF_ERROR(CheckLabeledScores(scores, is_member));
  const size_t n = scores.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });

  RocCurve roc;
  for (uint8_t m : is_member) roc.positives += m;
  roc.negatives = n - roc.positives;
  const double p = static_cast<double>(roc.positives);
  const double q = static_cast<double>(roc.negatives);
  auto push = [&](double threshold, size_t tp, size_t fp) {
    roc.thresholds.push_back(threshold);
    roc.true_positives.push_back(tp);
    roc.false_positives.push_back(fp);
    roc.tpr.push_back(static_cast<double>(tp) / p);
    roc.fpr.push_back(static_cast<double>(fp) / q);
  };
  push(std::numeric_limits<double>::infinity(), 0, 0);
  size_t tp = 0, fp = 0;
  for (size_t i = 0; i < n;) {
    const double s = scores[order[i]];
    // Consume the whole tie group: a threshold at s includes all of it.
    for (; i < n && scores[order[i]] == s; ++i) {
      if (is_member[order[i]]) {
        ++tp;
      } else {
        ++fp;
      }
    }
    push(s, tp, fp);
  }
  return roc;
}

double Auc(const RocCurve& roc) {
  // Trapezoids between consecutive points: a tie group spanning Δfp
  // negatives and Δtp positives contributes Δfp · (tp_before + Δtp / 2),
  // which is exactly the Mann–Whitney count with ties worth ½.
  double twice_area = 0.0;
  for (size_t k = 1; k < roc.thresholds.size(); ++k) {
    const double dfp = static_cast<double>(roc.false_positives[k] - roc.false_positives[k - 1]);
    const double tp_before = static_cast<double>(roc.true_positives[k - 1]);
    const double dtp = static_cast<double>(roc.true_positives[k] - roc.true_positives[k - 1]);
    twice_area += dfp * (2.0 * tp_before + dtp);
  }
  return twice_area /
         (2.0 * static_cast<double>(roc.positives) * static_cast<double>(roc.negatives));
}

absl::StatusOr<double> Auc(absl::Span<const double> scores, absl::Span<const uint8_t> is_member) {
  MEMAUDIT_ASSIGN_OR_RETURN(auto roc, ComputeRoc(scores, is_member));
  return Auc(roc);
}

absl::StatusOr<OperatingPoint> TprAtFpr(const RocCurve& roc, double fpr_target) {
  MEMAUDIT_RETURN_IF_ERROR(CheckProbability("fpr_target", fpr_target));
  const size_t k = roc.thresholds.size();
  if (k == 0 || roc.positives == 0 || roc.negatives == 0 || roc.fpr.size() != k ||
      roc.tpr.size() != k || roc.true_positives.size() != k || roc.false_positives.size() != k) {
    return absl::InvalidArgumentError("roc must be a curve built by ComputeRoc");
  }
  // fpr and tpr are non-decreasing along the curve; keep the first point that
  // reaches each new TPR so ties in TPR resolve to the smallest FPR.
  size_t best = 0;
  for (size_t k = 1; k < roc.thresholds.size() && roc.fpr[k] <= fpr_target; ++k) {
    if (roc.tpr[k] > roc.tpr[best]) best = k;
  }
  OperatingPoint op;
  op.fpr_target = fpr_target;
  op.tpr = roc.tpr[best];
  op.fpr = roc.fpr[best];
  op.threshold = roc.thresholds[best];
  op.true_positives = roc.true_positives[best];
  op.false_positives = roc.false_positives[best];
  op.positives = roc.positives;
  op.negatives = roc.negatives;
  return op;
}

absl::StatusOr<OperatingPoint> TprAtFpr(absl::Span<const double> scores,
                                        absl::Span<const uint8_t> is_member, double fpr_target) {
  MEMAUDIT_RETURN_IF_ERROR(CheckProbability("fpr_target", fpr_target));
  MEMAUDIT_ASSIGN_OR_RETURN(auto roc, ComputeRoc(scores, is_member));
  return TprAtFpr(roc, fpr_target);
}

double BalancedAccuracy(const RocCurve& roc) {
  double best = 0.0;
  for (size_t k = 0; k < roc.thresholds.size(); ++k) {
    best = std::max(best, 0.5 * (roc.tpr[k] + 1.0 - roc.fpr[k]));
  }
  return best;
}

absl::StatusOr<double> BalancedAccuracy(absl::Span<const double> scores,
                                        absl::Span<const uint8_t> is_member) {
  MEMAUDIT_ASSIGN_OR_RETURN(auto roc, ComputeRoc(scores, is_member));
  return BalancedAccuracy(roc);
}

}  // namespace memaudit::scoring
