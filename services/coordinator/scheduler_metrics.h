// The coordinator's Prometheus families, fed by the Scheduler. Kept apart so
// the scheduler's decisions read without metric plumbing in between; nothing
// here influences a decision.
//
//   memaudit_coordinator_tasks{state}                  gauge
//   memaudit_coordinator_queue_depth                   gauge
//   memaudit_coordinator_audits{state}                 gauge
//   memaudit_coordinator_audit_info{audit,name,team,kind} gauge, always 1
//   memaudit_coordinator_audit_progress_ratio{audit}   gauge
//   memaudit_coordinator_leases                        gauge
//   memaudit_coordinator_task_duration_seconds{outcome} histogram
//   memaudit_coordinator_task_retries_total{reason}    counter
//   memaudit_coordinator_workers_registered_total      counter
//   memaudit_coordinator_team_audits{team,state}       gauge
//   memaudit_coordinator_team_queued_tasks{team}       gauge
//   memaudit_coordinator_quota_refusals_total{limit}   counter
//   memaudit_coordinator_store_writes_total            counter
//   memaudit_coordinator_store_decisions_total         counter
//   memaudit_coordinator_store_write_seconds           histogram
#ifndef MEMAUDIT_SERVICES_COORDINATOR_SCHEDULER_METRICS_H_
#define MEMAUDIT_SERVICES_COORDINATOR_SCHEDULER_METRICS_H_

#include <array>
#include <cstdint>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "common/metrics/metrics.h"
#include "services/coordinator/records.h"
#include "services/coordinator/task_index.h"

namespace memaudit::coordinator {

// The longest name or team audit_info shows, in characters.
inline constexpr size_t kMaxLabelChars = 64;

// A caller's text (an audit's name, a team) as a label value a dashboard
// shows: valid UTF-8 (each byte that starts no valid sequence becomes
// U+FFFD), without control characters (tab, newline, carriage return, and
// the line and paragraph separators become a space; others U+FFFD) or the
// bidirectional controls that reorder what is displayed (U+FFFD), and at most
// `max_chars` characters (a longer text is cut and ends in "…"). Quotes and
// backslashes stay: the exposition format escapes them.
std::string LabelText(absl::string_view text, size_t max_chars = kMaxLabelChars);

// memaudit_coordinator_audit_progress_ratio: steps_done / steps_total as Get
// reports them (every step of a succeeded task, the last reported step of a
// running one); for an audit whose tasks have no steps, succeeded tasks /
// tasks; without tasks, 1 once succeeded and 0 before.
double AuditProgressRatio(const AuditTasks& tasks);

class SchedulerMetrics {
 public:
  // `registry` may be null: every call is then a no-op.
  explicit SchedulerMetrics(prometheus::Registry* registry);

  // A committed mutation changed `before` into `after` at `now_ms`. A lease
  // granted here is timed until the task leaves it (outcome succeeded,
  // failed, retried, released or cancelled). Leases granted before a restart have no
  // start time and are not observed.
  void TaskChanged(const TaskRecord& before, const TaskRecord& after, int64_t now_ms);

  // The state gauges: tasks and audits by state, queue depth, leases. The
  // scheduler keeps the totals change by change (task_index.h) and sets
  // them after each change.
  void SetTotals(const StateTotals& totals);
  // The per-team gauges of `team`: its audits by state and its unfinished
  // tasks. Audits owned by "" (from before owners were kept) are in the
  // totals only: nothing is set for "".
  void SetTeam(const std::string& team, const OwnerUsage& usage);
  // memaudit_coordinator_audit_info for an audit: its id, kind, and its name
  // and team through LabelText.
  void AuditKnown(const AuditRecord& audit);
  // memaudit_coordinator_audit_progress_ratio of an audit, from its counts.
  void AuditProgress(const std::string& audit_id, const AuditTasks& tasks);

  // `reason` is the scheduler's free text; it is mapped to a bounded label.
  void TaskRetried(const std::string& reason);
  // A task a worker gave back without failing (reason "released").
  void TaskReleased();
  void WorkerRegistered();
  // A Submit refused by the quota `limit` (quotas.h's kQuotaLimitNames).
  void QuotaRefused(const std::string& limit);
  // A group of `decisions` reached disk in one write taking `seconds`
  // (group_commit.h).
  void GroupWritten(size_t decisions, double seconds);

 private:
  struct TeamGauges {
    std::array<prometheus::Gauge*, kAuditStates> audits{};  // by v1::AuditState; [0] unused
    prometheus::Gauge* unfinished_tasks = nullptr;
  };

  prometheus::Registry* const registry_;
  // The state gauges, registered once (null without a registry).
  std::array<prometheus::Gauge*, kTaskStates> tasks_{};    // by TaskState
  std::array<prometheus::Gauge*, kAuditStates> audits_{};  // by v1::AuditState; [0] unused
  prometheus::Gauge* queue_depth_ = nullptr;
  prometheus::Gauge* leases_ = nullptr;
  prometheus::Counter* store_writes_ = nullptr;
  prometheus::Counter* store_decisions_ = nullptr;
  prometheus::Histogram* store_write_seconds_ = nullptr;
  prometheus::Family<prometheus::Gauge>* audit_info_ = nullptr;
  prometheus::Family<prometheus::Gauge>* audit_progress_ = nullptr;
  prometheus::Family<prometheus::Gauge>* team_audits_ = nullptr;
  prometheus::Family<prometheus::Gauge>* team_unfinished_ = nullptr;
  absl::Mutex mu_;
  std::map<std::string, int64_t> lease_started_ms_ ABSL_GUARDED_BY(mu_);  // by lease id
  std::map<std::string, TeamGauges> teams_ ABSL_GUARDED_BY(mu_);
};

}  // namespace memaudit::coordinator

#endif  // MEMAUDIT_SERVICES_COORDINATOR_SCHEDULER_METRICS_H_
