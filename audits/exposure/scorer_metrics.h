// Scores an `exposure` audit (The Secret Sharer) once every model's
// observations are in: per sweep variant, exact, sampled and extrapolated
// exposure per canary, exposure against insertions, controls and extraction;
// with a baseline model, each canary's exposure without the canaries in the
// corpus (every estimator the spec asks for); with reference models,
// reference-calibrated exposure (sampled, and exact over all of R); with
// replicates, exposure across them (exposure_replicates.h).
#ifndef MEMAUDIT_AUDITS_EXPOSURE_SCORER_METRICS_H_
#define MEMAUDIT_AUDITS_EXPOSURE_SCORER_METRICS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/metrics/metrics.h"
#include "memaudit/v1/export.pb.h"
#include "memaudit/v1/results.pb.h"
#include "memaudit/v1/scorer.pb.h"
#include "memaudit/v1/spec.pb.h"
#include "services/scorer/kind_handler.h"
#include "services/scorer/scorer_store.h"

namespace memaudit::scorer {

// Models an exposure audit trains: per variant, the canary model and its
// replicates, the baseline and the reference models.
uint32_t ExposureModels(const v1::ExposureAudit& e);

// INVALID_ARGUMENT naming the field when `o` cannot belong to the audit.
absl::Status ValidateExposureObservation(const v1::ExposureAudit& e, const v1::Observation& o);

// (point, signal) -> run (the variant) -> values.
using ExposureSignals =
    std::map<std::pair<std::string, std::string>, std::map<uint32_t, std::vector<double>>>;

// nullopt until every model has sent every signal (audits/exposure/signals.h).
absl::StatusOr<std::optional<v1::AuditResults>> ScoreExposure(const v1::AuditSpec& spec,
                                                              const ExposureSignals& signals);
absl::StatusOr<std::optional<v1::AuditResults>> ScoreExposureFromStore(ScorerStore& store,
                                                                       const std::string& audit_id,
                                                                       const v1::AuditSpec& spec);

// The per-example arrays of a complete exposure audit (docs/export.md):
// each model's Px of the canaries and of S, ranks, per variant
// (exposure_export.cc).
absl::StatusOr<std::vector<v1::ExportArray>> ExposureExport(ScorerStore& store,
                                                            const std::string& audit_id,
                                                            const v1::AuditSpec& spec);

// Gauges memaudit_exposure_log2{audit, team, variant, insertions, estimator} (the
// median per insertion count, 0 = controls; estimator exact, sampled,
// extrapolated, baseline (exact under the baseline model), baseline_sampled,
// baseline_extrapolated, calibrated (sampled) or calibrated_exact; variant
// "base" without a sweep) and memaudit_exposure_space_log2{audit, team}.
void PublishExposure(prometheus::Registry* metrics, const v1::AuditResults& results,
                     const std::string& team);

}  // namespace memaudit::scorer

#endif  // MEMAUDIT_AUDITS_EXPOSURE_SCORER_METRICS_H_
