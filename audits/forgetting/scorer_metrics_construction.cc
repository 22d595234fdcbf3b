#include "audits/forgetting/scorer_metrics_construction.h"

#include "absl/strings/str_cat.h"
#include "audits/forgetting/constructions.h"
#include "audits/forgetting/signals.h"
#include "common/base/status_macros.h"
#include "common/messages/export_arrays.h"
#include "scoring/forgetting_constructions.h"
#include "scoring/intervals.h"

namespace memaudit::scorer {
namespace {

constexpr const char* kSignals[] = {forgetting::kGuessInjected, forgetting::kGuessBaseline,
                                    forgetting::kArmsIdentical};

// One point's guesses of every trial, in trial order (signal by signal);
// nullopt while a trial has not sent it.
std::optional<std::vector<std::vector<double>>> PointGuesses(const v1::ForgettingAudit& f,
                                                             const ForgettingSignals& signals,
                                                             uint64_t point) {
  std::vector<std::vector<double>> out;
  for (const char* signal : kSignals) {
    auto it = signals.find({absl::StrCat(point), signal});
    if (it == signals.end() || it->second.size() < f.trials()) return std::nullopt;
    std::vector<double>& values = out.emplace_back();
    for (uint32_t t = 0; t < f.trials(); ++t) {
      auto trial = it->second.find(t);
      if (trial == it->second.end() || trial->second.size() != 1) return std::nullopt;
      values.push_back(trial->second[0]);
    }
  }
  return out;
}

absl::StatusOr<v1::ForgettingConstructionPoint> PointOf(const v1::ForgettingAudit& f, uint64_t k,
                                                        const std::vector<std::vector<double>>& g) {
  v1::ForgettingConstructionPoint p;
  p.set_steps_since_injection(k);
  uint32_t tp = 0, fp = 0, identical = 0;
  for (uint32_t t = 0; t < f.trials(); ++t) {
    tp += g[0][t] != 0;
    fp += g[1][t] != 0;
    identical += g[2][t] != 0;
  }
  p.set_true_positives(tp);
  p.set_false_positives(fp);
  p.set_true_negatives(f.trials() - fp);
  p.set_false_negatives(f.trials() - tp);
  p.set_identical_trials(identical);
  const size_t correct = tp + (f.trials() - fp), guesses = 2ull * f.trials();
  MEMAUDIT_ASSIGN_OR_RETURN(scoring::Interval accuracy, scoring::ClopperPearson(correct, guesses));
  p.set_accuracy(static_cast<double>(correct) / static_cast<double>(guesses));
  p.set_accuracy_low(accuracy.lo);
  p.set_accuracy_high(accuracy.hi);
  if (tp + fp == 0) {
    // Nothing guessed IN: precision says nothing, and a gate on it cannot
    // decide.
    p.set_precision_undefined(true);
    p.set_precision_high(1);
  } else {
    MEMAUDIT_ASSIGN_OR_RETURN(scoring::Interval precision, scoring::ClopperPearson(tp, tp + fp));
    p.set_precision(static_cast<double>(tp) / (tp + fp));
    p.set_precision_low(precision.lo);
    p.set_precision_high(precision.hi);
  }
  const v1::ForgettingConstruction& c = f.construction();
  if (c.name() == forgetting::kMeanEstimationConstruction && c.sampling() == "random") {
    const scoring::MeanEstimationConstruction m = forgetting::MeanEstimationOf(f);
    p.set_optimal_accuracy(scoring::MeanEstimationOptimalAccuracy(m, k));
    p.set_kl_divergence(scoring::MeanEstimationKl(m, k));
    p.set_kl_bound(scoring::MeanEstimationKlBound(m, k));
  }
  return p;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> RequiredConstructionSignals(
    const v1::ForgettingAudit& f) {
  std::vector<std::pair<std::string, std::string>> out;
  for (uint64_t p : f.eval_points()) {
    for (const char* s : kSignals) out.emplace_back(absl::StrCat(p), s);
  }
  return out;
}

absl::Status ValidateConstructionObservation(const v1::ForgettingAudit& f,
                                             const v1::Observation& o) {
  bool known_point = false;
  for (uint64_t p : f.eval_points()) known_point = known_point || o.point() == absl::StrCat(p);
  if (!known_point) {
    return absl::InvalidArgumentError(absl::StrCat("observation.point: \"", o.point(),
                                                   "\" is not an evaluation point of this audit"));
  }
  bool known_signal = false;
  for (const char* s : kSignals) known_signal = known_signal || o.signal() == s;
  if (!known_signal) {
    return absl::InvalidArgumentError(
        absl::StrCat("observation.signal: \"", o.signal(), "\" is not a signal of this audit"));
  }
  if (o.values_size() != 1 || (o.values(0) != 0 && o.values(0) != 1)) {
    return absl::InvalidArgumentError(
        "observation.values: a construction's guess is one value, 0 or 1");
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::AuditResults> ScoreConstruction(const v1::AuditSpec& spec,
                                                   const ForgettingSignals& signals) {
  const v1::ForgettingAudit& f = spec.forgetting();
  v1::AuditResults results;
  results.set_kind(v1::FORGETTING);
  results.set_models(2 * f.trials());
  results.set_examples(1);
  results.set_members(f.trials());
  results.set_non_members(f.trials());
  v1::ForgettingResults* out = results.mutable_forgetting();
  out->set_construction(f.construction().name());
  out->set_trials(f.trials());
  out->set_injected_examples(1);
  out->set_training_steps(forgetting::TrialSteps(f));
  bool complete = true;
  // Trials send their points in ascending order: the curve is the longest
  // prefix every trial has reached.
  for (uint64_t k : f.eval_points()) {
    const auto guesses = PointGuesses(f, signals, k);
    if (!guesses.has_value()) {
      complete = false;
      break;
    }
    MEMAUDIT_ASSIGN_OR_RETURN(*out->add_construction_curve(), PointOf(f, k, *guesses));
  }
  results.set_complete(complete);
  return results;
}

absl::StatusOr<std::vector<v1::ExportArray>> ConstructionExport(const v1::AuditSpec& spec,
                                                                const ForgettingSignals& signals) {
  const v1::ForgettingAudit& f = spec.forgetting();
  const uint64_t points = f.eval_points_size(), trials = f.trials();
  std::vector<std::vector<double>> arrays(std::size(kSignals));
  for (uint64_t k : f.eval_points()) {
    const auto guesses = PointGuesses(f, signals, k);
    if (!guesses.has_value()) {
      return absl::FailedPreconditionError("forgetting: evaluation points missing");
    }
    for (size_t s = 0; s < arrays.size(); ++s) {
      arrays[s].insert(arrays[s].end(), (*guesses)[s].begin(), (*guesses)[s].end());
    }
  }
  std::vector<v1::ExportArray> out;
  out.push_back(
      MakeExportArray("steps_since_injection", {"point"}, {points}, v1::INT64,
                      "per-example steps since the injection (kmeans: 0, after the "
                      "update)",
                      std::vector<double>(f.eval_points().begin(), f.eval_points().end())));
  const char* descriptions[] = {"1 when the adversary guessed IN in the IN arm",
                                "1 when the adversary guessed IN in the OUT arm",
                                "1 when the two arms ended on the same double"};
  for (size_t s = 0; s < arrays.size(); ++s) {
    out.push_back(MakeExportArray(kSignals[s], {"point", "trial"}, {points, trials}, v1::UINT8,
                                  descriptions[s], std::move(arrays[s])));
  }
  return out;
}

}  // namespace memaudit::scorer
