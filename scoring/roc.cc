#include "scoring/roc.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/base/status_macros.h"
#include "scoring/validation.h"

namespace memaudit::scoring {

absl::StatusOr<RocCurve> ComputeRoc(absl::Span<const double> scores,
                                    absl::Span<const uint8_t> is_member) {
  MEMAUDIT_RETURN_IF_ERROR(CheckLabeledScores(scores, is_member));
  MEMAUDIT_ASSIGN_OR_RETURN(const RankedScores ranked, RankedScores::Rank(scores));
  return ComputeRoc(ranked, is_member);
}

// Counts within a tie group do not depend on its order, so the curve is
// that of any decreasing score order.
absl::StatusOr<RocCurve> ComputeRoc(const RankedScores& ranked,
                                    absl::Span<const uint8_t> is_member) {
  MEMAUDIT_RETURN_IF_ERROR(CheckLabeledScores(ranked.scores(), is_member));
  const size_t n = ranked.size();
  const std::vector<double>& descending = ranked.descending();
  const std::vector<uint32_t>& order = ranked.order();
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
    const double s = descending[i];
    // Consume the whole tie group: a threshold at s includes all of it.
    for (; i < n && descending[i] == s; ++i) {
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

namespace {

absl::Status CheckCurve(const RocCurve& roc) {
  const size_t k = roc.thresholds.size();
  if (k == 0 || roc.positives == 0 || roc.negatives == 0 || roc.fpr.size() != k ||
      roc.tpr.size() != k || roc.true_positives.size() != k || roc.false_positives.size() != k) {
    return absl::InvalidArgumentError("roc must be a curve built by ComputeRoc");
  }
  return absl::OkStatus();
}

// Scans the points from *next on while their FPR is <= fpr_target. fpr and
// tpr are non-decreasing along the curve; *best keeps the first point that
// reaches each new TPR so ties in TPR resolve to the smallest FPR. The
// qualifying points are a prefix, so a scan to a larger target may go on
// from where a smaller one stopped.
void ScanTo(const RocCurve& roc, double fpr_target, size_t* next, size_t* best) {
  size_t k = *next;
  for (; k < roc.thresholds.size() && roc.fpr[k] <= fpr_target; ++k) {
    if (roc.tpr[k] > roc.tpr[*best]) *best = k;
  }
  *next = k;
}

OperatingPoint PointAt(const RocCurve& roc, size_t best, double fpr_target) {
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

}  // namespace

absl::StatusOr<OperatingPoint> TprAtFpr(const RocCurve& roc, double fpr_target) {
  MEMAUDIT_RETURN_IF_ERROR(CheckProbability("fpr_target", fpr_target));
  MEMAUDIT_RETURN_IF_ERROR(CheckCurve(roc));
  size_t next = 1, best = 0;
  ScanTo(roc, fpr_target, &next, &best);
  return PointAt(roc, best, fpr_target);
}

absl::StatusOr<std::vector<OperatingPoint>> TprAtFprs(const RocCurve& roc,
                                                      absl::Span<const double> fpr_targets) {
  for (double fpr_target : fpr_targets) {
    MEMAUDIT_RETURN_IF_ERROR(CheckProbability("fpr_target", fpr_target));
  }
  MEMAUDIT_RETURN_IF_ERROR(CheckCurve(roc));
  std::vector<OperatingPoint> out;
  out.reserve(fpr_targets.size());
  size_t next = 1, best = 0;
  for (size_t i = 0; i < fpr_targets.size(); ++i) {
    // A smaller target than the last scans again from the start.
    if (i > 0 && fpr_targets[i] < fpr_targets[i - 1]) {
      next = 1;
      best = 0;
    }
    ScanTo(roc, fpr_targets[i], &next, &best);
    out.push_back(PointAt(roc, best, fpr_targets[i]));
  }
  return out;
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
