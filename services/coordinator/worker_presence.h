// Which workers are alive right now, for memaudit_coordinator_workers_connected:
// a worker counts while it has called the WorkerService (Register, Lease,
// Heartbeat, Complete, Fail) within the last `window_ms`. An idle worker
// long-polls Lease back to back and a busy one heartbeats, so a live worker
// is seen far more often than once per window.
#ifndef MEMAUDIT_SERVICES_COORDINATOR_WORKER_PRESENCE_H_
#define MEMAUDIT_SERVICES_COORDINATOR_WORKER_PRESENCE_H_

#include <cstdint>
#include <set>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "common/base/clock.h"
#include "common/metrics/metrics.h"

namespace memaudit::coordinator {

class WorkerPresence {
 public:
  // `registry` may be null.
  WorkerPresence(const Clock* clock, int64_t window_ms, prometheus::Registry* registry);

  // Records a call from `worker_id` (ignored when empty). O(log workers):
  // every worker RPC calls it.
  void Seen(const std::string& worker_id);
  // Forgets workers silent for longer than the window, updates the gauge and
  // returns the count. Call periodically: a worker that dies calls nothing.
  size_t Refresh();

 private:
  // Forgets the workers silent past the window (oldest first) and sets the
  // gauge.
  size_t ForgetSilent() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Clock* const clock_;
  const int64_t window_ms_;
  prometheus::Gauge* const gauge_;  // null without a registry
  absl::Mutex mu_;
  // Pruned, so bounded by the live fleet: when each worker was last seen,
  // and the same by time, oldest first.
  absl::flat_hash_map<std::string, int64_t> last_seen_ms_ ABSL_GUARDED_BY(mu_);
  std::set<std::pair<int64_t, std::string>> by_time_ ABSL_GUARDED_BY(mu_);
};

}  // namespace memaudit::coordinator

#endif  // MEMAUDIT_SERVICES_COORDINATOR_WORKER_PRESENCE_H_
