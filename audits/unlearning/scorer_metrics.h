// Scores an `unlearning` audit ("When Machine Unlearning Jeopardizes
// Privacy") once every task has reported: feature rows per side (positives
// label 1, negatives 0), each attack classifier fitted on the shadow rows and
// evaluated on the target rows, per defense and feature; DegCount / DegRate
// against the classical-MIA baseline with the same defense and classifier.
#ifndef MEMAUDIT_AUDITS_UNLEARNING_SCORER_METRICS_H_
#define MEMAUDIT_AUDITS_UNLEARNING_SCORER_METRICS_H_

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

struct RequiredSignal {
  std::string point;
  std::string signal;
  uint32_t runs = 0;  // runs 0..runs-1 must all report it
};

// Everything the tasks of both sides send (audits/unlearning/signals.h).
std::vector<RequiredSignal> RequiredUnlearningSignals(const v1::UnlearningAudit& u);

// INVALID_ARGUMENT naming the field when `o` cannot belong to the audit.
absl::Status ValidateUnlearningObservation(const v1::UnlearningAudit& u, const v1::Observation& o);

// (point, signal) -> run -> values.
using UnlearningSignals =
    std::map<std::pair<std::string, std::string>, std::map<uint32_t, std::vector<double>>>;

// Whether every required signal has arrived from every run.
bool UnlearningSignalsComplete(const v1::UnlearningAudit& u, const UnlearningSignals& signals);

// Complete results (deterministic for the same signals); FAILED_PRECONDITION
// when a signal is missing.
absl::StatusOr<v1::AuditResults> ScoreUnlearning(const v1::AuditSpec& spec,
                                                 const UnlearningSignals& signals);

// Every signal of the audit stored so far (a side's map empty or partial
// while its tasks have not reported).
absl::StatusOr<UnlearningSignals> LoadUnlearningSignals(ScorerStore& store,
                                                        const std::string& audit_id,
                                                        const v1::AuditSpec& spec);

// The per-example arrays of a complete unlearning audit (docs/export.md):
// per defense, the target rows' released posteriors of the original and the
// unlearned model, and every attack's member probability per row.
absl::StatusOr<std::vector<v1::ExportArray>> UnlearningExport(const v1::AuditSpec& spec,
                                                              const UnlearningSignals& signals);

// Loads the audit's signals; nullopt until every task has reported, then
// ScoreUnlearning's results.
absl::StatusOr<std::optional<v1::AuditResults>> ScoreUnlearningFromStore(
    ScorerStore& store, const std::string& audit_id, const v1::AuditSpec& spec);

// Gauges memaudit_unlearning_auc_ratio{audit, team, defense, feature, classifier}
// (feature "baseline" = classical MIA), memaudit_unlearning_degcount_ratio and
// memaudit_unlearning_degrate_ratio{audit, team, defense, feature, classifier}
// (not for the baseline, which they compare against).
void PublishUnlearning(prometheus::Registry* metrics, const v1::AuditResults& results,
                       const std::string& team);

}  // namespace memaudit::scorer

#endif  // MEMAUDIT_AUDITS_UNLEARNING_SCORER_METRICS_H_
