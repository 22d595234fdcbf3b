// Scores an `exposure` audit (The Secret Sharer) once its canary model's
// observations are in: exact, sampled and extrapolated exposure per canary,
// exposure against insertions, controls and extraction.
#ifndef MEMAUDIT_SERVICES_SCORER_EXPOSURE_METRICS_H_
#define MEMAUDIT_SERVICES_SCORER_EXPOSURE_METRICS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/metrics_registry.h"
#include "memaudit/v1/results.pb.h"
#include "memaudit/v1/scorer.pb.h"
#include "memaudit/v1/spec.pb.h"

namespace memaudit::scorer {

// Canary models an exposure audit trains (one; sweeps would add more).
inline constexpr uint32_t kExposureModels = 1;

// The signals the scorer needs from each canary model.
std::vector<std::string> RequiredExposureSignals(const v1::ExposureAudit& e);

// INVALID_ARGUMENT naming the field when `o` cannot belong to the audit.
absl::Status ValidateExposureObservation(const v1::ExposureAudit& e, const v1::Observation& o);

// `signals` maps signal name -> values of one model (every required signal).
absl::StatusOr<v1::AuditResults> ScoreExposure(
    const v1::AuditSpec& spec, const std::map<std::string, std::vector<double>>& signals);

// Gauges memaudit_exposure_log2{audit, insertions, estimator} (the median per
// insertion count; 0 = controls) and memaudit_exposure_space_log2{audit}.
void PublishExposure(metrics::Registry* metrics, const v1::AuditResults& results);

}  // namespace memaudit::scorer

#endif  // MEMAUDIT_SERVICES_SCORER_EXPOSURE_METRICS_H_
