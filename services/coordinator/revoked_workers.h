// Worker identities an administrator stopped trusting (AuditService
// RevokeWorker): the coordinator refuses their Register, Lease, Heartbeat,
// Complete and Fail, so a revoked worker takes no task and its held leases
// lapse (the tasks go back to the queue, no attempt spent). Kept in the
// coordinator's store across restarts; the scorer keeps its own record, which
// refuses the worker's observations and purges its runs from reuse.
#ifndef MEMAUDIT_SERVICES_COORDINATOR_REVOKED_WORKERS_H_
#define MEMAUDIT_SERVICES_COORDINATOR_REVOKED_WORKERS_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/security/identity.h"
#include "services/coordinator/store.h"

namespace memaudit::coordinator {

class RevokedWorkers {
 public:
  // The names `store` holds.
  static absl::StatusOr<std::unique_ptr<RevokedWorkers>> Load(Store* store);

  // PERMISSION_DENIED when `caller` is a revoked worker identity.
  absl::Status Check(const Identity& caller) const ABSL_LOCKS_EXCLUDED(mu_);
  // Stores `name` first, so a revocation answered OK survives a restart.
  absl::Status Add(const std::string& name) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  explicit RevokedWorkers(Store* store) : store_(store) {}
  Store* const store_;
  mutable absl::Mutex mu_;
  absl::flat_hash_set<std::string> names_ ABSL_GUARDED_BY(mu_);
};

}  // namespace memaudit::coordinator

#endif  // MEMAUDIT_SERVICES_COORDINATOR_REVOKED_WORKERS_H_
