#include "scoring/forgetting.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "common/base/seeding.h"
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

namespace {

// The trial means' standard errors (accuracy, AUC, TPR, precision, epsilon)
// from the injected examples alone: a bootstrap over them, the same draw in
// every trial of point `p`, seeded per point. Injected and baseline scores
// of one example move together when they pair (same size); otherwise each
// arm draws its own, and so does a trial of another size.
absl::StatusOr<std::vector<double>> ExampleErrors(const ForgettingEvalPoint& p,
                                                  const ForgettingOptions& options, size_t point) {
  std::vector<std::vector<double>> values(5);
  SplitMix64 rng(options.rerun_seed + point);
  for (uint32_t b = 0; b < options.rerun_resamples; ++b) {
    const size_t n = p.trials.front().injected.size();
    const size_t m = p.trials.front().baseline.size();
    std::vector<uint32_t> injected_draw, baseline_draw;
    injected_draw.reserve(n);
    baseline_draw.reserve(m);
    for (size_t i = 0; i < n; ++i) injected_draw.push_back(static_cast<uint32_t>(rng.Uniform(n)));
    if (m == n) {
      baseline_draw = injected_draw;
    } else {
      for (size_t i = 0; i < m; ++i) baseline_draw.push_back(static_cast<uint32_t>(rng.Uniform(m)));
    }
    double sums[5] = {0, 0, 0, 0, 0};
    for (const TrialScores& trial : p.trials) {
      TrialScores drawn;
      if (trial.injected.size() == n && trial.baseline.size() == m) {
        drawn.injected.reserve(n);
        drawn.baseline.reserve(m);
        for (uint32_t i : injected_draw) drawn.injected.push_back(trial.injected[i]);
        for (uint32_t i : baseline_draw) drawn.baseline.push_back(trial.baseline[i]);
      } else {
        // A trial of other examples (hand-built inputs): its own draw.
        for (size_t i = 0; i < trial.injected.size(); ++i) {
          drawn.injected.push_back(trial.injected[rng.Uniform(trial.injected.size())]);
        }
        for (size_t i = 0; i < trial.baseline.size(); ++i) {
          drawn.baseline.push_back(trial.baseline[rng.Uniform(trial.baseline.size())]);
        }
      }
      MEMAUDIT_ASSIGN_OR_RETURN(const TrialMetrics t,
                                ForgettingTrialMetrics(drawn, options.fpr_target));
      const double metrics[5] = {t.accuracy, t.auc, t.tpr, t.precision, t.epsilon_clamped};
      for (size_t k = 0; k < 5; ++k) sums[k] += metrics[k];
    }
    for (size_t k = 0; k < 5; ++k)
      values[k].push_back(sums[k] / static_cast<double>(p.trials.size()));
  }
  std::vector<double> se(5, 0.0);
  if (options.rerun_resamples < 2) return se;
  for (size_t k = 0; k < 5; ++k) se[k] = SampleStandardDeviation(values[k]);
  return se;
}

}  // namespace

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
    MEMAUDIT_ASSIGN_OR_RETURN(const std::vector<double> shared_se, ExampleErrors(p, options, i));
    for (size_t k = 0; k < std::size(fields); ++k) {
      fields[k].into->rerun = RerunWithSharedPart(*fields[k].into, shared_se[k], fields[k].range);
    }
    curve.push_back(std::move(out));
  }
  return curve;
}

}  // namespace memaudit::scoring
