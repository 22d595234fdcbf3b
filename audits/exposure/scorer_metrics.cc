#include "audits/exposure/scorer_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>

#include "absl/strings/str_cat.h"
#include "audits/exposure/scorer_replicates.h"
#include "audits/exposure/signals.h"
#include "common/base/status_macros.h"
#include "common/training/exposure_eval_steps.h"
#include "scoring/exposure.h"
#include "scoring/intervals.h"
#include "scoring/mann_whitney_interval.h"
#include "scoring/matrix.h"
#include "scoring/roc.h"
#include "scoring/skew_normal.h"
#include "services/scorer/result_warnings.h"
#include "spec/spec_rules.h"

namespace memaudit::scorer {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// One model's signals: signal -> values.
using ModelSignals = std::map<std::string, std::vector<double>>;

size_t CanaryCount(const v1::ExposureAudit& e) { return e.repeats_size() + e.controls(); }

bool IsPerCanary(const std::string& signal) {
  return signal == exposure::kRepeats || signal == exposure::kPxBits || signal == exposure::kRank ||
         signal == exposure::kExact || signal == exposure::kRankQueries ||
         signal == exposure::kSpaceIndex;
}

bool IsPerExtractable(const std::string& signal) {
  if (signal == exposure::kExtractableDuplicates || signal == exposure::kExtractableExtracted ||
      signal == exposure::kExtractableMatched) {
    return true;
  }
  for (const auto& [score, attack] : exposure::SequenceMembershipAttacks()) {
    if (signal == score) return true;
  }
  return false;
}

bool IsBytes(double v) { return v >= 0 && v <= 255 && v == std::floor(v); }

bool HasEstimator(const v1::ExposureResults& x, const char* estimator) {
  return std::find(x.estimators().begin(), x.estimators().end(), estimator) != x.estimators().end();
}

std::string DecodeBytes(const std::vector<double>& values, size_t from) {
  std::string out;
  for (size_t i = from; i < values.size(); ++i) out.push_back(static_cast<char>(values[i]));
  return out;
}

double Median(std::vector<double> v) {
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double Mean(const std::vector<double>& v) {
  if (v.empty()) return kNaN;
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

// Bins for the report's plot of the reference Px against the skew-normal fit.
constexpr int kPxHistogramBins = 40;

// Equal bins over [min, max], the maximum in the last bin; when every value
// is the same, bins over [v - 0.5, v + 0.5]. `px` is non-empty and finite.
v1::PxHistogram PxHistogramOf(const std::vector<double>& px) {
  const auto [lo, hi] = std::minmax_element(px.begin(), px.end());
  v1::PxHistogram h;
  h.set_bin_width(*hi > *lo ? (*hi - *lo) / kPxHistogramBins : 1.0 / kPxHistogramBins);
  h.set_low(*hi > *lo ? *lo : *lo - 0.5);
  std::vector<uint64_t> counts(kPxHistogramBins, 0);
  for (double v : px) {
    const int bin = static_cast<int>(std::floor((v - h.low()) / h.bin_width()));
    ++counts[std::clamp(bin, 0, kPxHistogramBins - 1)];
  }
  h.mutable_counts()->Add(counts.begin(), counts.end());
  return h;
}

bool IsPoint(const v1::ExposureAudit& e, const std::string& point) {
  const std::vector<std::string> points = exposure::PointsOf(e);
  if (std::find(points.begin(), points.end(), point) != points.end()) return true;
  // An evaluation point of the canary model: "step/<n>", n a multiple of k
  // with eval_every_steps (per epoch, the epoch length is known only from
  // the final model's step count: checked when scoring).
  const uint64_t step = exposure::StepOfPoint(point);
  if (step == 0 || !exposure::HasEvalPoints(e)) return false;
  return !e.has_eval_every_steps() ||
         (e.eval_every_steps() > 0 && step % e.eval_every_steps() == 0);
}

// The evaluation steps before the final model of variant `v`, from its
// canary model's training step count.
absl::StatusOr<std::vector<uint64_t>> EvalStepsOf(const v1::ExposureAudit& e, uint32_t v,
                                                  uint64_t training_steps) {
  const uint32_t epochs = exposure::ResolveVariant(e, v).epochs;
  std::vector<uint64_t> steps = exposure::IntermediateEvalSteps(
      training_steps, epochs, e.has_eval_every_steps() ? e.eval_every_steps() : 0,
      e.eval_every_epoch());
  if (steps.size() >= exposure::kMaxEvalPoints) {
    return absl::InvalidArgumentError(absl::StrCat("observation.values: model: ", training_steps,
                                                   " training steps give more than ",
                                                   exposure::kMaxEvalPoints, " evaluation points"));
  }
  return steps;
}

// Mean and median exact exposure per insertion count at one curve point.
void AddCurveGroups(const v1::ExposureResults& x, v1::ExposureCurvePoint* point) {
  std::map<uint32_t, std::vector<double>> groups;
  for (int i = 0; i < x.canaries_size() && i < point->exposure_size(); ++i) {
    groups[x.canaries(i).repeats()].push_back(point->exposure(i));
  }
  for (const auto& [r, values] : groups) {
    v1::ExposureByRepeats* g = point->add_by_repeats();
    g->set_repeats(r);
    g->set_canaries(static_cast<uint32_t>(values.size()));
    g->set_mean_exposure(Mean(values));
    g->set_median_exposure(Median(values));
    if (r == 0) point->set_control_median_exposure(g->median_exposure());
  }
}

// Forward declaration: defined with the other per-model helpers below.
std::optional<ModelSignals> ModelAt(const v1::ExposureAudit& e, const ExposureSignals& signals,
                                    const std::string& point, uint32_t v);

// The canary model's exposure curve (spec eval_every_steps / eval_every_epoch):
// every evaluation point, then the final model. False while a point is missing.
absl::StatusOr<bool> AddCurve(const v1::ExposureAudit& e, const ExposureSignals& signals,
                              uint32_t v, v1::ExposureResults* out) {
  MEMAUDIT_ASSIGN_OR_RETURN(std::vector<uint64_t> steps, EvalStepsOf(e, v, out->training_steps()));
  for (uint64_t step : steps) {
    const std::string name = exposure::StepPoint(step);
    std::optional<ModelSignals> m = ModelAt(e, signals, name, v);
    if (!m) return false;
    const std::vector<double>& px = m->at(exposure::kPxBits);
    const std::vector<double>& rank = m->at(exposure::kRank);
    const std::vector<double>& exact = m->at(exposure::kExact);
    if (px.size() != static_cast<size_t>(out->canaries_size()) || rank.size() != px.size() ||
        exact.size() != px.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("observation.values: point \"", name, "\": shapes do not match the spec"));
    }
    v1::ExposureCurvePoint* point = out->add_curve();
    point->set_step(step);
    for (size_t i = 0; i < px.size(); ++i) {
      MEMAUDIT_ASSIGN_OR_RETURN(
          scoring::ExposureResult x,
          scoring::ExposureFromRank(out->log2_space(), static_cast<uint64_t>(rank[i])));
      point->add_px_bits(px[i]);
      point->add_rank(static_cast<uint64_t>(rank[i]));
      point->add_exact(exact[i] != 0);
      point->add_exposure(x.exposure);
    }
    AddCurveGroups(*out, point);
  }
  v1::ExposureCurvePoint* last = out->add_curve();
  last->set_step(out->training_steps());
  for (const v1::CanaryResult& c : out->canaries()) {
    last->add_px_bits(c.px_bits());
    last->add_rank(c.rank());
    last->add_exact(c.exact());
    last->add_exposure(c.exposure());
  }
  AddCurveGroups(*out, last);
  return true;
}

absl::StatusOr<std::vector<std::string>> SecretsOf(const ModelSignals& m, size_t count,
                                                   const std::string& model) {
  std::vector<std::string> secrets;
  const std::string all = DecodeBytes(m.at(exposure::kSecretsUtf8), 0);
  for (size_t start = 0, end; (end = all.find('\n', start)) != std::string::npos; start = end + 1) {
    secrets.push_back(all.substr(start, end - start));
  }
  if (secrets.size() != count) {
    return absl::InvalidArgumentError(absl::StrCat(model, " secrets_utf8: wrong count"));
  }
  return secrets;
}

// A canary-free model must have scored the canary model's canaries: every
// model of an audit draws them from the same seed.
absl::Status SameSecrets(const ModelSignals& m, const std::vector<std::string>& secrets,
                         const std::string& model) {
  MEMAUDIT_ASSIGN_OR_RETURN(std::vector<std::string> own, SecretsOf(m, secrets.size(), model));
  if (own != secrets) {
    return absl::InvalidArgumentError(
        absl::StrCat(model, " secrets_utf8: not the canary model's canaries"));
  }
  return absl::OkStatus();
}

// The skew-normal fit of a reference sample; nullopt when it fails (e.g. a
// degenerate sample): the extrapolated numbers are then NaN rather than
// blocking the audit's other results.
std::optional<scoring::SkewNormalFit> FitReferences(const std::vector<double>& refs) {
  absl::StatusOr<scoring::SkewNormalFit> f = scoring::FitSkewNormal(refs);
  if (!f.ok()) return std::nullopt;
  return *std::move(f);
}

// How well `scores` (one per held-out sequence, higher = more member-like)
// tell the sequences inserted `times` times from the never-inserted
// controls: the AUC with its 95% interval, as `attack`. The sequences are
// independent and few: the score-type interval, which stays an interval at
// an AUC of 0 or 1 (scoring/mann_whitney_interval.h).
absl::Status AddMembershipAuc(const std::string& attack, const std::vector<double>& all,
                              const std::vector<double>& duplicates, uint32_t times,
                              v1::ExtractableGroup* group) {
  std::vector<double> scores;
  std::vector<uint8_t> is_member;
  for (size_t i = 0; i < duplicates.size(); ++i) {
    if (duplicates[i] != times && duplicates[i] != 0) continue;
    scores.push_back(all[i]);
    is_member.push_back(duplicates[i] == times ? 1 : 0);
  }
  const uint64_t members = std::count(is_member.begin(), is_member.end(), 1);
  MEMAUDIT_ASSIGN_OR_RETURN(const double auc, scoring::Auc(scores, is_member));
  MEMAUDIT_ASSIGN_OR_RETURN(
      const scoring::Interval interval,
      scoring::MannWhitneyScoreInterval(auc, members, is_member.size() - members));
  v1::SequenceMembership* m = group->add_membership();
  m->set_attack(attack);
  m->set_auc(auc);
  m->set_auc_low(interval.lo);
  m->set_auc_high(interval.hi);
  return absl::OkStatus();
}

// The reference-free attacks under the canary model alone.
absl::Status AddSequenceMembership(const ModelSignals& signals,
                                   const std::vector<double>& duplicates, uint32_t times,
                                   v1::ExtractableGroup* group) {
  for (const auto& [signal, attack] : exposure::SequenceMembershipAttacks()) {
    MEMAUDIT_RETURN_IF_ERROR(
        AddMembershipAuc(attack, signals.at(signal), duplicates, times, group));
  }
  return absl::OkStatus();
}

// The attacks that read the reference models too (trained without any
// held-out sequence) on each sequence's loss score l (its mean
// log-probability): `reference`, l_target - mean_j l_j (difficulty
// calibration), and with at least 2 references `lira_offline`,
// (l_target - mean_j l_j) / sd_j l_j (sample sd, at least kMinScoreSd), for
// every inserted group that has controls.
absl::Status AddReferenceSequenceMembership(const ModelSignals& canary,
                                            const std::vector<ModelSignals>& references,
                                            v1::ExposureResults* x) {
  constexpr double kMinScoreSd = 1e-6;
  const std::vector<double>& duplicates = canary.at(exposure::kExtractableDuplicates);
  const std::vector<double>& target = canary.at(exposure::kExtractableLoss);
  const size_t n = target.size();
  std::vector<double> calibrated(n), lira(n);
  for (size_t i = 0; i < n; ++i) {
    std::vector<double> out;
    out.reserve(references.size());
    for (const ModelSignals& r : references) out.push_back(r.at(exposure::kExtractableLoss).at(i));
    const double mean = std::accumulate(out.begin(), out.end(), 0.0) / out.size();
    calibrated[i] = target[i] - mean;
    if (out.size() >= exposure::kLiraOfflineMinReferences) {
      lira[i] = calibrated[i] / std::max(scoring::SampleStandardDeviation(out), kMinScoreSd);
    }
  }
  for (v1::ExtractableGroup& g : *x->mutable_extractable()) {
    if (g.duplicates() == 0 || g.membership_size() == 0) continue;
    MEMAUDIT_RETURN_IF_ERROR(
        AddMembershipAuc(exposure::kReferenceAttack, calibrated, duplicates, g.duplicates(), &g));
    if (references.size() >= exposure::kLiraOfflineMinReferences) {
      MEMAUDIT_RETURN_IF_ERROR(
          AddMembershipAuc(exposure::kLiraOfflineAttack, lira, duplicates, g.duplicates(), &g));
    }
  }
  return absl::OkStatus();
}

// Extractable memorization: per group of held-out sequences (ascending
// insertions, then the never-inserted controls) the fraction the canary model
// reproduced exactly, with its Clopper-Pearson 95% interval.
absl::Status AddExtractable(const ModelSignals& signals, v1::ExposureResults* out) {
  const std::vector<double>& duplicates = signals.at(exposure::kExtractableDuplicates);
  const std::vector<double>& extracted = signals.at(exposure::kExtractableExtracted);
  const std::vector<double>& matched = signals.at(exposure::kExtractableMatched);
  struct Tally {
    uint32_t sequences = 0, extracted = 0;
    double matched = 0;
  };
  std::map<uint32_t, Tally> groups;
  for (size_t i = 0; i < duplicates.size(); ++i) {
    Tally& t = groups[static_cast<uint32_t>(duplicates[i])];
    ++t.sequences;
    t.extracted += extracted[i] != 0;
    t.matched += matched[i];
  }
  std::vector<std::pair<uint32_t, Tally>> ordered(groups.begin(), groups.end());
  std::rotate(ordered.begin(), ordered.begin() + (groups.count(0) > 0 ? 1 : 0), ordered.end());
  for (const auto& [times, t] : ordered) {
    v1::ExtractableGroup* g = out->add_extractable();
    if (times > 0 && groups.count(0) > 0) {
      MEMAUDIT_RETURN_IF_ERROR(AddSequenceMembership(signals, duplicates, times, g));
    }
    g->set_duplicates(times);
    g->set_sequences(t.sequences);
    g->set_extracted(t.extracted);
    g->set_fraction(static_cast<double>(t.extracted) / t.sequences);
    MEMAUDIT_ASSIGN_OR_RETURN(scoring::Interval ci,
                              scoring::ClopperPearson(t.extracted, t.sequences));
    g->set_fraction_low(ci.lo);
    g->set_fraction_high(ci.hi);
    g->set_mean_matched_chars(t.matched / t.sequences);
  }
  return absl::OkStatus();
}

// One variant's canary model: the pre-sweep results, without by_repeats.
absl::StatusOr<v1::ExposureResults> ScoreCanaryModel(const v1::ExposureAudit& e,
                                                     const ModelSignals& signals,
                                                     std::vector<std::string>* secrets_out) {
  const std::vector<double>& repeats = signals.at(exposure::kRepeats);
  const std::vector<double>& px = signals.at(exposure::kPxBits);
  const std::vector<double>& rank = signals.at(exposure::kRank);
  const std::vector<double>& exact = signals.at(exposure::kExact);
  const std::vector<double>& queries = signals.at(exposure::kRankQueries);
  const std::vector<double>& model = signals.at(exposure::kModel);
  const std::vector<double>& extraction = signals.at(exposure::kExtraction);
  const size_t count = CanaryCount(e);
  if (px.size() != count || model.size() != exposure::kModelValues) {
    return absl::InvalidArgumentError("observations: shapes do not match the spec");
  }
  MEMAUDIT_ASSIGN_OR_RETURN(std::vector<std::string> found,
                            SecretsOf(signals, count, "canary model"));
  const std::vector<std::string>& secrets = found;
  *secrets_out = secrets;

  v1::ExposureResults out;
  const double log2_space = model[0];
  out.set_log2_space(log2_space);
  out.set_training_steps(static_cast<uint64_t>(model[1]));
  out.set_final_loss(model[2]);
  const bool sampled = e.estimator() == "sampled" || e.estimator() == "all";
  const bool extrapolated = e.estimator() == "extrapolated" || e.estimator() == "all";
  // The exact rank is always computed (bounded by the query budget): it is
  // what the extraction check and the headline "rank 1" rest on.
  out.add_estimators("exact");
  if (sampled) out.add_estimators("sampled");
  if (extrapolated) out.add_estimators("extrapolated");

  std::vector<double> refs;
  if (exposure::NeedsReferences(e.estimator())) refs = signals.at(exposure::kReferencePxBits);
  out.set_reference_samples(static_cast<uint32_t>(refs.size()));
  out.set_log2_reference_samples(refs.empty() ? 0 : std::log2(static_cast<double>(refs.size())));
  if (!refs.empty()) *out.mutable_reference_px_histogram() = PxHistogramOf(refs);
  const std::optional<scoring::SkewNormalFit> f = extrapolated ? FitReferences(refs) : std::nullopt;
  const bool fitted = f.has_value();
  const scoring::SkewNormalParams fit = fitted ? f->params : scoring::SkewNormalParams{};
  if (fitted) {
    out.set_fit_location(fit.location);
    out.set_fit_scale(fit.scale);
    out.set_fit_shape(fit.shape);
    out.set_fit_ks_statistic(f->ks.statistic);
    out.set_fit_ks_p_value(f->ks.p_value);
  }

  for (size_t i = 0; i < count; ++i) {
    v1::CanaryResult* c = out.add_canaries();
    c->set_secret(secrets[i]);
    c->set_repeats(static_cast<uint32_t>(repeats[i]));
    c->set_px_bits(px[i]);
    c->set_rank(static_cast<uint64_t>(rank[i]));
    c->set_exact(exact[i] != 0);
    c->set_rank_queries(static_cast<uint64_t>(queries[i]));
    MEMAUDIT_ASSIGN_OR_RETURN(scoring::ExposureResult x,
                              scoring::ExposureFromRank(log2_space, c->rank()));
    c->set_exposure(x.exposure);
    if (sampled) {
      MEMAUDIT_ASSIGN_OR_RETURN(scoring::ExposureResult s, scoring::SampledExposure(refs, px[i]));
      c->set_sampled_exposure(s.exposure);
      c->set_sampled_lower_bound(s.lower_bound);
      c->set_sampled_exposure_low(std::min(s.low, log2_space));
      c->set_sampled_exposure_high(std::min(s.high, log2_space));
    }
    c->set_extrapolated_exposure(!extrapolated ? 0
                                 : fitted      ? scoring::ExtrapolatedExposure(fit, px[i])
                                               : kNaN);
  }

  out.set_extraction_attempted(extraction[0] != 0);
  out.set_extracted(extraction[1] != 0);
  out.set_extraction_queries(static_cast<uint64_t>(extraction[2]));
  out.set_extraction(DecodeBytes(extraction, exposure::kExtractionHeader));
  if (e.repeats_size() > 0) {
    const int most = static_cast<int>(std::max_element(e.repeats().begin(), e.repeats().end()) -
                                      e.repeats().begin());
    out.set_extraction_target(secrets[most]);
  }
  if (e.has_extractable()) MEMAUDIT_RETURN_IF_ERROR(AddExtractable(signals, &out));
  return out;
}

// The baseline model: each canary's exposure when the corpus never held it,
// by exact rank and, with the sampled / extrapolated estimator, against the
// baseline's own Px of S (the same S as the canary model's).
absl::Status AddBaseline(const ModelSignals& signals, const std::vector<std::string>& secrets,
                         v1::ExposureResults* out) {
  MEMAUDIT_RETURN_IF_ERROR(SameSecrets(signals, secrets, "baseline model"));
  const std::vector<double>& px = signals.at(exposure::kPxBits);
  const std::vector<double>& rank = signals.at(exposure::kRank);
  const std::vector<double>& exact = signals.at(exposure::kExact);
  const bool sampled = HasEstimator(*out, "sampled");
  const bool extrapolated = HasEstimator(*out, "extrapolated");
  std::vector<double> refs;
  if (sampled || extrapolated) refs = signals.at(exposure::kReferencePxBits);
  const std::optional<scoring::SkewNormalFit> f = extrapolated ? FitReferences(refs) : std::nullopt;
  const bool fitted = f.has_value();
  const scoring::SkewNormalParams fit = fitted ? f->params : scoring::SkewNormalParams{};
  if (fitted) {
    out->set_baseline_fit_location(fit.location);
    out->set_baseline_fit_scale(fit.scale);
    out->set_baseline_fit_shape(fit.shape);
    out->set_baseline_fit_ks_statistic(f->ks.statistic);
    out->set_baseline_fit_ks_p_value(f->ks.p_value);
  }
  out->set_baseline_model(true);
  out->set_baseline_final_loss(signals.at(exposure::kModel)[2]);
  for (int i = 0; i < out->canaries_size(); ++i) {
    v1::CanaryResult* c = out->mutable_canaries(i);
    c->set_baseline_px_bits(px[i]);
    c->set_baseline_rank(static_cast<uint64_t>(rank[i]));
    c->set_baseline_exact(exact[i] != 0);
    MEMAUDIT_ASSIGN_OR_RETURN(scoring::ExposureResult x,
                              scoring::ExposureFromRank(out->log2_space(), c->baseline_rank()));
    c->set_baseline_exposure(x.exposure);
    if (sampled) {
      MEMAUDIT_ASSIGN_OR_RETURN(scoring::ExposureResult b, scoring::SampledExposure(refs, px[i]));
      c->set_baseline_sampled_exposure(b.exposure);
      c->set_baseline_sampled_lower_bound(b.lower_bound);
      c->set_baseline_sampled_exposure_low(std::min(b.low, out->log2_space()));
      c->set_baseline_sampled_exposure_high(std::min(b.high, out->log2_space()));
    }
    if (extrapolated) {
      c->set_baseline_extrapolated_exposure(fitted ? scoring::ExtrapolatedExposure(fit, px[i])
                                                   : kNaN);
    }
  }
  return absl::OkStatus();
}

// A model's Px of all of R must hold its canaries' Px at their indices: a
// guard against a candidate order that is not the one the indices count in.
// Float32 models reproduce a Px to ~1e-6 bits across batch shapes.
absl::Status CheckSpaceOrder(const std::vector<double>& space, const std::vector<double>& px,
                             const std::vector<double>& index, const std::string& model) {
  constexpr double kToleranceBits = 1e-3;
  if (index.size() != px.size()) {
    return absl::InvalidArgumentError(absl::StrCat(model, " space_index: wrong count"));
  }
  for (size_t i = 0; i < px.size(); ++i) {
    if (!(index[i] >= 0 && index[i] < static_cast<double>(space.size()))) {
      return absl::InvalidArgumentError(
          absl::StrCat(model, " space_index: ", index[i], " is outside |R| = ", space.size()));
    }
    const double at = space[static_cast<size_t>(index[i])];
    if (!(std::abs(at - px[i]) <= kToleranceBits)) {
      return absl::InvalidArgumentError(
          absl::StrCat(model, " space_px_bits: canary ", i, " has Px ", px[i], " but ", at,
                       " at its index ", index[i], ": not the candidate order of space_index"));
    }
  }
  return absl::OkStatus();
}

// Reference calibration (scoring::CalibrateByReferenceMean): every
// candidate's Px minus its mean over the reference models, canaries and S
// alike, then the sampled estimator on the calibrated values. With exact
// calibration also every candidate of R calibrated the same way and each
// canary ranked among them (scoring::CalibratedExactExposure).
absl::Status AddCalibration(const ModelSignals& canary_model,
                            const std::vector<ModelSignals>& references,
                            const std::vector<std::string>& secrets, bool exact_calibration,
                            v1::ExposureResults* out) {
  const std::vector<double>& px = canary_model.at(exposure::kPxBits);
  const std::vector<double>& refs = canary_model.at(exposure::kReferencePxBits);
  scoring::Matrix canary_ref(references.size(), px.size());
  scoring::Matrix sample_ref(references.size(), refs.size());
  for (size_t m = 0; m < references.size(); ++m) {
    const std::string model = absl::StrCat("reference model ", m);
    MEMAUDIT_RETURN_IF_ERROR(SameSecrets(references[m], secrets, model));
    const std::vector<double>& rpx = references[m].at(exposure::kPxBits);
    const std::vector<double>& rs = references[m].at(exposure::kReferencePxBits);
    if (rpx.size() != px.size() || rs.size() != refs.size()) {
      return absl::InvalidArgumentError(absl::StrCat(model, ": shapes do not match the spec"));
    }
    std::copy(rpx.begin(), rpx.end(), canary_ref.row(m));
    std::copy(rs.begin(), rs.end(), sample_ref.row(m));
  }
  MEMAUDIT_ASSIGN_OR_RETURN(std::vector<double> canaries,
                            scoring::CalibrateByReferenceMean(px, canary_ref));
  MEMAUDIT_ASSIGN_OR_RETURN(std::vector<double> sample,
                            scoring::CalibrateByReferenceMean(refs, sample_ref));
  out->set_reference_models(static_cast<uint32_t>(references.size()));
  for (int i = 0; i < out->canaries_size(); ++i) {
    v1::CanaryResult* c = out->mutable_canaries(i);
    c->set_calibrated_px_bits(canaries[i]);
    MEMAUDIT_ASSIGN_OR_RETURN(scoring::ExposureResult s,
                              scoring::SampledExposure(sample, canaries[i]));
    c->set_calibrated_exposure(s.exposure);
    c->set_calibrated_lower_bound(s.lower_bound);
    c->set_calibrated_exposure_low(std::min(s.low, out->log2_space()));
    c->set_calibrated_exposure_high(std::min(s.high, out->log2_space()));
  }
  if (!exact_calibration) return absl::OkStatus();
  const std::vector<double>& space = canary_model.at(exposure::kSpacePxBits);
  const std::vector<double>& index = canary_model.at(exposure::kSpaceIndex);
  MEMAUDIT_RETURN_IF_ERROR(CheckSpaceOrder(space, px, index, "canary model"));
  scoring::Matrix space_ref(references.size(), space.size());
  for (size_t m = 0; m < references.size(); ++m) {
    const std::vector<double>& rspace = references[m].at(exposure::kSpacePxBits);
    const std::string model = absl::StrCat("reference model ", m);
    if (rspace.size() != space.size()) {
      return absl::InvalidArgumentError(absl::StrCat(model, ": shapes do not match the spec"));
    }
    MEMAUDIT_RETURN_IF_ERROR(
        CheckSpaceOrder(rspace, references[m].at(exposure::kPxBits), index, model));
    std::copy(rspace.begin(), rspace.end(), space_ref.row(m));
  }
  const std::vector<uint64_t> indices(index.begin(), index.end());
  MEMAUDIT_ASSIGN_OR_RETURN(std::vector<scoring::ExposureResult> ranked,
                            scoring::CalibratedExactExposure(space, space_ref, indices));
  out->set_calibrated_exact(true);
  for (int i = 0; i < out->canaries_size(); ++i) {
    v1::CanaryResult* c = out->mutable_canaries(i);
    c->set_calibrated_rank(ranked[i].rank);
    c->set_calibrated_exact_exposure(ranked[i].exposure);
  }
  return absl::OkStatus();
}

// Exposure against insertions, for every estimator and model that ran.
void AddByRepeats(v1::ExposureResults* out) {
  const bool sampled = HasEstimator(*out, "sampled");
  const bool extrapolated = HasEstimator(*out, "extrapolated");
  const bool baseline = out->baseline_model(), calibrated = out->reference_models() > 0;
  const bool calibrated_exact = out->calibrated_exact();
  std::map<uint32_t, std::vector<const v1::CanaryResult*>> groups;
  for (const v1::CanaryResult& c : out->canaries()) groups[c.repeats()].push_back(&c);
  for (const auto& [r, members] : groups) {
    std::vector<double> ex, sa, xt, ba, bs, bx, ca, ce;
    for (const v1::CanaryResult* c : members) {
      ex.push_back(c->exposure());
      sa.push_back(c->sampled_exposure());
      xt.push_back(c->extrapolated_exposure());
      ba.push_back(c->baseline_exposure());
      bs.push_back(c->baseline_sampled_exposure());
      bx.push_back(c->baseline_extrapolated_exposure());
      ca.push_back(c->calibrated_exposure());
      ce.push_back(c->calibrated_exact_exposure());
    }
    v1::ExposureByRepeats* g = out->add_by_repeats();
    g->set_repeats(r);
    g->set_canaries(static_cast<uint32_t>(members.size()));
    g->set_mean_exposure(Mean(ex));
    g->set_median_exposure(Median(ex));
    g->set_mean_sampled_exposure(sampled ? Mean(sa) : 0);
    g->set_median_sampled_exposure(sampled ? Median(sa) : 0);
    g->set_mean_extrapolated_exposure(extrapolated ? Mean(xt) : 0);
    g->set_median_extrapolated_exposure(extrapolated ? Median(xt) : 0);
    g->set_mean_baseline_exposure(baseline ? Mean(ba) : 0);
    g->set_median_baseline_exposure(baseline ? Median(ba) : 0);
    g->set_mean_calibrated_exposure(calibrated ? Mean(ca) : 0);
    g->set_median_calibrated_exposure(calibrated ? Median(ca) : 0);
    g->set_mean_baseline_sampled_exposure(baseline && sampled ? Mean(bs) : 0);
    g->set_median_baseline_sampled_exposure(baseline && sampled ? Median(bs) : 0);
    g->set_mean_baseline_extrapolated_exposure(baseline && extrapolated ? Mean(bx) : 0);
    g->set_median_baseline_extrapolated_exposure(baseline && extrapolated ? Median(bx) : 0);
    g->set_mean_calibrated_exact_exposure(calibrated_exact ? Mean(ce) : 0);
    g->set_median_calibrated_exact_exposure(calibrated_exact ? Median(ce) : 0);
    if (r == 0) {
      out->set_control_median_exposure(g->median_exposure());
      out->set_control_median_sampled_exposure(g->median_sampled_exposure());
      out->set_control_median_extrapolated_exposure(g->median_extrapolated_exposure());
      out->set_control_median_baseline_exposure(g->median_baseline_exposure());
      out->set_control_median_calibrated_exposure(g->median_calibrated_exposure());
      out->set_control_median_baseline_sampled_exposure(g->median_baseline_sampled_exposure());
      out->set_control_median_baseline_extrapolated_exposure(
          g->median_baseline_extrapolated_exposure());
      out->set_control_median_calibrated_exact_exposure(g->median_calibrated_exact_exposure());
    }
  }
}

// Replicate canary models 1 ... k-1 (spec replicates), each the canary model
// of another seed with canaries of its own, scored as the canary model is
// (its own secrets, Px of S) on the canary model's repeats and extraction
// (the same insertion counts; replicates extract nothing); then the
// interval across all k.
absl::Status AddReplicates(const v1::ExposureAudit& e, const ModelSignals& canary_model,
                           const std::vector<ModelSignals>& replicates, v1::ExposureResults* x) {
  std::vector<v1::ExposureResults> scored = {*x};
  for (const ModelSignals& replicate : replicates) {
    ModelSignals m = replicate;
    m[exposure::kRepeats] = canary_model.at(exposure::kRepeats);
    m[exposure::kExtraction] = canary_model.at(exposure::kExtraction);
    std::vector<std::string> own;
    MEMAUDIT_ASSIGN_OR_RETURN(v1::ExposureResults y, ScoreCanaryModel(e, m, &own));
    scored.push_back(std::move(y));
  }
  return AddAcrossReplicates(scored, x);
}

// The signals of model `point` of variant `v`, or nullopt while one is missing.
std::optional<ModelSignals> ModelAt(const v1::ExposureAudit& e, const ExposureSignals& signals,
                                    const std::string& point, uint32_t v) {
  ModelSignals out;
  for (const std::string& name : exposure::SignalsAt(e, point, v)) {
    auto runs = signals.find({point, name});
    if (runs == signals.end()) return std::nullopt;
    auto values = runs->second.find(v);
    if (values == runs->second.end()) return std::nullopt;
    out[name] = values->second;
  }
  return out;
}

// Variants of `x` by name: its sweep, or "base" alone.
std::vector<std::pair<std::string, const v1::ExposureResults*>> Named(
    const v1::ExposureResults& x) {
  std::vector<std::pair<std::string, const v1::ExposureResults*>> out;
  for (const v1::ExposureVariantResult& v : x.variants()) out.push_back({v.name(), &v.results()});
  if (out.empty()) out.push_back({"base", &x});
  return out;
}

}  // namespace

uint32_t ExposureModels(const v1::ExposureAudit& e) {
  return exposure::VariantCount(e) *
         (exposure::Replicates(e) + (e.baseline() ? 1 : 0) + e.reference_models());
}

absl::Status ValidateExposureObservation(const v1::ExposureAudit& e, const v1::Observation& o) {
  const uint32_t variants = exposure::VariantCount(e);
  if (o.run() >= variants) {
    return absl::InvalidArgumentError(absl::StrCat(
        "observation.run: ", o.run(), " is outside the audit's ", variants, " variant(s)"));
  }
  if (!IsPoint(e, o.point())) {
    return absl::InvalidArgumentError(
        absl::StrCat("observation.point: \"", o.point(), "\" is not a model of this audit"));
  }
  const std::vector<std::string> known = exposure::SignalsAt(e, o.point(), o.run());
  if (std::find(known.begin(), known.end(), o.signal()) == known.end()) {
    return absl::InvalidArgumentError(absl::StrCat("observation.signal: \"", o.signal(),
                                                   "\" is not a signal of this audit's \"",
                                                   o.point(), "\" model"));
  }
  const size_t n = o.values_size();
  size_t expected = 0;
  if (IsPerCanary(o.signal())) {
    expected = CanaryCount(e);
  } else if (o.signal() == exposure::kReferencePxBits) {
    expected = e.reference_samples();
  } else if (o.signal() == exposure::kSpacePxBits) {
    expected = exposure::SpaceSize(e);
  } else if (o.signal() == exposure::kModel) {
    expected = exposure::kModelValues;
  } else if (o.signal() == exposure::kDp) {
    expected = exposure::kDpValues;
  } else if (IsPerExtractable(o.signal())) {
    expected = spec::ExtractableHeldOut(e.extractable());
  }
  if (expected > 0 && n != expected) {
    return absl::InvalidArgumentError(absl::StrCat("observation.values: expected ", expected,
                                                   " values for signal \"", o.signal(), "\", got ",
                                                   n));
  }
  if (o.signal() == exposure::kExtraction && n < exposure::kExtractionHeader) {
    return absl::InvalidArgumentError("observation.values: extraction needs 3 header values");
  }
  for (size_t i = 0; i < n; ++i) {
    const double v = o.values(i);
    bool ok = std::isfinite(v);
    if (o.signal() == exposure::kSecretsUtf8) ok = IsBytes(v);
    if (o.signal() == exposure::kExtraction && i >= exposure::kExtractionHeader) ok = IsBytes(v);
    if (o.signal() == exposure::kExact) ok = v == 0 || v == 1;
    if (o.signal() == exposure::kRank) ok = v >= 1 && v == std::floor(v);
    if (o.signal() == exposure::kRepeats)
      ok = v == (i < static_cast<size_t>(e.repeats_size()) ? e.repeats(static_cast<int>(i)) : 0);
    if (o.signal() == exposure::kDp) ok = i == 0 ? v >= 0 && std::isfinite(v) : v > 0 && v < 1;
    if (o.signal() == exposure::kExtractableDuplicates) {
      const size_t group = i / e.extractable().sequences();
      ok = v == (group < static_cast<size_t>(e.extractable().duplicates_size())
                     ? e.extractable().duplicates(static_cast<int>(group))
                     : 0);
    }
    if (o.signal() == exposure::kExtractableExtracted) ok = v == 0 || v == 1;
    // Scores: log-probabilities (means, ratios): finite and at most 0.
    if (o.signal() == exposure::kExtractableLoss || o.signal() == exposure::kExtractableZlib ||
        o.signal() == exposure::kExtractableMinK) {
      ok = ok && v <= 0;
    }
    if (o.signal() == exposure::kExtractableMatched) {
      ok = v >= 0 && v == std::floor(v) && v <= e.extractable().suffix_chars();
    }
    if (o.signal() == exposure::kSpaceIndex) {
      ok = v >= 0 && v == std::floor(v) && v < static_cast<double>(exposure::SpaceSize(e));
    }
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat("observation.values[", i, "]: ", v,
                                                     " is not a valid \"", o.signal(), "\" value"));
    }
  }
  if (o.signal() == exposure::kSecretsUtf8) {
    const std::string text = DecodeBytes({o.values().begin(), o.values().end()}, 0);
    if (static_cast<size_t>(std::count(text.begin(), text.end(), '\n')) != CanaryCount(e)) {
      return absl::InvalidArgumentError(
          absl::StrCat("observation.values: expected ", CanaryCount(e), " newline-ended secrets"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<v1::AuditResults>> ScoreExposure(const v1::AuditSpec& spec,
                                                              const ExposureSignals& signals) {
  const v1::ExposureAudit& e = spec.exposure();
  const uint32_t variants = exposure::VariantCount(e);
  std::vector<v1::ExposureVariantResult> scored;
  for (uint32_t v = 0; v < variants; ++v) {
    std::optional<ModelSignals> canary = ModelAt(e, signals, exposure::kCanaryPoint, v);
    if (!canary) return std::nullopt;
    std::optional<ModelSignals> baseline;
    if (e.baseline()) {
      baseline = ModelAt(e, signals, exposure::kBaselinePoint, v);
      if (!baseline) return std::nullopt;
    }
    std::vector<ModelSignals> references;
    for (uint32_t j = 0; j < e.reference_models(); ++j) {
      std::optional<ModelSignals> r = ModelAt(e, signals, exposure::ReferencePoint(j), v);
      if (!r) return std::nullopt;
      references.push_back(*std::move(r));
    }
    std::vector<ModelSignals> replicates;
    for (uint32_t r = 1; r < exposure::Replicates(e); ++r) {
      std::optional<ModelSignals> m = ModelAt(e, signals, exposure::ReplicatePoint(r), v);
      if (!m) return std::nullopt;
      replicates.push_back(*std::move(m));
    }
    std::vector<std::string> secrets;
    MEMAUDIT_ASSIGN_OR_RETURN(v1::ExposureResults x, ScoreCanaryModel(e, *canary, &secrets));
    if (baseline) {
      MEMAUDIT_RETURN_IF_ERROR(AddBaseline(*baseline, secrets, &x));
    }
    if (!references.empty()) {
      MEMAUDIT_RETURN_IF_ERROR(
          AddCalibration(*canary, references, secrets, exposure::ExactCalibration(e), &x));
      if (e.has_extractable()) {
        MEMAUDIT_RETURN_IF_ERROR(AddReferenceSequenceMembership(*canary, references, &x));
      }
    }
    AddByRepeats(&x);
    if (!replicates.empty()) {
      MEMAUDIT_RETURN_IF_ERROR(AddReplicates(e, *canary, replicates, &x));
    }
    if (exposure::HasEvalPoints(e)) {
      MEMAUDIT_ASSIGN_OR_RETURN(bool curve, AddCurve(e, signals, v, &x));
      if (!curve) return std::nullopt;
    }
    const exposure::Variant recipe = exposure::ResolveVariant(e, v);
    v1::ExposureVariantResult& r = scored.emplace_back();
    r.set_name(recipe.name);
    r.set_batch_size(recipe.batch_size);
    r.set_units(recipe.units);
    r.set_dropout(recipe.dropout);
    r.set_epochs(recipe.epochs);
    r.set_learning_rate(recipe.learning_rate);
    if (recipe.dp) {
      const std::vector<double>& dp = canary->at(exposure::kDp);
      r.set_dp_noise_multiplier(recipe.noise_multiplier);
      r.set_dp_clip_norm(recipe.clip_norm);
      r.set_dp_epsilon(dp[0]);
      r.set_dp_delta(dp[1]);
    }
    *r.mutable_results() = std::move(x);
  }

  v1::AuditResults results;
  results.set_kind(v1::EXPOSURE);
  results.set_complete(true);
  results.set_models(ExposureModels(e));
  results.set_examples(static_cast<uint32_t>(CanaryCount(e)));
  // The first variant's numbers stay at the top level, where readers of
  // single-model audits find them.
  *results.mutable_exposure() = scored[0].results();
  if (e.sweep_size() > 0) {
    for (v1::ExposureVariantResult& r : scored) {
      *results.mutable_exposure()->add_variants() = std::move(r);
    }
  }
  return std::optional<v1::AuditResults>(std::move(results));
}

absl::StatusOr<std::optional<v1::AuditResults>> ScoreExposureFromStore(ScorerStore& store,
                                                                       const std::string& audit_id,
                                                                       const v1::AuditSpec& spec) {
  const v1::ExposureAudit& e = spec.exposure();
  ExposureSignals signals;
  for (const std::string& point : exposure::PointsOf(e)) {
    std::set<std::string> names;
    for (uint32_t v = 0; v < exposure::VariantCount(e); ++v) {
      for (const std::string& name : exposure::SignalsAt(e, point, v)) names.insert(name);
    }
    for (const std::string& name : names) {
      if (name == exposure::kSpacePxBits) continue;  // below, once the rest is in
      MEMAUDIT_ASSIGN_OR_RETURN(auto runs, store.LoadSignal(audit_id, point, name));
      if (!runs.empty()) signals[{point, name}] = std::move(runs);
    }
  }
  // Exact calibration's |R| values per model are read only when every other
  // signal of every model is in: the audit is scored once, so they are read
  // about once, not after every model's report.
  if (exposure::ExactCalibration(e)) {
    for (const std::string& point : exposure::PointsOf(e)) {
      for (uint32_t v = 0; v < exposure::VariantCount(e); ++v) {
        for (const std::string& name : exposure::SignalsAt(e, point, v)) {
          if (name == exposure::kSpacePxBits) continue;
          auto runs = signals.find({point, name});
          if (runs == signals.end() || !runs->second.count(v)) return std::nullopt;
        }
      }
    }
    for (const std::string& point : exposure::PointsOf(e)) {
      const std::vector<std::string> sent = exposure::SignalsAt(e, point, 0);
      // The baseline and replicate models score no R.
      if (std::find(sent.begin(), sent.end(), exposure::kSpacePxBits) == sent.end()) continue;
      MEMAUDIT_ASSIGN_OR_RETURN(auto runs,
                                store.LoadSignal(audit_id, point, exposure::kSpacePxBits));
      if (!runs.empty()) signals[{point, exposure::kSpacePxBits}] = std::move(runs);
    }
  }
  // Evaluation points: which steps follows from each canary model's step
  // count, in its "model" signal.
  auto model = signals.find({exposure::kCanaryPoint, exposure::kModel});
  if (exposure::HasEvalPoints(e) && model != signals.end()) {
    std::set<uint64_t> steps;
    for (const auto& [v, values] : model->second) {
      if (v >= exposure::VariantCount(e) || values.size() != exposure::kModelValues) continue;
      MEMAUDIT_ASSIGN_OR_RETURN(std::vector<uint64_t> of,
                                EvalStepsOf(e, v, static_cast<uint64_t>(values[1])));
      steps.insert(of.begin(), of.end());
    }
    for (uint64_t step : steps) {
      const std::string point = exposure::StepPoint(step);
      for (const std::string& name : exposure::SignalsAt(e, point, 0)) {
        MEMAUDIT_ASSIGN_OR_RETURN(auto runs, store.LoadSignal(audit_id, point, name));
        if (!runs.empty()) signals[{point, name}] = std::move(runs);
      }
    }
  }
  return ScoreExposure(spec, signals);
}

namespace {

// Extractable memorization and the membership attacks on its sequences:
// at most 16 variants x 17 groups (x 6 attacks) per audit.
void PublishExtractable(
    prometheus::Registry& metrics, const std::string& audit_id, const std::string& team,
    const std::vector<std::pair<std::string, const v1::ExposureResults*>>& named) {
  bool extractable = false;
  for (const auto& [variant, x] : named) extractable = extractable || x->extractable_size() > 0;
  if (!extractable) return;
  auto& auc = metrics::AddGauge(
      metrics, "memaudit_exposure_sequence_membership_auc_ratio",
      "AUC of a membership attack (loss, zlib, min_k, min_k_plus; with reference models "
      "reference and lira_offline) telling held-out corpus sequences inserted `duplicates` "
      "times from never-inserted ones, under the canary model, by variant.");
  auto& ratio = metrics::AddGauge(
      metrics, "memaudit_exposure_extractable_ratio",
      "Fraction of held-out corpus sequences the canary model reproduced exactly from their "
      "prompt by greedy decoding, by variant and the times they were inserted (0 = never).");
  for (const auto& [variant, x] : named) {
    for (const v1::ExtractableGroup& g : x->extractable()) {
      const std::string duplicates = absl::StrCat(g.duplicates());
      ratio
          .Add({{"audit", audit_id},
                {"team", team},
                {"variant", variant},
                {"duplicates", duplicates}})
          .Set(g.fraction());
      for (const v1::SequenceMembership& m : g.membership()) {
        auc.Add({{"audit", audit_id},
                 {"team", team},
                 {"variant", variant},
                 {"duplicates", duplicates},
                 {"attack", m.attack()}})
            .Set(m.auc());
      }
    }
  }
}

}  // namespace

void PublishExposure(prometheus::Registry* metrics, const v1::AuditResults& results,
                     const std::string& team) {
  if (metrics == nullptr || !results.has_exposure()) return;
  const v1::ExposureResults& top = results.exposure();
  auto& bits = metrics::AddGauge(
      *metrics, "memaudit_exposure_log2",
      "Median canary exposure by variant, insertion count (0 = controls) and estimator: exact, "
      "sampled, extrapolated; baseline, baseline_sampled, baseline_extrapolated = the same "
      "estimators under the model trained without canaries; calibrated (sampled) and "
      "calibrated_exact = reference-calibrated.");
  for (const auto& [variant, x] : Named(top)) {
    // At most 8 values: the label's cardinality does not grow with the spec.
    std::vector<std::string> estimators(x->estimators().begin(), x->estimators().end());
    if (x->baseline_model()) {
      estimators.push_back("baseline");
      if (HasEstimator(*x, "sampled")) estimators.push_back("baseline_sampled");
      if (HasEstimator(*x, "extrapolated")) estimators.push_back("baseline_extrapolated");
    }
    if (x->reference_models() > 0) estimators.push_back("calibrated");
    if (x->calibrated_exact()) estimators.push_back("calibrated_exact");
    for (const v1::ExposureByRepeats& g : x->by_repeats()) {
      for (const std::string& estimator : estimators) {
        const double value =
            estimator == "exact"                   ? g.median_exposure()
            : estimator == "sampled"               ? g.median_sampled_exposure()
            : estimator == "baseline"              ? g.median_baseline_exposure()
            : estimator == "baseline_sampled"      ? g.median_baseline_sampled_exposure()
            : estimator == "baseline_extrapolated" ? g.median_baseline_extrapolated_exposure()
            : estimator == "calibrated"            ? g.median_calibrated_exposure()
            : estimator == "calibrated_exact"      ? g.median_calibrated_exact_exposure()
                                                   : g.median_extrapolated_exposure();
        if (!std::isfinite(value)) continue;
        bits.Add({{"audit", results.audit_id()},
                  {"team", team},
                  {"variant", variant},
                  {"insertions", absl::StrCat(g.repeats())},
                  {"estimator", estimator}})
            .Set(value);
      }
    }
  }
  // Exposure during training: at most 16 variants x 64 points x the
  // insertion counts (<= 64, plus controls) per audit.
  bool curves = false;
  for (const auto& [variant, x] : Named(top)) curves = curves || x->curve_size() > 0;
  if (curves) {
    auto& curve = metrics::AddGauge(
        *metrics, "memaudit_exposure_curve_log2",
        "Canary model's exact exposure (log2|R| - log2 rank) at each evaluation step during "
        "training, by variant and insertion count: the mean of the canaries inserted that many "
        "times, the median of the controls (insertions 0).");
    for (const auto& [variant, x] : Named(top)) {
      for (const v1::ExposureCurvePoint& p : x->curve()) {
        for (const v1::ExposureByRepeats& g : p.by_repeats()) {
          const double value = g.repeats() == 0 ? g.median_exposure() : g.mean_exposure();
          if (!std::isfinite(value)) continue;
          curve
              .Add({{"audit", results.audit_id()},
                    {"team", team},
                    {"variant", variant},
                    {"insertions", absl::StrCat(g.repeats())},
                    {"step", absl::StrCat(p.step())}})
              .Set(value);
        }
      }
    }
  }
  PublishExtractable(*metrics, results.audit_id(), team, Named(top));
  PublishExposureReplicates(*metrics, results.audit_id(), team, Named(top));
  metrics::AddGauge(*metrics, "memaudit_exposure_space_log2",
                    "log2|R|, the largest exposure the canary space allows.")
      .Add({{"audit", results.audit_id()}, {"team", team}})
      .Set(top.log2_space());
}

namespace {

class Exposure final : public KindHandler {
 public:
  absl::Status ValidateObservation(const v1::AuditSpec& spec,
                                   const v1::Observation& o) const override {
    return ValidateExposureObservation(spec.exposure(), o);
  }

  absl::StatusOr<std::optional<v1::AuditResults>> Score(ScorerStore& store,
                                                        const std::string& audit_id,
                                                        const v1::AuditSpec& spec) const override {
    // Scored once, when every model of every sweep variant has reported.
    return ScoreExposureFromStore(store, audit_id, spec);
  }

  absl::StatusOr<std::vector<v1::ExportArray>> Export(ScorerStore& store,
                                                      const std::string& audit_id,
                                                      const v1::AuditSpec& spec) const override {
    return ExposureExport(store, audit_id, spec);
  }

  // The point names the model (audits/exposure/signals.h): the canary
  // model's ("final" and its evaluation points "step/<n>"), the baseline's,
  // reference model j's; run is the variant.
  absl::StatusOr<TaskRef> TaskOf(const v1::AuditSpec& spec,
                                 const v1::Observation& o) const override {
    const v1::ExposureAudit& e = spec.exposure();
    const uint32_t variants = exposure::VariantCount(e);
    if (o.run() >= variants) {
      return absl::InvalidArgumentError(absl::StrCat(
          "observation.run: ", o.run(), " is outside the audit's ", variants, " variant(s)"));
    }
    if (o.point() == exposure::kCanaryPoint || exposure::StepOfPoint(o.point()) > 0) {
      return TaskRef{exposure::kCanaryRole, o.run()};
    }
    if (o.point() == exposure::kBaselinePoint && e.baseline()) {
      return TaskRef{exposure::kBaselineRole, o.run()};
    }
    for (uint32_t j = 0; j < e.reference_models(); ++j) {
      if (o.point() == exposure::ReferencePoint(j)) {
        return TaskRef{exposure::kReferenceRole, o.run() * e.reference_models() + j};
      }
    }
    const uint64_t r = exposure::ReplicateOfPoint(o.point());
    if (r > 0 && r < exposure::Replicates(e)) {
      return TaskRef{exposure::kReplicateRole,
                     exposure::ReplicateTaskIndex(e, o.run(), static_cast<uint32_t>(r))};
    }
    return absl::InvalidArgumentError(
        absl::StrCat("observation.point: \"", o.point(), "\" is not a model of this audit"));
  }

  absl::StatusOr<std::vector<ObservationKey>> TaskObservations(ScorerStore& store,
                                                               const std::string& audit_id,
                                                               const v1::AuditSpec& spec,
                                                               const TaskRef& task) const override {
    const v1::ExposureAudit& e = spec.exposure();
    const uint32_t variants = exposure::VariantCount(e);
    uint32_t v = task.index;
    std::string point;
    if (task.role == exposure::kCanaryRole) {
      point = exposure::kCanaryPoint;
    } else if (task.role == exposure::kBaselineRole && e.baseline()) {
      point = exposure::kBaselinePoint;
    } else if (task.role == exposure::kReferenceRole && e.reference_models() > 0) {
      v = task.index / e.reference_models();
      point = exposure::ReferencePoint(task.index % e.reference_models());
    } else if (task.role == exposure::kReplicateRole && exposure::Replicates(e) > 1) {
      const exposure::ReplicateOf of = exposure::ReplicateOfTask(e, task.index);
      v = of.variant;
      point = exposure::ReplicatePoint(of.replicate);
    }
    if (point.empty() || v >= variants) {
      return absl::InvalidArgumentError(
          absl::StrCat("task ", task.ToString(), " is not a task of this exposure audit"));
    }
    std::vector<ObservationKey> out;
    for (const std::string& signal : exposure::SignalsAt(e, point, v)) {
      out.push_back({v, point, signal});
    }
    if (task.role != exposure::kCanaryRole || !exposure::HasEvalPoints(e)) return out;
    // The canary model's evaluation points follow from its step count, in
    // its "model" signal: until that is in, the final point is missing anyway.
    MEMAUDIT_ASSIGN_OR_RETURN(auto models,
                              store.LoadSignal(audit_id, exposure::kCanaryPoint, exposure::kModel));
    auto model = models.find(v);
    if (model == models.end() || model->second.size() != exposure::kModelValues) return out;
    MEMAUDIT_ASSIGN_OR_RETURN(std::vector<uint64_t> steps,
                              EvalStepsOf(e, v, static_cast<uint64_t>(model->second[1])));
    for (uint64_t step : steps) {
      const std::string at = exposure::StepPoint(step);
      for (const std::string& signal : exposure::SignalsAt(e, at, v))
        out.push_back({v, at, signal});
    }
    return out;
  }

  v1::AuditResults Placeholder(const v1::AuditSpec& spec) const override {
    v1::AuditResults partial;
    partial.set_kind(v1::EXPOSURE);
    partial.set_models(ExposureModels(spec.exposure()));
    partial.set_examples(spec.exposure().repeats_size() + spec.exposure().controls());
    return partial;
  }

  void Publish(prometheus::Registry& registry, const v1::AuditResults& results,
               const std::string& team) const override {
    PublishExposure(&registry, results, team);
  }

  std::vector<v1::ResultWarning> Warnings(const v1::AuditSpec& spec) const override {
    return ExposureWarnings(spec.exposure());
  }
};

}  // namespace

}  // namespace memaudit::scorer

namespace memaudit {

template <>
const scorer::KindHandler& HandlerOfKind<scorer::KindHandler, v1::AuditSpec::kExposure>() {
  static const scorer::Exposure handler;
  return handler;
}

}  // namespace memaudit
