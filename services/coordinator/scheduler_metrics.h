// The coordinator's Prometheus families, fed by the Scheduler. Kept apart so
// the scheduler's decisions read without metric plumbing in between; nothing
// here influences a decision.
//
//   memaudit_coordinator_tasks{state}                  gauge
//   memaudit_coordinator_queue_depth                   gauge
//   memaudit_coordinator_audits{state}                 gauge
//   memaudit_coordinator_audit_info{audit,kind}        gauge, always 1
//   memaudit_coordinator_leases                        gauge
//   memaudit_coordinator_task_duration_seconds{outcome} histogram
//   memaudit_coordinator_task_retries_total{reason}    counter
//   memaudit_coordinator_workers_registered_total      counter
//   memaudit_coordinator_team_audits{team,state}       gauge
//   memaudit_coordinator_team_queued_tasks{team}       gauge
//   memaudit_coordinator_quota_refusals_total{limit}   counter
#ifndef MEMAUDIT_SERVICES_COORDINATOR_SCHEDULER_METRICS_H_
#define MEMAUDIT_SERVICES_COORDINATOR_SCHEDULER_METRICS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/metrics.h"
#include "services/coordinator/records.h"

namespace memaudit::coordinator {

class SchedulerMetrics {
 public:
  // `registry` may be null: every call is then a no-op.
  explicit SchedulerMetrics(prometheus::Registry* registry);

  // A committed mutation changed `before` into `after` at `now_ms`. A lease
  // granted here is timed until the task leaves it (outcome succeeded,
  // failed, retried, released or cancelled). Leases granted before a restart have no
  // start time and are not observed.
  void TaskChanged(const TaskRecord& before, const TaskRecord& after, int64_t now_ms);

  // Recomputes the state gauges from the scheduler's whole state, the
  // per-team ones included (audits owned by "", from before owners were
  // kept, are in the totals only).
  void Refresh(const std::vector<TaskRecord>& tasks,
               const std::map<std::string, AuditRecord>& audits, size_t leases);

  // `reason` is the scheduler's free text; it is mapped to a bounded label.
  void TaskRetried(const std::string& reason);
  // A task a worker gave back without failing (reason "released").
  void TaskReleased();
  void WorkerRegistered();
  // A Submit refused by the quota `limit` (quotas.h's kQuotaLimitNames).
  void QuotaRefused(const std::string& limit);

 private:
  prometheus::Registry* const registry_;
  absl::Mutex mu_;
  std::map<std::string, int64_t> lease_started_ms_ ABSL_GUARDED_BY(mu_);  // by lease id
};

}  // namespace memaudit::coordinator

#endif  // MEMAUDIT_SERVICES_COORDINATOR_SCHEDULER_METRICS_H_
