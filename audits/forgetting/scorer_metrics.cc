#include "audits/forgetting/scorer_metrics.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "audits/forgetting/attacks.h"
#include "audits/forgetting/scorer_metrics_construction.h"
#include "audits/forgetting/signals.h"
#include "common/base/status_macros.h"
#include "common/messages/export_arrays.h"
#include "scoring/calibrated_scores.h"
#include "scoring/forgetting.h"
#include "scoring/intervals.h"
#include "services/scorer/result_warnings.h"
#include "services/scorer/trial_mean.h"

namespace memaudit::scorer {
namespace {

bool IsCheckpointSignal(const v1::ForgettingAudit& f, const std::string& s) {
  return s == forgetting::kPhiCheckpoint || s == forgetting::kLossCheckpoint ||
         (forgetting::SelectsByLoss(f) &&
          (s == forgetting::kSelectionLoss || s == forgetting::kCandidateLossMean));
}

bool IsPointSignal(const v1::ForgettingAudit& f, const std::string& s) {
  if (s == forgetting::kPhiInjected || s == forgetting::kPhiBaseline ||
      s == forgetting::kLossInjected || s == forgetting::kLossBaseline ||
      (forgetting::Replays(f) && s == forgetting::kPhiReplay)) {
    return true;
  }
  for (uint32_t j = 0; j < forgetting::ReferenceModels(f); ++j) {
    if (s == forgetting::PhiReferenceSignal(j)) return true;
  }
  for (uint32_t j = 0; j < forgetting::InReferenceModels(f); ++j) {
    if (s == forgetting::PhiInReferenceSignal(j)) return true;
  }
  return false;
}

// One trial's signals at one evaluation point (phi_replay null without a
// replay; phi_references empty without LiRA references, phi_in_references
// without lira_online).
struct TrialSignals {
  const std::vector<double>* phi_ckpt;
  const std::vector<double>* loss_ckpt;
  const std::vector<double>* phi_injected;
  const std::vector<double>* loss_injected;
  const std::vector<double>* phi_baseline;
  const std::vector<double>* loss_baseline;
  const std::vector<double>* phi_replay;
  std::vector<const std::vector<double>*> phi_references;
  std::vector<const std::vector<double>*> phi_in_references;
};

// One trial's attack scores of the injected examples under one arm.
absl::StatusOr<std::vector<double>> ArmScores(const std::string& attack, const TrialSignals& t,
                                              bool injected_arm, bool per_example_variance) {
  const forgetting::Attack* a = forgetting::FindAttack(attack);
  if (a == nullptr) return absl::InvalidArgumentError(absl::StrCat("unknown attack ", attack));
  return a->score({injected_arm ? *t.phi_injected : *t.phi_baseline,
                   injected_arm ? *t.loss_injected : *t.loss_baseline, *t.phi_ckpt, *t.loss_ckpt,
                   t.phi_replay, t.phi_references, t.phi_in_references, per_example_variance});
}

// Each trial's attack scores of Dp under both arms at every reached point.
absl::StatusOr<std::vector<scoring::ForgettingEvalPoint>> ArmPoints(
    const std::string& attack, const v1::ForgettingAudit& f, const std::vector<uint64_t>& steps,
    const std::vector<std::vector<TrialSignals>>& signals) {
  std::vector<scoring::ForgettingEvalPoint> points;
  for (size_t i = 0; i < steps.size(); ++i) {
    scoring::ForgettingEvalPoint& point = points.emplace_back();
    point.steps_since_seen = static_cast<int64_t>(steps[i]);
    for (const TrialSignals& t : signals[i]) {
      scoring::TrialScores& trial = point.trials.emplace_back();
      MEMAUDIT_ASSIGN_OR_RETURN(auto injected, ArmScores(attack, t, /*injected_arm=*/true,
                                                         f.lira_per_example_variance()));
      MEMAUDIT_ASSIGN_OR_RETURN(auto baseline, ArmScores(attack, t, /*injected_arm=*/false,
                                                         f.lira_per_example_variance()));
      trial.injected = std::move(injected);
      trial.baseline = std::move(baseline);
    }
  }
  return points;
}

absl::StatusOr<std::vector<scoring::ForgettingCurvePoint>> CurveOf(
    const v1::ForgettingAudit& f, const std::vector<scoring::ForgettingEvalPoint>& points) {
  if (points.empty()) return std::vector<scoring::ForgettingCurvePoint>();
  scoring::ForgettingOptions options;
  options.fpr_target = f.fpr();
  return scoring::ForgettingCurve(points, options);
}

absl::StatusOr<std::vector<scoring::ForgettingCurvePoint>> Curve(
    const std::string& attack, const v1::ForgettingAudit& f, const std::vector<uint64_t>& steps,
    const std::vector<std::vector<TrialSignals>>& signals) {
  MEMAUDIT_ASSIGN_OR_RETURN(auto points, ArmPoints(attack, f, steps, signals));
  return CurveOf(f, points);
}

void AddCurve(const std::vector<scoring::ForgettingCurvePoint>& curve,
              google::protobuf::RepeatedPtrField<v1::ForgettingCurvePoint>* out) {
  for (const scoring::ForgettingCurvePoint& c : curve) {
    v1::ForgettingCurvePoint* p = out->Add();
    p->set_steps_since_injection(static_cast<uint64_t>(c.steps_since_seen));
    *p->mutable_accuracy() = TrialMeanOf(c.accuracy);
    *p->mutable_auc() = TrialMeanOf(c.auc);
    *p->mutable_tpr() = TrialMeanOf(c.tpr);
    *p->mutable_precision() = TrialMeanOf(c.precision);
    *p->mutable_epsilon() = TrialMeanOf(c.epsilon);
    p->set_epsilon_clamped_trials(static_cast<uint32_t>(c.epsilon_clamped_trials));
    p->set_precision_undefined_trials(static_cast<uint32_t>(c.precision_undefined_trials));
    if (!c.trials.empty() && c.tied_baseline_trials == c.trials.size()) {
      p->set_degenerate(
          "every non-member scores the same in every trial (at k = 0 the baseline arm is the "
          "calibration checkpoint): accuracy, AUC and FPR count ties here, not forgetting");
    }
  }
}

const char* const kCanaryPointSignals[] = {forgetting::kExposureInjected,
                                           forgetting::kExposureBaseline,
                                           forgetting::kExactInjected, forgetting::kExactBaseline};
const char* const kExtractedSignals[] = {forgetting::kExtractedInjected,
                                         forgetting::kExtractedBaseline};

// The values of `signal` at `point` for `trial`; null while they have not
// arrived.
const std::vector<double>* SignalOf(const ForgettingSignals& signals, const std::string& point,
                                    const std::string& signal, uint32_t trial) {
  auto it = signals.find({point, signal});
  if (it == signals.end()) return nullptr;
  auto t = it->second.find(trial);
  return t == it->second.end() ? nullptr : &t->second;
}

// Extractable memorization as a forgetting curve: per group of held-out
// sequences (duplicates in order, then the controls), each trial's fraction
// extracted in each arm, and their mean over trials with its intervals, at
// the first `points` evaluation points. Returns false when a trial's signals
// are missing there (the curves then stop before that point).
absl::StatusOr<bool> AddExtractableCurves(const v1::ForgettingAudit& f,
                                          const ForgettingSignals& signals, size_t points,
                                          v1::ForgettingResults* out) {
  const v1::ExtractableSpec& x = f.canaries().extractable();
  const uint32_t per = x.sequences();
  std::vector<uint32_t> groups(x.duplicates().begin(), x.duplicates().end());
  groups.push_back(0);
  for (size_t g = 0; g < groups.size(); ++g) {
    out->add_extractable_curves()->set_duplicates(groups[g]);
    out->mutable_extractable_curves(static_cast<int>(g))->set_sequences(per);
  }
  for (size_t i = 0; i < points; ++i) {
    const uint64_t p = f.eval_points(static_cast<int>(i));
    const std::string key = absl::StrCat(p);
    std::vector<std::pair<const std::vector<double>*, const std::vector<double>*>> trials;
    for (uint32_t t = 0; t < f.trials(); ++t) {
      const std::vector<double>* inj = SignalOf(signals, key, forgetting::kExtractedInjected, t);
      const std::vector<double>* base = SignalOf(signals, key, forgetting::kExtractedBaseline, t);
      if (inj == nullptr || base == nullptr) return false;
      trials.emplace_back(inj, base);
    }
    for (size_t g = 0; g < groups.size(); ++g) {
      const auto fraction = [&](const std::vector<double>& v) {
        double sum = 0;
        for (uint32_t k = 0; k < per; ++k) sum += v[g * per + k];
        return sum / per;
      };
      std::vector<double> injected, baseline;
      for (const auto& [inj, base] : trials) {
        injected.push_back(fraction(*inj));
        baseline.push_back(fraction(*base));
      }
      const scoring::Interval range{0.0, 1.0};
      MEMAUDIT_ASSIGN_OR_RETURN(auto inj, scoring::SummarizeMean(injected, 0.95, range));
      MEMAUDIT_ASSIGN_OR_RETURN(auto base, scoring::SummarizeMean(baseline, 0.95, range));
      v1::ForgettingExtractablePoint* point =
          out->mutable_extractable_curves(static_cast<int>(g))->add_points();
      point->set_steps_since_injection(p);
      *point->mutable_fraction() = TrialMeanOf(inj);
      *point->mutable_baseline_fraction() = TrialMeanOf(base);
    }
  }
  return true;
}

// LM canaries: mean exposure per repeat group (controls last, repeats 0)
// against steps since injection, over the longest prefix of points every
// trial has reached.
absl::StatusOr<v1::AuditResults> ScoreCanaries(const v1::AuditSpec& spec,
                                               const ForgettingSignals& signals) {
  const v1::ForgettingAudit& f = spec.forgetting();
  const v1::ForgettingCanaries& c = f.canaries();
  const auto get = [&](const std::string& point, const char* signal, uint32_t trial) {
    return SignalOf(signals, point, signal, trial);
  };
  struct Group {
    uint32_t repeats, begin, end;
  };
  std::vector<Group> groups;
  groups.reserve(c.repeats_size());
  for (int g = 0; g < c.repeats_size(); ++g) {
    groups.push_back({c.repeats(g), g * c.per_group(), (g + 1) * c.per_group()});
  }
  const uint32_t inserted = forgetting::InsertedCanaries(f);
  if (c.controls() > 0) groups.push_back({0, inserted, inserted + c.controls()});

  v1::AuditResults results;
  results.set_kind(v1::FORGETTING);
  results.set_models(2 * f.trials());
  results.set_examples(forgetting::CanaryCount(f));
  v1::ForgettingResults* out = results.mutable_forgetting();
  out->set_strategy(f.strategy());
  out->set_attack(f.attack());
  out->set_trials(f.trials());
  out->set_injected_examples(inserted);
  out->set_training_steps(forgetting::TrialSteps(f));
  const v1::CanaryFormatSpec& format = c.canary();
  double log2_space = format.digits() * std::log2(10.0);
  if (!format.alphabets().empty()) {
    log2_space = 0;
    for (const std::string& a : format.alphabets()) {
      // Characters = UTF-8 lead bytes.
      size_t chars = 0;
      for (unsigned char ch : a) chars += (ch & 0xC0) != 0x80;
      log2_space += std::log2(static_cast<double>(std::max<size_t>(chars, 1)));
    }
  }
  out->set_log2_space(log2_space);
  for (const Group& g : groups) {
    v1::ForgettingExposureCurve* curve = out->add_exposure_curves();
    curve->set_repeats(g.repeats);
    curve->set_canaries(g.end - g.begin);
  }
  bool complete = true;
  for (uint32_t t = 0; t < f.trials(); ++t) {
    if (get(forgetting::kCheckpointPoint, forgetting::kExposureCheckpoint, t) == nullptr) {
      complete = false;
    }
  }
  for (uint64_t p : f.eval_points()) {
    const std::string key = absl::StrCat(p);
    std::vector<std::array<const std::vector<double>*, 4>> trials;
    for (uint32_t t = 0; t < f.trials(); ++t) {
      std::array<const std::vector<double>*, 4> v{};
      for (size_t i = 0; i < v.size(); ++i) v[i] = get(key, kCanaryPointSignals[i], t);
      if (std::find(v.begin(), v.end(), nullptr) != v.end()) break;
      trials.push_back(v);
    }
    if (trials.size() < f.trials()) {
      complete = false;
      break;
    }
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      const Group& g = groups[gi];
      std::vector<double> injected, baseline;
      uint32_t bounded = 0;
      for (const auto& v : trials) {
        double inj = 0, base = 0;
        for (uint32_t i = g.begin; i < g.end; ++i) {
          inj += (*v[0])[i];
          base += (*v[1])[i];
          bounded += ((*v[2])[i] == 0) + ((*v[3])[i] == 0);
        }
        injected.push_back(inj / (g.end - g.begin));
        baseline.push_back(base / (g.end - g.begin));
      }
      // Exposure is log2(|R| / rank): its interval stays in [0, log2 |R|].
      const scoring::Interval range{0.0, log2_space};
      MEMAUDIT_ASSIGN_OR_RETURN(auto inj, scoring::SummarizeMean(injected, 0.95, range));
      MEMAUDIT_ASSIGN_OR_RETURN(auto base, scoring::SummarizeMean(baseline, 0.95, range));
      v1::ForgettingExposurePoint* point = out->mutable_exposure_curves(gi)->add_points();
      point->set_steps_since_injection(p);
      *point->mutable_exposure() = TrialMeanOf(inj);
      *point->mutable_baseline_exposure() = TrialMeanOf(base);
      point->set_bounded(bounded);
    }
  }
  if (forgetting::ExtractableSequences(f) > 0) {
    const size_t points =
        out->exposure_curves().empty() ? 0 : out->exposure_curves(0).points_size();
    MEMAUDIT_ASSIGN_OR_RETURN(const bool all, AddExtractableCurves(f, signals, points, out));
    complete = complete && all;
  }
  results.set_complete(complete);
  return results;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> RequiredForgettingSignals(
    const v1::ForgettingAudit& f) {
  if (forgetting::Construction(f)) return RequiredConstructionSignals(f);
  if (forgetting::Canaries(f)) {
    std::vector<std::pair<std::string, std::string>> out = {
        {forgetting::kCheckpointPoint, forgetting::kExposureCheckpoint}};
    for (uint64_t p : f.eval_points()) {
      for (const char* s : kCanaryPointSignals) out.emplace_back(absl::StrCat(p), s);
      if (forgetting::ExtractableSequences(f) > 0) {
        for (const char* s : kExtractedSignals) out.emplace_back(absl::StrCat(p), s);
      }
    }
    return out;
  }
  std::vector<std::pair<std::string, std::string>> out = {
      {forgetting::kCheckpointPoint, forgetting::kPhiCheckpoint},
      {forgetting::kCheckpointPoint, forgetting::kLossCheckpoint}};
  if (forgetting::SelectsByLoss(f)) {
    out.emplace_back(forgetting::kCheckpointPoint, forgetting::kSelectionLoss);
    out.emplace_back(forgetting::kCheckpointPoint, forgetting::kCandidateLossMean);
  }
  for (uint64_t p : f.eval_points()) {
    for (const char* s : {forgetting::kPhiInjected, forgetting::kPhiBaseline,
                          forgetting::kLossInjected, forgetting::kLossBaseline}) {
      out.emplace_back(absl::StrCat(p), s);
    }
    if (forgetting::Replays(f)) out.emplace_back(absl::StrCat(p), forgetting::kPhiReplay);
    for (uint32_t j = 0; j < forgetting::ReferenceModels(f); ++j) {
      out.emplace_back(absl::StrCat(p), forgetting::PhiReferenceSignal(j));
    }
    for (uint32_t j = 0; j < forgetting::InReferenceModels(f); ++j) {
      out.emplace_back(absl::StrCat(p), forgetting::PhiInReferenceSignal(j));
    }
  }
  return out;
}

absl::Status ValidateForgettingObservation(const v1::ForgettingAudit& f, const v1::Observation& o) {
  if (o.run() >= f.trials()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "observation.run: ", o.run(), " is outside the audit's ", f.trials(), " trials"));
  }
  if (forgetting::Construction(f)) return ValidateConstructionObservation(f, o);
  const bool canaries = forgetting::Canaries(f);
  const bool extracted =
      canaries && std::find(std::begin(kExtractedSignals), std::end(kExtractedSignals),
                            o.signal()) != std::end(kExtractedSignals);
  if (o.point() == forgetting::kCheckpointPoint) {
    if (canaries ? o.signal() != forgetting::kExposureCheckpoint
                 : !IsCheckpointSignal(f, o.signal())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "observation.signal: \"", o.signal(), "\" is not a checkpoint signal of this audit"));
    }
  } else {
    bool known = false;
    for (uint64_t p : f.eval_points()) known = known || o.point() == absl::StrCat(p);
    if (!known) {
      return absl::InvalidArgumentError(absl::StrCat(
          "observation.point: \"", o.point(), "\" is not an evaluation point of this audit"));
    }
    const bool known_signal =
        canaries ? std::find(std::begin(kCanaryPointSignals), std::end(kCanaryPointSignals),
                             o.signal()) != std::end(kCanaryPointSignals) ||
                       (extracted && forgetting::ExtractableSequences(f) > 0)
                 : IsPointSignal(f, o.signal());
    if (!known_signal) {
      return absl::InvalidArgumentError(
          absl::StrCat("observation.signal: \"", o.signal(), "\" is not a signal of this audit"));
    }
  }
  if (extracted) {
    if (static_cast<uint32_t>(o.values_size()) != forgetting::ExtractableSequences(f)) {
      return absl::InvalidArgumentError(
          absl::StrCat("observation.values: expected ", forgetting::ExtractableSequences(f),
                       " values (one per held-out sequence), got ", o.values_size()));
    }
    for (int i = 0; i < o.values_size(); ++i) {
      if (o.values(i) != 0 && o.values(i) != 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("observation.values[", i, "]: must be 0 or 1 (got ", o.values(i), ")"));
      }
    }
  } else if (canaries) {
    if (static_cast<uint32_t>(o.values_size()) != forgetting::CanaryCount(f)) {
      return absl::InvalidArgumentError(
          absl::StrCat("observation.values: expected ", forgetting::CanaryCount(f),
                       " values (one per canary), got ", o.values_size()));
    }
  } else if (o.signal() == forgetting::kCandidateLossMean) {
    if (o.values_size() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "observation.values: expected 1 value for candidate_loss_mean, got ", o.values_size()));
    }
  } else if (static_cast<uint32_t>(o.values_size()) != f.injected().size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("observation.values: expected ", f.injected().size(),
                     " values (one per injected example), got ", o.values_size()));
  }
  for (int i = 0; i < o.values_size(); ++i) {
    if (!std::isfinite(o.values(i))) {
      return absl::InvalidArgumentError(
          absl::StrCat("observation.values[", i, "]: not a finite number"));
    }
  }
  return absl::OkStatus();
}

namespace {

// The values of `signal` at `point` for `trial`; FAILED_PRECONDITION names
// what has not arrived yet.
absl::StatusOr<const std::vector<double>*> FindSignal(const ForgettingSignals& signals,
                                                      const std::string& point,
                                                      const std::string& signal, uint32_t trial) {
  const std::vector<double>* values = SignalOf(signals, point, signal, trial);
  if (values == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("missing ", signal, " at point ", point, " of trial ", trial));
  }
  return values;
}

// Every signal trial `t` sends at evaluation point `key`; nullopt while any
// of them is missing.
std::optional<TrialSignals> TrialAt(const v1::ForgettingAudit& f, const ForgettingSignals& signals,
                                    const std::string& key, uint32_t t) {
  const bool replay = forgetting::Replays(f);
  std::vector<const std::vector<double>*> v;
  for (auto [pt, s] : std::vector<std::pair<std::string, const char*>>{
           {forgetting::kCheckpointPoint, forgetting::kPhiCheckpoint},
           {forgetting::kCheckpointPoint, forgetting::kLossCheckpoint},
           {key, forgetting::kPhiInjected},
           {key, forgetting::kLossInjected},
           {key, forgetting::kPhiBaseline},
           {key, forgetting::kLossBaseline},
           {key, replay ? forgetting::kPhiReplay : forgetting::kPhiBaseline}}) {
    auto values = FindSignal(signals, pt, s, t);
    if (!values.ok()) return std::nullopt;
    v.push_back(*values);
  }
  TrialSignals trial{v[0], v[1], v[2], v[3], v[4], v[5], replay ? v[6] : nullptr, {}, {}};
  for (uint32_t j = 0; j < forgetting::ReferenceModels(f); ++j) {
    auto values = FindSignal(signals, key, forgetting::PhiReferenceSignal(j), t);
    if (!values.ok()) return std::nullopt;
    trial.phi_references.push_back(*values);
  }
  for (uint32_t j = 0; j < forgetting::InReferenceModels(f); ++j) {
    auto values = FindSignal(signals, key, forgetting::PhiInReferenceSignal(j), t);
    if (!values.ok()) return std::nullopt;
    trial.phi_in_references.push_back(*values);
  }
  return trial;
}

// The evaluation points every trial has reached, with their signals.
struct ReachedPoints {
  std::vector<uint64_t> steps;
  std::vector<std::vector<TrialSignals>> trials;  // per reached point
  std::vector<uint32_t> replay_exact;             // per reached point
  bool all = true;                                // every evaluation point reached
};

// Trials measure their points in ascending order, so the curve is the
// longest prefix of evaluation points that every trial has reached.
ReachedPoints Reached(const v1::ForgettingAudit& f, const ForgettingSignals& signals) {
  ReachedPoints out;
  for (uint64_t p : f.eval_points()) {
    const std::string key = absl::StrCat(p);
    std::vector<TrialSignals> trials;
    uint32_t exact = 0;
    for (uint32_t t = 0; t < f.trials(); ++t) {
      std::optional<TrialSignals> trial = TrialAt(f, signals, key, t);
      if (!trial.has_value()) break;
      if (trial->phi_replay != nullptr && *trial->phi_baseline == *trial->phi_replay) ++exact;
      trials.push_back(*std::move(trial));
    }
    if (trials.size() < f.trials()) {
      out.all = false;
      break;
    }
    out.steps.push_back(p);
    out.trials.push_back(std::move(trials));
    out.replay_exact.push_back(exact);
  }
  return out;
}

}  // namespace

absl::StatusOr<v1::AuditResults> ScoreForgetting(const v1::AuditSpec& spec,
                                                 const ForgettingSignals& signals) {
  const v1::ForgettingAudit& f = spec.forgetting();
  if (forgetting::Construction(f)) return ScoreConstruction(spec, signals);
  if (forgetting::Canaries(f)) return ScoreCanaries(spec, signals);
  auto get = [&](const std::string& point, const std::string& signal, uint32_t trial) {
    return FindSignal(signals, point, signal, trial);
  };
  const bool replay = forgetting::Replays(f);
  ReachedPoints reached = Reached(f, signals);
  const std::vector<uint64_t>& steps = reached.steps;
  const std::vector<std::vector<TrialSignals>>& reached_points = reached.trials;
  const std::vector<uint32_t>& replay_exact = reached.replay_exact;
  bool complete = reached.all;
  // The selection losses are part of the results: complete waits for them.
  for (uint32_t t = 0; forgetting::SelectsByLoss(f) && t < f.trials(); ++t) {
    if (!get(forgetting::kCheckpointPoint, forgetting::kSelectionLoss, t).ok() ||
        !get(forgetting::kCheckpointPoint, forgetting::kCandidateLossMean, t).ok()) {
      complete = false;
    }
  }
  v1::AuditResults results;
  results.set_kind(v1::FORGETTING);
  results.set_complete(complete);
  MEMAUDIT_ASSIGN_OR_RETURN(auto curve, Curve(f.attack(), f, steps, reached_points));
  results.set_models(2 * f.trials());
  results.set_examples(f.injected().size());
  results.set_members(static_cast<uint64_t>(f.trials()) * f.injected().size());
  results.set_non_members(static_cast<uint64_t>(f.trials()) * f.injected().size());
  v1::ForgettingResults* out = results.mutable_forgetting();
  out->set_strategy(f.strategy());
  out->set_attack(f.attack());
  out->set_fpr_target(f.fpr());
  out->set_trials(f.trials());
  out->set_injected_examples(f.injected().size());
  out->set_training_steps(forgetting::TrialSteps(f));
  out->set_selection(f.injected().selection().empty() ? "random" : f.injected().selection());
  out->set_reference_models(forgetting::ReferenceModels(f));
  out->set_in_reference_models(forgetting::InReferenceModels(f));
  out->set_lira_per_example_variance(forgetting::LiraAttack(f) && f.lira_per_example_variance());
  if (forgetting::SelectsByLoss(f)) {
    // Each trial picks its own Dp: the means over every trial's selection.
    double selected_sum = 0, candidate_sum = 0;
    size_t selected_count = 0;
    uint32_t trials_in = 0;
    for (uint32_t t = 0; t < f.trials(); ++t) {
      auto selected = get(forgetting::kCheckpointPoint, forgetting::kSelectionLoss, t);
      auto candidates = get(forgetting::kCheckpointPoint, forgetting::kCandidateLossMean, t);
      if (!selected.ok() || !candidates.ok() || (*selected)->empty()) continue;
      for (double l : **selected) selected_sum += l;
      selected_count += (*selected)->size();
      candidate_sum += (**candidates)[0];
      ++trials_in;
    }
    if (trials_in > 0) {
      out->set_selection_loss_mean(selected_sum / static_cast<double>(selected_count));
      out->set_candidate_loss_mean(candidate_sum / trials_in);
    }
  }
  AddCurve(curve, out->mutable_curve());
  if (replay) {
    for (int i = 0; i < out->curve_size(); ++i) {
      out->mutable_curve(i)->set_replay_exact_trials(replay_exact[i]);
    }
  }
  if (replay || forgetting::LiraAttack(f)) {
    // The standard attack on the same arms: what the replay (or the
    // references) add.
    MEMAUDIT_ASSIGN_OR_RETURN(auto standard,
                              Curve(forgetting::kStandardAttack, f, steps, reached_points));
    out->set_standard_attack(forgetting::kStandardAttack);
    AddCurve(standard, out->mutable_standard_curve());
  }
  if (f.attack() == forgetting::kLiraOnlineAttack) {
    // Offline LiRA on the same OUT references: what the IN references add.
    MEMAUDIT_ASSIGN_OR_RETURN(auto offline,
                              Curve(forgetting::kLiraAttack, f, steps, reached_points));
    out->set_offline_attack(forgetting::kLiraAttack);
    AddCurve(offline, out->mutable_offline_curve());
  }
  return results;
}

namespace {

// One curve's per-trial metrics, [point, trial] each, names prefixed.
void AddTrialMetrics(const std::string& prefix, const std::string& attack,
                     const std::vector<scoring::ForgettingCurvePoint>& curve, uint64_t trials,
                     std::vector<v1::ExportArray>* out) {
  struct Field {
    const char* name;
    const char* description;
    double (*get)(const scoring::TrialMetrics&);
  };
  static const Field kFields[] = {
      {"accuracy", "balanced accuracy, max over thresholds",
       [](const scoring::TrialMetrics& m) { return m.accuracy; }},
      {"auc", "ROC AUC, ties counted 1/2", [](const scoring::TrialMetrics& m) { return m.auc; }},
      {"tpr", "TPR at the largest-TPR threshold with FPR <= fpr_target",
       [](const scoring::TrialMetrics& m) { return m.tpr; }},
      {"fpr", "FPR at that threshold", [](const scoring::TrialMetrics& m) { return m.fpr; }},
      {"threshold", "that threshold (member when score >= threshold)",
       [](const scoring::TrialMetrics& m) { return m.threshold; }},
      {"precision", "precision at that threshold; 0 when nothing is predicted a member",
       [](const scoring::TrialMetrics& m) { return m.precision; }},
      {"epsilon", "ln(TPR / FPR) at that threshold, FPR clamped to 1/|Dp| when 0",
       [](const scoring::TrialMetrics& m) { return m.epsilon_clamped; }},
  };
  const uint64_t points = curve.size();
  for (const Field& field : kFields) {
    std::vector<double> values;
    values.reserve(points * trials);
    for (const scoring::ForgettingCurvePoint& p : curve) {
      for (const scoring::TrialMetrics& m : p.trials) values.push_back(field.get(m));
    }
    out->push_back(MakeExportArray(
        absl::StrCat(prefix, field.name), {"point", "trial"}, {points, trials}, v1::FLOAT64,
        absl::StrCat(attack, ": ", field.description), std::move(values)));
  }
}

// LM canaries: each trial's per-canary values at each evaluation point.
absl::StatusOr<std::vector<v1::ExportArray>> ExportCanaries(const v1::ForgettingAudit& f,
                                                            const ForgettingSignals& signals) {
  const uint64_t trials = f.trials(), canaries = forgetting::CanaryCount(f);
  const uint64_t points = f.eval_points_size();
  std::vector<v1::ExportArray> out;
  std::vector<double> steps(f.eval_points().begin(), f.eval_points().end());
  out.push_back(MakeExportArray("steps_since_injection", {"point"}, {points}, v1::INT64,
                                "clean training steps since the injection", std::move(steps)));
  std::vector<double> repeats;
  const v1::ForgettingCanaries& c = f.canaries();
  for (int g = 0; g < c.repeats_size(); ++g)
    repeats.insert(repeats.end(), c.per_group(), c.repeats(g));
  repeats.resize(canaries, 0);  // the controls
  out.push_back(MakeExportArray("canary_repeats", {"canary"}, {canaries}, v1::INT64,
                                "copies of the canary in the injection batch; 0 = a control",
                                std::move(repeats)));
  const struct {
    const char* signal;
    const char* name;
    v1::ExportDtype dtype;
    const char* description;
  } kArrays[] = {
      {forgetting::kExposureInjected, "exposure_injected", v1::FLOAT64,
       "exposure of the canary in the injected arm, bits"},
      {forgetting::kExposureBaseline, "exposure_baseline", v1::FLOAT64,
       "exposure of the canary in the baseline arm (never saw it), bits"},
      {forgetting::kExactInjected, "exact_injected", v1::UINT8,
       "1 when the injected arm's rank is exact, 0 when it hit rank_query_budget (a bound)"},
      {forgetting::kExactBaseline, "exact_baseline", v1::UINT8,
       "1 when the baseline arm's rank is exact"},
  };
  for (const auto& a : kArrays) {
    std::vector<double> values;
    values.reserve(points * trials * canaries);
    for (uint64_t p : f.eval_points()) {
      for (uint32_t t = 0; t < trials; ++t) {
        MEMAUDIT_ASSIGN_OR_RETURN(const std::vector<double>* v,
                                  FindSignal(signals, absl::StrCat(p), a.signal, t));
        if (v->size() != canaries) {
          return absl::FailedPreconditionError(absl::StrCat(a.signal, " has the wrong length"));
        }
        values.insert(values.end(), v->begin(), v->end());
      }
    }
    out.push_back(MakeExportArray(a.name, {"point", "trial", "canary"}, {points, trials, canaries},
                                  a.dtype, a.description, std::move(values)));
  }
  const uint64_t sequences = forgetting::ExtractableSequences(f);
  if (sequences == 0) return out;
  // Extractable memorization: each held-out sequence's group and whether it
  // came back, per point, trial and arm.
  std::vector<double> duplicates;
  const v1::ExtractableSpec& x = c.extractable();
  for (uint32_t d : x.duplicates()) duplicates.insert(duplicates.end(), x.sequences(), d);
  duplicates.resize(sequences, 0);  // the controls
  out.push_back(MakeExportArray("sequence_duplicates", {"sequence"}, {sequences}, v1::INT64,
                                "times the held-out sequence was inserted; 0 = a control",
                                std::move(duplicates)));
  for (const char* signal : kExtractedSignals) {
    std::vector<double> values;
    values.reserve(points * trials * sequences);
    for (uint64_t p : f.eval_points()) {
      for (uint32_t t = 0; t < trials; ++t) {
        MEMAUDIT_ASSIGN_OR_RETURN(const std::vector<double>* v,
                                  FindSignal(signals, absl::StrCat(p), signal, t));
        if (v->size() != sequences) {
          return absl::FailedPreconditionError(absl::StrCat(signal, " has the wrong length"));
        }
        values.insert(values.end(), v->begin(), v->end());
      }
    }
    const bool injected = std::string(signal) == forgetting::kExtractedInjected;
    out.push_back(MakeExportArray(
        signal, {"point", "trial", "sequence"}, {points, trials, sequences}, v1::UINT8,
        injected ? "1 when greedy decoding gave the sequence back in the injected arm"
                 : "1 when greedy decoding gave the sequence back in the baseline arm",
        std::move(values)));
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<v1::ExportArray>> ForgettingExport(const v1::AuditSpec& spec,
                                                              const ForgettingSignals& signals) {
  const v1::ForgettingAudit& f = spec.forgetting();
  if (forgetting::Construction(f)) return ConstructionExport(spec, signals);
  if (forgetting::Canaries(f)) return ExportCanaries(f, signals);
  const ReachedPoints reached = Reached(f, signals);
  if (!reached.all) return absl::FailedPreconditionError("forgetting: evaluation points missing");
  const uint64_t points = reached.steps.size(), trials = f.trials();
  const uint64_t examples = f.injected().size();
  std::vector<v1::ExportArray> out;
  out.push_back(MakeExportArray("steps_since_injection", {"point"}, {points}, v1::INT64,
                                "clean training steps since the injection (Poison: since Dp was "
                                "removed)",
                                std::vector<double>(reached.steps.begin(), reached.steps.end())));
  // Each arm's attack scores of Dp: what every per-trial metric is computed from.
  MEMAUDIT_ASSIGN_OR_RETURN(const auto scored,
                            ArmPoints(f.attack(), f, reached.steps, reached.trials));
  for (const bool injected_arm : {true, false}) {
    std::vector<double> values;
    values.reserve(points * trials * examples);
    for (const scoring::ForgettingEvalPoint& point : scored) {
      for (const scoring::TrialScores& t : point.trials) {
        const std::vector<double>& scores = injected_arm ? t.injected : t.baseline;
        values.insert(values.end(), scores.begin(), scores.end());
      }
    }
    out.push_back(MakeExportArray(
        injected_arm ? "score_injected" : "score_baseline", {"point", "trial", "example"},
        {points, trials, examples}, v1::FLOAT64,
        absl::StrCat(f.attack(), " score of each Dp example under the ",
                     injected_arm ? "injected arm (members)" : "baseline arm (non-members)"),
        std::move(values)));
  }
  MEMAUDIT_ASSIGN_OR_RETURN(auto curve, CurveOf(f, scored));
  AddTrialMetrics("", f.attack(), curve, trials, &out);
  if (forgetting::Replays(f) || forgetting::LiraAttack(f)) {
    MEMAUDIT_ASSIGN_OR_RETURN(auto standard,
                              Curve(forgetting::kStandardAttack, f, reached.steps, reached.trials));
    AddTrialMetrics("standard_", forgetting::kStandardAttack, standard, trials, &out);
  }
  if (f.attack() == forgetting::kLiraOnlineAttack) {
    MEMAUDIT_ASSIGN_OR_RETURN(auto offline,
                              Curve(forgetting::kLiraAttack, f, reached.steps, reached.trials));
    AddTrialMetrics("offline_", forgetting::kLiraAttack, offline, trials, &out);
  }
  return out;
}

uint64_t ForgettingProgress(const v1::AuditResults& results) {
  const v1::ForgettingResults& f = results.forgetting();
  uint64_t points = f.curve_size() + f.construction_curve_size();
  for (const v1::ForgettingExposureCurve& c : f.exposure_curves()) points += c.points_size();
  return points == 0 ? 0 : points + (results.complete() ? 1 : 0);
}

namespace {

// LM canaries: the exposure curves, and with extractable the fractions
// extracted.
void PublishCanaryCurves(prometheus::Registry* metrics, const v1::AuditResults& results,
                         const std::string& team) {
  const v1::ForgettingResults& f = results.forgetting();
  if (f.exposure_curves().empty()) return;
  // LM canaries: the exposure curves, labelled like the MI curve above plus
  // the group (repeats, 0 = controls) and the arm: at most 17 groups x 64
  // points x 2 arms per audit.
  auto& exposure = metrics::AddGauge(
      *metrics, "memaudit_forgetting_canary_exposure_log2",
      "Mean canary exposure log2|R| - log2 rank (bits) of the canaries inserted `repeats` "
      "times (0 = never-inserted controls), by arm and steps since injection, mean over "
      "trials.");
  metrics::AddGauge(*metrics, "memaudit_forgetting_canary_space_log2",
                    "log2|R|, the largest exposure the canary space allows.")
      .Add({{"audit", results.audit_id()}, {"team", team}})
      .Set(f.log2_space());
  auto& exposure_low = metrics::AddGauge(
      *metrics, "memaudit_forgetting_canary_exposure_low_log2",
      "Low end of the 95% interval over trials of memaudit_forgetting_canary_exposure_log2.");
  auto& exposure_high = metrics::AddGauge(
      *metrics, "memaudit_forgetting_canary_exposure_high_log2",
      "High end of the 95% interval over trials of memaudit_forgetting_canary_exposure_log2.");
  for (const v1::ForgettingExposureCurve& c : f.exposure_curves()) {
    for (const v1::ForgettingExposurePoint& p : c.points()) {
      prometheus::Labels labels = {
          {"audit", results.audit_id()},
          {"team", team},
          {"strategy", f.strategy()},
          {"repeats", absl::StrCat(c.repeats())},
          {"steps_since_injection", absl::StrCat(p.steps_since_injection())},
          {"arm", "injected"}};
      exposure.Add(labels).Set(p.exposure().mean());
      exposure_low.Add(labels).Set(p.exposure().low());
      exposure_high.Add(labels).Set(p.exposure().high());
      labels["arm"] = "baseline";
      exposure.Add(labels).Set(p.baseline_exposure().mean());
      exposure_low.Add(labels).Set(p.baseline_exposure().low());
      exposure_high.Add(labels).Set(p.baseline_exposure().high());
    }
  }
  if (f.extractable_curves().empty()) return;
  // Extractable memorization, labelled like the exposure curves with the
  // group (duplicates, 0 = controls): at most 17 groups x 64 points x 2 arms.
  auto& extractable = metrics::AddGauge(
      *metrics, "memaudit_forgetting_extractable_ratio",
      "Fraction of the held-out sequences inserted `duplicates` times (0 = never-inserted "
      "controls) that greedy decoding continues exactly from their prefix, by arm and steps "
      "since injection, mean over trials.");
  for (const v1::ForgettingExtractableCurve& c : f.extractable_curves()) {
    for (const v1::ForgettingExtractablePoint& p : c.points()) {
      prometheus::Labels labels = {
          {"audit", results.audit_id()},
          {"team", team},
          {"strategy", f.strategy()},
          {"duplicates", absl::StrCat(c.duplicates())},
          {"steps_since_injection", absl::StrCat(p.steps_since_injection())},
          {"arm", "injected"}};
      extractable.Add(labels).Set(p.fraction().mean());
      labels["arm"] = "baseline";
      extractable.Add(labels).Set(p.baseline_fraction().mean());
    }
  }
}

}  // namespace

void PublishForgetting(prometheus::Registry* metrics, const v1::AuditResults& results,
                       const std::string& team) {
  if (metrics == nullptr || !results.has_forgetting()) return;
  const v1::ForgettingResults& f = results.forgetting();
  auto& accuracy = metrics::AddGauge(
      *metrics, "memaudit_forgetting_mi_accuracy_ratio",
      "Membership-inference accuracy on the injected examples by steps since injection, "
      "mean over trials: the forgetting curve.");
  auto& tpr = metrics::AddGauge(*metrics, "memaudit_forgetting_tpr_ratio",
                                "TPR at FPR <= fpr by steps since injection, mean over trials.");
  auto& epsilon = metrics::AddGauge(
      *metrics, "memaudit_forgetting_epsilon_lower_bound",
      "Empirical epsilon ln(TPR/FPR) at the fpr operating point, mean over trials.");
  const std::string fpr = absl::StrFormat("%g", f.fpr_target());
  // The curve's 95% interval over trials (Student t), as two gauges labelled
  // like the mean, so a dashboard draws the band between them.
  auto& accuracy_low = metrics::AddGauge(
      *metrics, "memaudit_forgetting_mi_accuracy_low_ratio",
      "Low end of the 95% interval over trials of memaudit_forgetting_mi_accuracy_ratio.");
  auto& accuracy_high = metrics::AddGauge(
      *metrics, "memaudit_forgetting_mi_accuracy_high_ratio",
      "High end of the 95% interval over trials of memaudit_forgetting_mi_accuracy_ratio.");
  for (const v1::ForgettingCurvePoint& p : f.curve()) {
    prometheus::Labels labels = {
        {"audit", results.audit_id()},
        {"team", team},
        {"strategy", f.strategy()},
        {"steps_since_injection", absl::StrCat(p.steps_since_injection())}};
    accuracy.Add(labels).Set(p.accuracy().mean());
    accuracy_low.Add(labels).Set(p.accuracy().low());
    accuracy_high.Add(labels).Set(p.accuracy().high());
    labels["fpr"] = fpr;
    tpr.Add(labels).Set(p.tpr().mean());
    if (std::isfinite(p.epsilon().mean())) epsilon.Add(labels).Set(p.epsilon().mean());
  }
  // A construction's fixed adversary, its Clopper-Pearson interval as the
  // band; strategy is the construction's name.
  for (const v1::ForgettingConstructionPoint& p : f.construction_curve()) {
    const prometheus::Labels labels = {
        {"audit", results.audit_id()},
        {"team", team},
        {"strategy", f.construction()},
        {"steps_since_injection", absl::StrCat(p.steps_since_injection())}};
    accuracy.Add(labels).Set(p.accuracy());
    accuracy_low.Add(labels).Set(p.accuracy_low());
    accuracy_high.Add(labels).Set(p.accuracy_high());
  }
  PublishCanaryCurves(metrics, results, team);
}

namespace {

absl::StatusOr<ForgettingSignals> LoadForgettingSignals(ScorerStore& store,
                                                        const std::string& audit_id,
                                                        const v1::AuditSpec& spec) {
  ForgettingSignals signals;
  for (const auto& [point, name] : RequiredForgettingSignals(spec.forgetting())) {
    MEMAUDIT_ASSIGN_OR_RETURN(auto runs, store.LoadSignal(audit_id, point, name));
    if (!runs.empty()) signals[{point, name}] = std::move(runs);
  }
  return signals;
}

class Forgetting final : public KindHandler {
 public:
  absl::Status ValidateObservation(const v1::AuditSpec& spec,
                                   const v1::Observation& o) const override {
    return ValidateForgettingObservation(spec.forgetting(), o);
  }

  absl::StatusOr<std::optional<v1::AuditResults>> Score(ScorerStore& store,
                                                        const std::string& audit_id,
                                                        const v1::AuditSpec& spec) const override {
    if (forgetting::Construction(spec.forgetting())) {
      // A construction's trial sends every point at once, in microseconds:
      // nothing to score until the last trial's last point is in (one read,
      // not every signal of every trial after each trial).
      const v1::ForgettingAudit& f = spec.forgetting();
      MEMAUDIT_ASSIGN_OR_RETURN(
          auto last,
          store.LoadSignal(audit_id, absl::StrCat(f.eval_points(f.eval_points_size() - 1)),
                           forgetting::kArmsIdentical));
      if (last.size() < f.trials()) return std::nullopt;
    }
    // Whatever has arrived: the curve covers every point all trials have reached.
    MEMAUDIT_ASSIGN_OR_RETURN(ForgettingSignals signals,
                              LoadForgettingSignals(store, audit_id, spec));
    MEMAUDIT_ASSIGN_OR_RETURN(auto results, ScoreForgetting(spec, signals));
    if (ForgettingProgress(results) == 0) return std::nullopt;
    MEMAUDIT_ASSIGN_OR_RETURN(auto stored, store.GetResults(audit_id));
    if (stored.has_value() && ForgettingProgress(*stored) == ForgettingProgress(results)) {
      return std::nullopt;  // no new point since the last computation
    }
    return results;
  }

  absl::StatusOr<std::vector<v1::ExportArray>> Export(ScorerStore& store,
                                                      const std::string& audit_id,
                                                      const v1::AuditSpec& spec) const override {
    MEMAUDIT_ASSIGN_OR_RETURN(ForgettingSignals signals,
                              LoadForgettingSignals(store, audit_id, spec));
    return ForgettingExport(spec, signals);
  }

  // One task per trial, run = the trial.
  absl::StatusOr<TaskRef> TaskOf(const v1::AuditSpec& spec,
                                 const v1::Observation& o) const override {
    if (o.run() >= spec.forgetting().trials()) {
      return absl::InvalidArgumentError(absl::StrCat("observation.run: ", o.run(),
                                                     " is outside the audit's ",
                                                     spec.forgetting().trials(), " trials"));
    }
    return TaskRef{forgetting::kTrialRole, o.run()};
  }

  absl::StatusOr<std::vector<ObservationKey>> TaskObservations(ScorerStore& /*store*/,
                                                               const std::string& /*audit_id*/,
                                                               const v1::AuditSpec& spec,
                                                               const TaskRef& task) const override {
    if (task.role != forgetting::kTrialRole || task.index >= spec.forgetting().trials()) {
      return absl::InvalidArgumentError(
          absl::StrCat("task ", task.ToString(), " is not a task of this forgetting audit"));
    }
    std::vector<ObservationKey> out;
    for (const auto& [point, signal] : RequiredForgettingSignals(spec.forgetting())) {
      out.push_back({task.index, point, signal});
    }
    return out;
  }

  bool Streams() const override { return true; }

  v1::AuditResults Placeholder(const v1::AuditSpec& spec) const override {
    v1::AuditResults partial;
    partial.set_kind(v1::FORGETTING);
    partial.set_models(2 * spec.forgetting().trials());
    partial.set_examples(spec.forgetting().injected().size());
    return partial;
  }

  std::vector<v1::ResultWarning> Warnings(const v1::AuditSpec& spec) const override {
    return ForgettingWarnings(spec.forgetting());
  }

  void Publish(prometheus::Registry& registry, const v1::AuditResults& results,
               const std::string& team) const override {
    PublishForgetting(&registry, results, team);
  }
};

}  // namespace

}  // namespace memaudit::scorer

namespace memaudit {

template <>
const scorer::KindHandler& HandlerOfKind<scorer::KindHandler, v1::AuditSpec::kForgetting>() {
  static const scorer::Forgetting handler;
  return handler;
}

}  // namespace memaudit
