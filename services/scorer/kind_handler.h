// What the scorer does differently for each audit kind. Each kind implements
// KindHandler in its folder (audits/<kind>/scorer_metrics.cc) and binds it to its kind there
// (HandlerOfKind, common/messages/kind_table.h); HandlerFor is the one dispatch on the kind.
#ifndef MEMAUDIT_SERVICES_SCORER_KIND_HANDLER_H_
#define MEMAUDIT_SERVICES_SCORER_KIND_HANDLER_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/messages/audit_kinds.h"
#include "common/messages/kind_table.h"
#include "common/metrics/metrics.h"
#include "common/security/capability.h"
#include "memaudit/v1/export.pb.h"
#include "memaudit/v1/results.pb.h"
#include "memaudit/v1/scorer.pb.h"
#include "memaudit/v1/spec.pb.h"
#include "services/scorer/scorer_store.h"

namespace memaudit::scorer {

class KindHandler {
 public:
  virtual ~KindHandler() = default;

  // OK when `o` is an observation the audit `spec` expects (run, point,
  // signal, length, finite values); INVALID_ARGUMENT naming the field if not.
  virtual absl::Status ValidateObservation(const v1::AuditSpec& spec,
                                           const v1::Observation& o) const = 0;

  // The audit's results from what `store` holds, or nullopt while there is
  // nothing new to publish (inputs still missing, or no point beyond the
  // stored partial results).
  virtual absl::StatusOr<std::optional<v1::AuditResults>> Score(
      ScorerStore& store, const std::string& audit_id, const v1::AuditSpec& spec) const = 0;

  // Whether the kind publishes partial results while its tasks still run
  // (a forgetting curve filling in): scored as observations arrive. Other
  // kinds are scored once their last task's lease is sealed.
  virtual bool Streams() const { return false; }

  // What GetResults answers before the first scoring: complete = false, with
  // the kind and the sizes the spec plans.
  virtual v1::AuditResults Placeholder(const v1::AuditSpec& spec) const = 0;

  // What the results of `spec` should warn of (result_warnings.h): settings
  // under which a number is undefined or too noisy to trust. None by default.
  virtual std::vector<v1::ResultWarning> Warnings(const v1::AuditSpec& /*spec*/) const {
    return {};
  }

  // The audit's per-example arrays (docs/export.md) from what `store` holds;
  // called only for complete results. The same spec and observations give
  // the same arrays.
  virtual absl::StatusOr<std::vector<v1::ExportArray>> Export(ScorerStore& store,
                                                              const std::string& audit_id,
                                                              const v1::AuditSpec& spec) const = 0;

  // Sets the kind's result gauges from `results`; every series carries the
  // labels audit and team (the team that submitted the audit).
  virtual void Publish(prometheus::Registry& registry, const v1::AuditResults& results,
                       const std::string& team) const = 0;

  // The task of the coordinator's plan (its role and index, as the kind's
  // coordinator handler plans them) that sends `o`: the task whose
  // capability `o` must carry. INVALID_ARGUMENT naming the field when no
  // task of `spec` sends such an observation.
  virtual absl::StatusOr<TaskRef> TaskOf(const v1::AuditSpec& spec,
                                         const v1::Observation& o) const = 0;

  // Every observation task `task` of `spec` sends: what the scorer must hold
  // before the coordinator counts the task complete. May read `store` (an
  // exposure canary model's evaluation points follow from the training steps
  // it reported). INVALID_ARGUMENT for a task the plan does not have.
  virtual absl::StatusOr<std::vector<ObservationKey>> TaskObservations(
      ScorerStore& store, const std::string& audit_id, const v1::AuditSpec& spec,
      const TaskRef& task) const = 0;

  // Content-keyed reuse: records each run's key and copies the observations
  // of runs an earlier audit already trained (ScorerStore::FindStoredRun:
  // runs written under a sealed lease by a writer not revoked, of audits
  // scored complete, not failed, of the same team unless `cross_team`);
  // returns those runs with their provenance. Kinds without reuse return
  // none.
  virtual absl::StatusOr<std::vector<v1::ReusedRun>> ReuseStoredRuns(
      ScorerStore& /*store*/, const std::string& /*audit_id*/, const v1::AuditSpec& /*spec*/,
      bool /*cross_team*/) const {
    return std::vector<v1::ReusedRun>{};
  }
};

// The handler of `kind`; null for KIND_NOT_SET.
const KindHandler* HandlerFor(AuditKind kind);

}  // namespace memaudit::scorer

namespace memaudit {
// Each kind's file of this layer binds its handler (common/messages/kind_table.h).
MEMAUDIT_DECLARE_KIND_HANDLERS(scorer::KindHandler);
}  // namespace memaudit

#endif  // MEMAUDIT_SERVICES_SCORER_KIND_HANDLER_H_
