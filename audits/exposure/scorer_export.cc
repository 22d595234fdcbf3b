// The per-example arrays of an exposure audit (docs/export.md): every
// model's Px of the canaries and of the reference sample S, as the models
// reported them, per variant.
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "audits/exposure/scorer_metrics.h"
#include "audits/exposure/signals.h"
#include "common/base/status_macros.h"
#include "common/messages/export_arrays.h"

namespace memaudit::scorer {
namespace {

// One signal of one point of every variant, concatenated: [variant, value].
// nullopt when no variant sent it; an error when they differ in length.
absl::StatusOr<std::optional<std::vector<double>>> Gather(ScorerStore& store,
                                                          const std::string& audit_id,
                                                          const std::string& point,
                                                          const std::string& signal,
                                                          uint32_t variants, uint64_t* length) {
  MEMAUDIT_ASSIGN_OR_RETURN(auto runs, store.LoadSignal(audit_id, point, signal));
  if (runs.empty()) return std::nullopt;
  std::vector<double> out;
  *length = runs.begin()->second.size();
  for (uint32_t v = 0; v < variants; ++v) {
    auto it = runs.find(v);
    if (it == runs.end() || it->second.size() != *length) {
      return absl::FailedPreconditionError(
          absl::StrCat(point, " ", signal, " of variant ", v, " is missing or of another length"));
    }
    out.insert(out.end(), it->second.begin(), it->second.end());
  }
  return std::optional<std::vector<double>>(std::move(out));
}

struct Source {
  std::string point;
  std::string prefix;  // of the array names
  std::string model;   // what the description calls the model
};

}  // namespace

absl::StatusOr<std::vector<v1::ExportArray>> ExposureExport(ScorerStore& store,
                                                            const std::string& audit_id,
                                                            const v1::AuditSpec& spec) {
  const v1::ExposureAudit& e = spec.exposure();
  const uint64_t variants = exposure::VariantCount(e);
  std::vector<Source> sources = {{exposure::kCanaryPoint, "", "the canary model"}};
  if (e.baseline())
    sources.push_back({exposure::kBaselinePoint, "baseline_", "the baseline model"});
  for (uint32_t r = 1; r < exposure::Replicates(e); ++r) {
    sources.push_back({exposure::ReplicatePoint(r), absl::StrCat("replicate", r, "_"),
                       absl::StrCat("canary replicate ", r)});
  }
  for (uint32_t j = 0; j < e.reference_models(); ++j) {
    sources.push_back({exposure::ReferencePoint(j), absl::StrCat("reference", j, "_"),
                       absl::StrCat("reference model ", j, " (no canaries)")});
  }
  const struct {
    const char* signal;
    const char* name;
    const char* axis;
    v1::ExportDtype dtype;
    const char* description;
  } kSignals[] = {
      {exposure::kPxBits, "px_bits", "canary", v1::FLOAT64,
       "log-perplexity of the canary, bits (lower = more likely)"},
      {exposure::kRank, "rank", "canary", v1::INT64,
       "exact rank of the canary among all of R (1 = most likely)"},
      {exposure::kExact, "exact", "canary", v1::UINT8,
       "1 when the rank is exact, 0 when the query budget ran out (a lower bound)"},
      {exposure::kReferencePxBits, "reference_px_bits", "sample", v1::FLOAT64,
       "log-perplexity of each candidate of the reference sample S, bits"},
  };
  std::vector<v1::ExportArray> out;
  uint64_t canaries = 0;
  MEMAUDIT_ASSIGN_OR_RETURN(auto repeats, Gather(store, audit_id, exposure::kCanaryPoint,
                                                 exposure::kRepeats, variants, &canaries));
  if (!repeats.has_value()) {
    return absl::FailedPreconditionError(absl::StrCat("audit ", audit_id, ": no canary model"));
  }
  out.push_back(MakeExportArray(
      "canary_repeats", {"canary"}, {canaries}, v1::INT64,
      "insertions of the canary into the corpus; 0 = a never-inserted control (canary order is "
      "the results' canaries[])",
      std::vector<double>(repeats->begin(), repeats->begin() + canaries)));
  for (const Source& source : sources) {
    for (const auto& s : kSignals) {
      uint64_t length = 0;
      MEMAUDIT_ASSIGN_OR_RETURN(auto values,
                                Gather(store, audit_id, source.point, s.signal, variants, &length));
      if (!values.has_value()) continue;
      out.push_back(MakeExportArray(
          absl::StrCat(source.prefix, s.name), {"variant", s.axis}, {variants, length}, s.dtype,
          absl::StrCat(s.description, ", under ", source.model), *std::move(values)));
    }
  }
  return out;
}

}  // namespace memaudit::scorer
