// Where the coordinator's state lives. The scheduler writes every decision
// through Commit before acting on it, so a restarted coordinator resumes from
// exactly what it acknowledged.
#ifndef MEMAUDIT_SERVICES_COORDINATOR_STORE_H_
#define MEMAUDIT_SERVICES_COORDINATOR_STORE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "services/coordinator/records.h"

namespace memaudit::coordinator {

class Store {
 public:
  virtual ~Store() = default;
  // Inserts the audit, its tasks and events; fails if the audit exists.
  virtual absl::Status CreateAudit(const AuditRecord& audit, const std::vector<TaskRecord>& tasks,
                                   const std::vector<EventRecord>& events) = 0;
  // Upserts the changed rows and appends the events of every mutation, in
  // order, atomically: one transaction, one sync to disk (group commit).
  virtual absl::Status CommitAll(absl::Span<const Mutation> mutations) = 0;
  absl::Status Commit(const Mutation& mutation) { return CommitAll({&mutation, 1}); }
  virtual absl::StatusOr<std::vector<AuditRecord>> LoadAudits() = 0;
  virtual absl::StatusOr<std::vector<TaskRecord>> LoadTasks() = 0;
  virtual absl::StatusOr<std::vector<EventRecord>> EventsAfter(const std::string& audit_id,
                                                               uint64_t after_sequence,
                                                               int limit) = 0;
  // Worker identities (their names) an administrator revoked: Register,
  // Lease and Heartbeat refuse them. A store without the table keeps none.
  virtual absl::Status AddRevokedWorker(const std::string& /*name*/) {
    return absl::UnimplementedError("this store keeps no revoked workers");
  }
  virtual absl::StatusOr<std::vector<std::string>> LoadRevokedWorkers() {
    return std::vector<std::string>{};
  }
};

}  // namespace memaudit::coordinator

#endif  // MEMAUDIT_SERVICES_COORDINATOR_STORE_H_
