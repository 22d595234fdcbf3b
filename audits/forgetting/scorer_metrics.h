// Scores a `forgetting` audit once every trial has reported every evaluation
// point: membership inference on the injected examples (injected arm vs
// baseline arm) per point, averaged across trials, i.e. the forgetting curve.
// LM canaries: mean exposure per repeat group and point instead.
#ifndef MEMAUDIT_AUDITS_FORGETTING_SCORER_METRICS_H_
#define MEMAUDIT_AUDITS_FORGETTING_SCORER_METRICS_H_

#include <cstdint>
#include <map>
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

namespace memaudit::scorer {

// (point, signal) pairs every trial must send.
std::vector<std::pair<std::string, std::string>> RequiredForgettingSignals(
    const v1::ForgettingAudit& f);

// INVALID_ARGUMENT naming the field when `o` cannot belong to the audit.
absl::Status ValidateForgettingObservation(const v1::ForgettingAudit& f, const v1::Observation& o);

// (point, signal) -> trial -> values; every required pair for every trial.
using ForgettingSignals =
    std::map<std::pair<std::string, std::string>, std::map<uint32_t, std::vector<double>>>;

absl::StatusOr<v1::AuditResults> ScoreForgetting(const v1::AuditSpec& spec,
                                                 const ForgettingSignals& signals);

// How far scored results have come: curve points (LM canaries: exposure
// points over every group), plus 1 once complete; 0 = nothing to store yet.
// The scorer stores a new version only when this grows.
// The per-example arrays of a complete forgetting audit (docs/export.md):
// steps, each arm's attack scores of Dp and every trial's metrics per point;
// LM canaries: each trial's per-canary exposure per point.
absl::StatusOr<std::vector<v1::ExportArray>> ForgettingExport(const v1::AuditSpec& spec,
                                                              const ForgettingSignals& signals);

uint64_t ForgettingProgress(const v1::AuditResults& results);

// Gauges memaudit_forgetting_mi_accuracy_ratio{audit, team, strategy,
// steps_since_injection} with its 95% interval over trials in
// memaudit_forgetting_mi_accuracy_low_ratio and _high_ratio (same labels),
// memaudit_forgetting_tpr_ratio and memaudit_forgetting_epsilon_lower_bound
// {audit, team, strategy, fpr, steps_since_injection} (at most 64 points per
// audit). LM canaries instead: memaudit_forgetting_canary_exposure_log2{audit,
// team, strategy, repeats, arm, steps_since_injection} (arm injected or
// baseline; repeats 0 = controls) with its interval in
// memaudit_forgetting_canary_exposure_low_log2 and _high_log2, and
// memaudit_forgetting_canary_space_log2{audit, team}.
void PublishForgetting(prometheus::Registry* metrics, const v1::AuditResults& results,
                       const std::string& team);

}  // namespace memaudit::scorer

#endif  // MEMAUDIT_AUDITS_FORGETTING_SCORER_METRICS_H_
