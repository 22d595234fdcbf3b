// Scores a forgetting audit's `construction`: at each evaluation point every
// trial's two guesses (IN arm, OUT arm) are tallied into the fixed
// adversary's accuracy and precision with Clopper-Pearson intervals, beside
// the closed forms of mean estimation (docs/audits/forgetting.md,
// "Constructions").
#ifndef MEMAUDIT_AUDITS_FORGETTING_SCORER_METRICS_CONSTRUCTION_H_
#define MEMAUDIT_AUDITS_FORGETTING_SCORER_METRICS_CONSTRUCTION_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "audits/forgetting/scorer_metrics.h"

namespace memaudit::scorer {

// (point, signal) pairs every trial sends.
std::vector<std::pair<std::string, std::string>> RequiredConstructionSignals(
    const v1::ForgettingAudit& f);

// `o`'s point and signal are the construction's, with one value, 0 or 1.
absl::Status ValidateConstructionObservation(const v1::ForgettingAudit& f,
                                             const v1::Observation& o);

// The curve over every point all trials have reached; complete when all.
absl::StatusOr<v1::AuditResults> ScoreConstruction(const v1::AuditSpec& spec,
                                                   const ForgettingSignals& signals);

// steps_since_injection [point], and guess_injected, guess_baseline,
// arms_identical [point, trial] (0/1).
absl::StatusOr<std::vector<v1::ExportArray>> ConstructionExport(const v1::AuditSpec& spec,
                                                                const ForgettingSignals& signals);

}  // namespace memaudit::scorer

#endif  // MEMAUDIT_AUDITS_FORGETTING_SCORER_METRICS_CONSTRUCTION_H_
