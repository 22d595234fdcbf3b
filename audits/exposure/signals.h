// The worker -> scorer contract of an `exposure` audit: task roles, sweep
// variants and the observations each model sends (run = the variant index).
// Observation stays a generic vector of doubles, so text (secrets, the
// extracted candidate) travels as UTF-8 bytes, one per value. Header-only
// and torch-free so coordinator, worker and scorer agree without the engine.
#ifndef MEMAUDIT_AUDITS_EXPOSURE_SIGNALS_H_
#define MEMAUDIT_AUDITS_EXPOSURE_SIGNALS_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "memaudit/v1/spec.pb.h"

namespace memaudit::exposure {

// Task roles. The canary and baseline models' index is the variant v;
// reference model j of variant v has index v * reference_models + j.
inline constexpr char kCanaryRole[] = "canary_model";
inline constexpr char kBaselineRole[] = "baseline_model";
inline constexpr char kReferenceRole[] = "reference_model";

// Observation points: the canary model's, the baseline model's, and
// reference model j's ("reference/<j>").
inline constexpr char kCanaryPoint[] = "final";
inline constexpr char kBaselinePoint[] = "baseline";
inline constexpr char kReferencePointPrefix[] = "reference/";
inline std::string ReferencePoint(uint32_t j) { return absl::StrCat(kReferencePointPrefix, j); }
// Evaluation points of the canary model during training (spec
// eval_every_steps / eval_every_epoch): "step/<n>" after n optimizer steps,
// every point but the final model's (which is kCanaryPoint).
inline constexpr char kStepPointPrefix[] = "step/";
inline std::string StepPoint(uint64_t n) { return absl::StrCat(kStepPointPrefix, n); }
// n of "<prefix><n>" (decimal, no leading zero, n >= 1), or 0 for any other
// point.
template <size_t N>
uint64_t NumberOfPoint(const std::string& point, const char (&prefix)[N]) {
  const size_t p = N - 1;
  if (point.compare(0, p, prefix) != 0 || point.size() == p || point.size() > p + 19 ||
      point[p] == '0') {
    return 0;
  }
  uint64_t n = 0;
  for (size_t i = p; i < point.size(); ++i) {
    if (point[i] < '0' || point[i] > '9') return 0;
    n = n * 10 + static_cast<uint64_t>(point[i] - '0');
  }
  return n;
}
// n of "step/<n>", or 0 for any other point.
inline uint64_t StepOfPoint(const std::string& point) {
  return NumberOfPoint(point, kStepPointPrefix);
}
inline bool HasEvalPoints(const v1::ExposureAudit& e) {
  return e.has_eval_every_steps() || e.eval_every_epoch();
}

// Replicate canary models (spec replicates = k): replicate 0 is the canary
// model above (kCanaryRole, kCanaryPoint, its seed unchanged, so k = 1 is the
// audit without replicates); replicate r in 1 ... k-1 of variant v is task
// kReplicateRole with index v * (k - 1) + r - 1, reporting at run v, point
// "replicate/<r>", trained from DeriveSeed(seed, kReplicateRole, r) (shared
// by replicate r of every variant, so variants stay paired).
inline constexpr char kReplicateRole[] = "canary_replicate";
inline constexpr char kReplicatePointPrefix[] = "replicate/";
inline std::string ReplicatePoint(uint32_t r) { return absl::StrCat(kReplicatePointPrefix, r); }
// r of "replicate/<r>", or 0 for any other point.
inline uint64_t ReplicateOfPoint(const std::string& point) {
  return NumberOfPoint(point, kReplicatePointPrefix);
}
// Canary models per variant: the spec's replicates, 1 when unset (an
// explicit 0 is refused at Submit).
inline uint32_t Replicates(const v1::ExposureAudit& e) {
  return e.has_replicates() && e.replicates() > 1 ? e.replicates() : 1;
}
// The kReplicateRole task index of replicate r >= 1 of variant v, and back.
inline uint32_t ReplicateTaskIndex(const v1::ExposureAudit& e, uint32_t v, uint32_t r) {
  return v * (Replicates(e) - 1) + r - 1;
}
struct ReplicateOf {
  uint32_t variant = 0;
  uint32_t replicate = 0;  // >= 1
};
// Needs Replicates(e) > 1.
inline ReplicateOf ReplicateOfTask(const v1::ExposureAudit& e, uint32_t index) {
  const uint32_t others = Replicates(e) - 1;
  return {index / others, index % others + 1};
}

// One value per canary, in canary order (inserted canaries in spec order,
// then the controls).
inline constexpr char kRepeats[] = "repeats";
inline constexpr char kPxBits[] = "px_bits";
inline constexpr char kRank[] = "rank";
inline constexpr char kExact[] = "exact";  // 1 exact, 0 budget ran out
inline constexpr char kRankQueries[] = "rank_queries";
// The secrets' UTF-8 bytes, each secret followed by '\n'.
inline constexpr char kSecretsUtf8[] = "secrets_utf8";
// Px (bits) of the |S| reference candidates; sent when the estimator needs it.
inline constexpr char kReferencePxBits[] = "reference_px_bits";
// {attempted, extracted, queries, then the candidate's UTF-8 bytes}.
inline constexpr char kExtraction[] = "extraction";
inline constexpr size_t kExtractionHeader = 3;
// {log2|R|, training steps, final loss (nats/char)}.
inline constexpr char kModel[] = "model";
inline constexpr size_t kModelValues = 3;
// DP-SGD variants' canary model only: {epsilon, delta}.
inline constexpr char kDp[] = "dp";
inline constexpr size_t kDpValues = 2;
// Exact calibration (spec exact_calibration) only: Px (bits) of every
// candidate of R in lexicographic order (mixed radix over the positions'
// alphabets in spec order, the first position most significant), sent by the
// canary model and every reference model; and, from the canary model, each
// canary's index in that order (one per canary).
inline constexpr char kSpacePxBits[] = "space_px_bits";
inline constexpr char kSpaceIndex[] = "space_index";
// Bounds on what exact calibration sends and the scorer holds: |R| per model,
// and |R| x every model sending it (variants x (1 + reference_models)).
inline constexpr uint64_t kMaxExactCalibrationSpace = uint64_t{1} << 20;
inline constexpr uint64_t kMaxExactCalibrationValues = uint64_t{1} << 25;

// Extractable memorization (spec extractable), from the canary model, one
// value per held-out sequence (the groups' in spec order, then the
// controls): times inserted (0 = control), 1 if the continuation was
// reproduced exactly, characters reproduced before the first miss.
inline constexpr char kExtractableDuplicates[] = "extractable_duplicates";
inline constexpr char kExtractableExtracted[] = "extractable_extracted";
inline constexpr char kExtractableMatched[] = "extractable_matched";
// Each held-out sequence's reference-free membership scores under the canary
// model (engine/lm_membership_signals.h), one value per sequence as above;
// higher = more member-like.
inline constexpr char kExtractableLoss[] = "extractable_loss";
inline constexpr char kExtractableZlib[] = "extractable_zlib";
inline constexpr char kExtractableMinK[] = "extractable_min_k";
inline constexpr char kExtractableMinKPlus[] = "extractable_min_k_plus";
// The attack each score signal is, as results and metrics name it.
inline const std::vector<std::pair<const char*, const char*>>& SequenceMembershipAttacks() {
  static const auto* attacks =
      new std::vector<std::pair<const char*, const char*>>{{kExtractableLoss, "loss"},
                                                           {kExtractableZlib, "zlib"},
                                                           {kExtractableMinK, "min_k"},
                                                           {kExtractableMinKPlus, "min_k_plus"}};
  return *attacks;
}
// The attacks on the same sequences that read the reference models too
// (reference_models > 0): each sequence's loss score under the canary model
// against its scores under the models trained without any of them.
inline constexpr char kReferenceAttack[] = "reference";
inline constexpr char kLiraOfflineAttack[] = "lira_offline";
inline constexpr uint32_t kLiraOfflineMinReferences = 2;

inline const std::vector<std::string>& EstimatorNames() {
  static const auto* names = new std::vector<std::string>{"exact", "sampled", "extrapolated"};
  return *names;
}

// Whether `estimator` ("exact", "sampled", "extrapolated", "all") needs the
// reference sample.
inline bool NeedsReferences(const std::string& estimator) { return estimator != "exact"; }

// |R|: 10^digits, or the product of the alphabets' sizes in UTF-8
// characters; UINT64_MAX when it does not fit.
inline uint64_t SpaceSize(const v1::ExposureAudit& e) {
  constexpr uint64_t kMax = ~uint64_t{0};
  const v1::CanaryFormatSpec& f = e.canary();
  std::vector<uint64_t> sizes;
  if (f.alphabets().empty()) {
    sizes.assign(f.digits(), 10);
  } else {
    for (const std::string& a : f.alphabets()) {
      uint64_t n = 0;
      for (unsigned char c : a) n += (c & 0xC0) != 0x80 ? 1 : 0;
      sizes.push_back(n);
    }
  }
  uint64_t out = 1;
  for (uint64_t n : sizes) {
    if (n != 0 && out > kMax / n) return kMax;
    out *= n;
  }
  return out;
}

// Whether every model that sends kSpacePxBits fits the bounds above.
inline bool ExactCalibrationFits(const v1::ExposureAudit& e) {
  const uint64_t space = SpaceSize(e);
  const uint64_t models =
      static_cast<uint64_t>(std::max(1, e.sweep_size())) * (1 + uint64_t{e.reference_models()});
  return space <= kMaxExactCalibrationSpace && space * models <= kMaxExactCalibrationValues;
}

// Whether the models send what exact calibration needs.
inline bool ExactCalibration(const v1::ExposureAudit& e) {
  return e.reference_models() > 0 && e.exact_calibration();
}

inline void AppendBytes(const std::string& text, std::vector<double>* out) {
  for (unsigned char c : text) out->push_back(static_cast<double>(c));
}

// Canary models of the audit: one per sweep entry, or one of the base recipe.
inline uint32_t VariantCount(const v1::ExposureAudit& e) { return std::max(1, e.sweep_size()); }

// A variant's recipe, resolved against the base model and training.
struct Variant {
  std::string name;
  uint32_t batch_size = 0;
  uint32_t units = 0;
  double dropout = 0;
  uint32_t epochs = 0;
  double learning_rate = 0;
  bool dp = false;
  double noise_multiplier = 0;
  double clip_norm = 0;
  double delta = 0;
};

// "batch=8 units=64 dropout=0.2 epochs=20 lr=0.01 dp_sigma=1.1 dp_clip=1":
// the overrides a sweep entry sets, or "base" when it sets none.
inline std::string DefaultVariantName(const v1::ExposureVariant& v) {
  std::vector<std::string> parts;
  if (v.has_batch_size()) parts.push_back(absl::StrCat("batch=", v.batch_size()));
  if (v.has_units()) parts.push_back(absl::StrCat("units=", v.units()));
  if (v.has_dropout()) parts.push_back(absl::StrCat("dropout=", v.dropout()));
  if (v.has_epochs()) parts.push_back(absl::StrCat("epochs=", v.epochs()));
  if (v.has_learning_rate()) parts.push_back(absl::StrCat("lr=", v.learning_rate()));
  if (v.has_dp_sgd()) {
    parts.push_back(absl::StrCat("dp_sigma=", v.dp_sgd().noise_multiplier()));
    parts.push_back(absl::StrCat("dp_clip=", v.dp_sgd().clip_norm()));
  }
  return parts.empty() ? "base" : absl::StrJoin(parts, " ");
}

// Variant `index` < VariantCount(e); without a sweep, the base recipe "base".
inline Variant ResolveVariant(const v1::ExposureAudit& e, uint32_t index) {
  Variant out;
  out.name = "base";
  out.batch_size = e.training().batch_size();
  out.units = e.model().units();
  out.dropout = e.model().dropout();
  out.epochs = e.training().epochs();
  out.learning_rate = e.training().learning_rate();
  if (static_cast<int>(index) >= e.sweep_size()) return out;
  const v1::ExposureVariant& v = e.sweep(static_cast<int>(index));
  out.name = v.name().empty() ? DefaultVariantName(v) : v.name();
  if (v.has_batch_size()) out.batch_size = v.batch_size();
  if (v.has_units()) out.units = v.units();
  if (v.has_dropout()) out.dropout = v.dropout();
  if (v.has_epochs()) out.epochs = v.epochs();
  if (v.has_learning_rate()) out.learning_rate = v.learning_rate();
  if (v.has_dp_sgd()) {
    out.dp = true;
    out.noise_multiplier = v.dp_sgd().noise_multiplier();
    out.clip_norm = v.dp_sgd().clip_norm();
    out.delta = v.dp_sgd().delta();
  }
  return out;
}

// The signals a model sends at `point` for variant `index` (the scorer
// waits for all of them).
inline std::vector<std::string> SignalsAt(const v1::ExposureAudit& e, const std::string& point,
                                          uint32_t index) {
  if (point == kCanaryPoint) {
    std::vector<std::string> out = {kRepeats,     kPxBits,      kRank,       kExact,
                                    kRankQueries, kSecretsUtf8, kExtraction, kModel};
    if (NeedsReferences(e.estimator())) out.push_back(kReferencePxBits);
    if (ResolveVariant(e, index).dp) out.push_back(kDp);
    if (ExactCalibration(e)) {
      out.push_back(kSpacePxBits);
      out.push_back(kSpaceIndex);
    }
    if (e.has_extractable()) {
      out.push_back(kExtractableDuplicates);
      out.push_back(kExtractableExtracted);
      out.push_back(kExtractableMatched);
      for (const auto& [signal, attack] : SequenceMembershipAttacks()) out.push_back(signal);
    }
    return out;
  }
  if (point == kBaselinePoint) {
    // Exact ranks, and its own Px of S for the sampled and extrapolated
    // estimators: the baseline is read against the canary model's.
    std::vector<std::string> out = {kPxBits, kRank, kExact, kRankQueries, kSecretsUtf8, kModel};
    if (NeedsReferences(e.estimator())) out.push_back(kReferencePxBits);
    return out;
  }
  if (StepOfPoint(point) > 0) {
    // The canary model mid-training: its canaries' Px and exact ranks.
    return {kPxBits, kRank, kExact, kRankQueries};
  }
  if (ReplicateOfPoint(point) > 0) {
    // A replicate canary model: what the estimators need, without
    // extraction, DP accounting (the seed does not change epsilon) or R.
    std::vector<std::string> out = {kPxBits, kRank, kExact, kRankQueries, kSecretsUtf8, kModel};
    if (NeedsReferences(e.estimator())) out.push_back(kReferencePxBits);
    return out;
  }
  // A reference model: Px of the canaries and of S (and of all of R with
  // exact calibration), for calibration; with extractable, each held-out
  // sequence's loss score, for the reference attacks on them.
  std::vector<std::string> out = {kPxBits, kSecretsUtf8, kReferencePxBits, kModel};
  if (ExactCalibration(e)) out.push_back(kSpacePxBits);
  if (e.has_extractable()) out.push_back(kExtractableLoss);
  return out;
}

// Every point a variant's models report at.
inline std::vector<std::string> PointsOf(const v1::ExposureAudit& e) {
  std::vector<std::string> out = {kCanaryPoint};
  if (e.baseline()) out.push_back(kBaselinePoint);
  for (uint32_t j = 0; j < e.reference_models(); ++j) out.push_back(ReferencePoint(j));
  for (uint32_t r = 1; r < Replicates(e); ++r) out.push_back(ReplicatePoint(r));
  return out;
}

}  // namespace memaudit::exposure

#endif  // MEMAUDIT_AUDITS_EXPOSURE_SIGNALS_H_
