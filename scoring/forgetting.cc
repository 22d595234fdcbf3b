#include "scoring/forgetting.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "scoring/privacy_bounds.h"
#include "scoring/roc.h"

namespace memaudit::scoring {

absl::StatusOr<TrialMetrics> ForgettingTrialMetrics(const TrialScores& trial, double fpr_target) {
  if (trial.injected.empty() || trial.baseline.empty()) {
    return absl::InvalidArgumentError("trial.injected and trial.baseline must both be non-empty");
  }
  std::vector<double> scores(trial.injected);
  scores.insert(scores.end(), trial.baseline.begin(), trial.baseline.end());
  std::vector<uint8_t> member(scores.size(), 0);
  std::fill(member.begin(), member.begin() + trial.injected.size(), 1);
  MEMAUDIT_ASSIGN_OR_RETURN(auto roc, ComputeRoc(scores, member));
  MEMAUDIT_ASSIGN_OR_RETURN(auto op, TprAtFpr(roc, fpr_target));
  MEMAUDIT_ASSIGN_OR_RETURN(auto eps, EpsilonLowerBound(op));
  const PrecisionResult precision = PrecisionAt(op);
  TrialMetrics m;
  m.accuracy = BalancedAccuracy(roc);
  m.auc = Auc(roc);
  m.tpr = op.tpr;
  m.fpr = op.fpr;
  m.threshold = op.threshold;
  m.precision = precision.precision;
  m.precision_defined = precision.defined;
  m.epsilon = eps.point;
  m.epsilon_clamped = eps.clamped;
  m.epsilon_fpr_zero = eps.fpr_zero;
  return m;
}

absl::StatusOr<std::vector<ForgettingCurvePoint>> ForgettingCurve(
    absl::Span<const ForgettingEvalPoint> points, const ForgettingOptions& options) {
  if (points.empty()) return absl::InvalidArgumentError("points must not be empty");
  std::vector<const ForgettingEvalPoint*> sorted;
  for (const auto& p : points) sorted.push_back(&p);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](auto* a, auto* b) { return a->steps_since_seen < b->steps_since_seen; });
  std::vector<ForgettingCurvePoint> curve;
  for (size_t i = 0; i < sorted.size(); ++i) {
    const ForgettingEvalPoint& p = *sorted[i];
    if (i > 0 && p.steps_since_seen == sorted[i - 1]->steps_since_seen) {
      return absl::InvalidArgumentError(
          absl::StrCat("points: steps_since_seen = ", p.steps_since_seen, " appears twice"));
    }
    if (p.trials.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("points: steps_since_seen = ", p.steps_since_seen, " has no trials"));
    }
    ForgettingCurvePoint out;
    out.steps_since_seen = p.steps_since_seen;
    std::vector<double> acc, auc, tpr, prec, eps;
    for (size_t t = 0; t < p.trials.size(); ++t) {
      auto m = ForgettingTrialMetrics(p.trials[t], options.fpr_target);
      if (!m.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("points: steps_since_seen = ", p.steps_since_seen, ", trial ", t, ": ",
                         m.status().message()));
      }
      out.trials.push_back(*m);
      acc.push_back(m->accuracy);
      auc.push_back(m->auc);
      tpr.push_back(m->tpr);
      prec.push_back(m->precision);
      eps.push_back(m->epsilon_clamped);
      out.epsilon_clamped_trials += m->epsilon_fpr_zero ? 1 : 0;
      out.precision_undefined_trials += m->precision_defined ? 0 : 1;
      const std::vector<double>& base = p.trials[t].baseline;
      out.tied_baseline_trials +=
          std::all_of(base.begin(), base.end(), [&](double v) { return v == base.front(); });
    }
    struct {
      const std::vector<double>* values;
      MeanSummary* into;
      Interval range;
    } fields[] = {{&acc, &out.accuracy, kUnitInterval},
                  {&auc, &out.auc, kUnitInterval},
                  {&tpr, &out.tpr, kUnitInterval},
                  {&prec, &out.precision, kUnitInterval},
                  {&eps, &out.epsilon, kWholeLine}};
    for (auto& f : fields) {
      MEMAUDIT_ASSIGN_OR_RETURN(auto s, SummarizeMean(*f.values, options.confidence, f.range));
      *f.into = s;
    }
    curve.push_back(std::move(out));
  }
  return curve;
}

}  // namespace memaudit::scoring
