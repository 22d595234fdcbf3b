// Scores a `relational` audit: per variant and measured point, the success
// of recovering the private part y from the corrupted record x on training
// and held-out data (scoring/relational.h), and RM_norm = s_train - s_val.
// Curves fill in point by point as workers stream them.
#ifndef MEMAUDIT_AUDITS_RELATIONAL_SCORER_METRICS_H_
#define MEMAUDIT_AUDITS_RELATIONAL_SCORER_METRICS_H_

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

// (point, signal) pairs every variant must send: the truth, then four per
// measured point.
std::vector<std::pair<std::string, std::string>> RequiredRelationalSignals(
    const v1::RelationalAudit& r);

// INVALID_ARGUMENT naming the field when `o` cannot belong to the audit.
absl::Status ValidateRelationalObservation(const v1::RelationalAudit& r, const v1::Observation& o);

// (point, signal) -> variant -> values.
using RelationalSignals =
    std::map<std::pair<std::string, std::string>, std::map<uint32_t, std::vector<double>>>;

// Each variant's curve covers the points it has reached (a prefix: tasks
// measure in ascending order); complete once every variant reached them all.
absl::StatusOr<v1::AuditResults> ScoreRelational(const v1::AuditSpec& spec,
                                                 const RelationalSignals& signals);

// The per-example arrays of a complete relational audit (docs/export.md):
// every record's success per variant, point and metric.
absl::StatusOr<std::vector<v1::ExportArray>> RelationalExport(const v1::AuditSpec& spec,
                                                              const RelationalSignals& signals);

// What has arrived for `audit_id`.
absl::StatusOr<RelationalSignals> LoadRelationalSignals(ScorerStore& store,
                                                        const std::string& audit_id,
                                                        const v1::AuditSpec& spec);

// Loads what has arrived for `audit_id` and scores it. nullopt when there is
// nothing new to store: no point yet, or the same points as the stored
// results.
absl::StatusOr<std::optional<v1::AuditResults>> ScoreRelationalFromStore(
    ScorerStore& store, const std::string& audit_id, const v1::AuditSpec& spec);

// The partial document before any point: kind, models (variants), examples.
v1::AuditResults RelationalPlaceholder(const v1::AuditSpec& spec);

// Gauges memaudit_relational_rm_norm_ratio{audit, team, variant, metric}: RM_norm
// at each curve's latest point, and memaudit_relational_success_ratio{audit, team,
// variant, metric, split}: its s_train (split=train) and s_val (split=val).
// At most 16 variants x 2 metrics per audit.
void PublishRelational(prometheus::Registry* metrics, const v1::AuditResults& results,
                       const std::string& team);

}  // namespace memaudit::scorer

#endif  // MEMAUDIT_AUDITS_RELATIONAL_SCORER_METRICS_H_
