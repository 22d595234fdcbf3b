// The worker -> scorer contract of an `exposure` audit: task roles, sweep
// variants and the observations each model sends (run = the variant index).
// Observation stays a generic vector of doubles, so text (secrets, the
// extracted candidate) travels as UTF-8 bytes, one per value. Header-only
// and torch-free so coordinator, worker and scorer agree without the engine.
#ifndef MEMAUDIT_COMMON_EXPOSURE_SIGNALS_H_
#define MEMAUDIT_COMMON_EXPOSURE_SIGNALS_H_

#include <algorithm>
#include <cstdint>
#include <string>
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

inline const std::vector<std::string>& EstimatorNames() {
  static const auto* names = new std::vector<std::string>{"exact", "sampled", "extrapolated"};
  return *names;
}

// Whether `estimator` ("exact", "sampled", "extrapolated", "all") needs the
// reference sample.
inline bool NeedsReferences(const std::string& estimator) { return estimator != "exact"; }

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
  bool dp = false;
  double noise_multiplier = 0;
  double clip_norm = 0;
  double delta = 0;
};

// "batch=8 units=64 dropout=0.2 dp_sigma=1.1 dp_clip=1": the overrides a
// sweep entry sets, or "base" when it sets none.
inline std::string DefaultVariantName(const v1::ExposureVariant& v) {
  std::vector<std::string> parts;
  if (v.has_batch_size()) parts.push_back(absl::StrCat("batch=", v.batch_size()));
  if (v.has_units()) parts.push_back(absl::StrCat("units=", v.units()));
  if (v.has_dropout()) parts.push_back(absl::StrCat("dropout=", v.dropout()));
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
  if (static_cast<int>(index) >= e.sweep_size()) return out;
  const v1::ExposureVariant& v = e.sweep(static_cast<int>(index));
  out.name = v.name().empty() ? DefaultVariantName(v) : v.name();
  if (v.has_batch_size()) out.batch_size = v.batch_size();
  if (v.has_units()) out.units = v.units();
  if (v.has_dropout()) out.dropout = v.dropout();
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
    return out;
  }
  if (point == kBaselinePoint) {
    // Exact ranks only: the baseline is read against the canary model's.
    return {kPxBits, kRank, kExact, kRankQueries, kSecretsUtf8, kModel};
  }
  // A reference model: Px of the canaries and of S, for calibration.
  return {kPxBits, kSecretsUtf8, kReferencePxBits, kModel};
}

// Every point a variant's models report at.
inline std::vector<std::string> PointsOf(const v1::ExposureAudit& e) {
  std::vector<std::string> out = {kCanaryPoint};
  if (e.baseline()) out.push_back(kBaselinePoint);
  for (uint32_t j = 0; j < e.reference_models(); ++j) out.push_back(ReferencePoint(j));
  return out;
}

}  // namespace memaudit::exposure

#endif  // MEMAUDIT_COMMON_EXPOSURE_SIGNALS_H_
