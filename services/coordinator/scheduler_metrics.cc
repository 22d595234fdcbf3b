#include "services/coordinator/scheduler_metrics.h"

#include <cctype>

#include "services/coordinator/quotas.h"

namespace memaudit::coordinator {
namespace {

constexpr char kTaskDuration[] = "memaudit_coordinator_task_duration_seconds";
constexpr char kRetries[] = "memaudit_coordinator_task_retries_total";
constexpr char kRegistered[] = "memaudit_coordinator_workers_registered_total";
constexpr char kQuotaRefusals[] = "memaudit_coordinator_quota_refusals_total";
constexpr char kTeamAudits[] = "memaudit_coordinator_team_audits";
constexpr char kTeamQueuedTasks[] = "memaudit_coordinator_team_queued_tasks";

std::string AuditStateLabel(v1::AuditState state) {
  std::string name = v1::AuditState_Name(state);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

std::map<std::string, double> ZeroAuditStates() {
  return {{"queued", 0}, {"running", 0}, {"succeeded", 0}, {"failed", 0}, {"cancelled", 0}};
}

// Tasks train for seconds (CPU quickstart) to hours (GPU sweeps).
const prometheus::Histogram::BucketBoundaries& DurationBuckets() {
  static const prometheus::Histogram::BucketBoundaries buckets = {
      0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400};
  return buckets;
}

const char* RetryReason(const std::string& reason) {
  return reason.rfind("lease expired", 0) == 0 ? "lease_expired" : "worker_error";
}

const char* LeaseOutcome(const TaskRecord& before, const TaskRecord& after) {
  switch (after.state) {
    case TaskState::kSucceeded:
      return "succeeded";
    case TaskState::kFailed:
      return "failed";
    case TaskState::kQueued:
      return after.releases > before.releases ? "released" : "retried";
    default:
      return "cancelled";
  }
}

}  // namespace

SchedulerMetrics::SchedulerMetrics(prometheus::Registry* registry) : registry_(registry) {
  if (registry_ == nullptr) return;
  // Counters start at 0 for every label value, so rate() and dashboards see
  // the series before the first event rather than "no data".
  auto& retries =
      metrics::AddCounter(*registry_, kRetries, "Tasks put back in the queue, by reason.");
  retries.Add({{"reason", "lease_expired"}});
  retries.Add({{"reason", "worker_error"}});
  retries.Add({{"reason", "released"}});
  metrics::AddCounter(*registry_, kRegistered,
                      "Workers that have registered since the coordinator started.")
      .Add({});
  metrics::AddHistogram(*registry_, kTaskDuration,
                        "Time from a task's lease to its end, by how the lease ended.");
  auto& refusals = metrics::AddCounter(*registry_, kQuotaRefusals,
                                       "Submits refused by a team's quota, by the limit.");
  for (const char* limit : kQuotaLimitNames) refusals.Add({{"limit", limit}});
}

void SchedulerMetrics::TaskChanged(const TaskRecord& before, const TaskRecord& after,
                                   int64_t now_ms) {
  if (registry_ == nullptr) return;
  const bool was_leased = before.state == TaskState::kLeased;
  const bool is_leased = after.state == TaskState::kLeased;
  absl::MutexLock lock(&mu_);
  if (!was_leased && is_leased) lease_started_ms_[after.lease_id] = now_ms;
  if (!was_leased || is_leased) return;
  auto it = lease_started_ms_.find(before.lease_id);
  if (it == lease_started_ms_.end()) return;
  metrics::AddHistogram(*registry_, kTaskDuration, "")
      .Add({{"outcome", LeaseOutcome(before, after)}}, DurationBuckets())
      .Observe(static_cast<double>(now_ms - it->second) / 1000.0);
  lease_started_ms_.erase(it);
}

void SchedulerMetrics::Refresh(const std::vector<TaskRecord>& tasks,
                               const std::map<std::string, AuditRecord>& audits, size_t leases) {
  if (registry_ == nullptr) return;
  std::map<std::string, double> by_state = {
      {"queued", 0}, {"running", 0}, {"succeeded", 0}, {"failed", 0}, {"cancelled", 0}};
  double leasable = 0;
  for (const TaskRecord& t : tasks) {
    by_state[TaskStateName(t.state)] += 1;
    // Queued tasks of a finished audit will never be leased: not queue depth.
    if (t.state != TaskState::kQueued) continue;
    auto audit = audits.find(t.audit_id);
    if (audit != audits.end() && !IsTerminal(audit->second.state)) leasable += 1;
  }
  auto& task_family =
      metrics::AddGauge(*registry_, "memaudit_coordinator_tasks", "Tasks known, by state.");
  for (const auto& [state, count] : by_state) task_family.Add({{"state", state}}).Set(count);
  metrics::AddGauge(*registry_, "memaudit_coordinator_queue_depth",
                    "Tasks waiting for a worker (queued, in audits still running).")
      .Add({})
      .Set(leasable);

  std::map<std::string, double> audit_states = ZeroAuditStates();
  // Per owner: audits by state, and the unfinished tasks of its audits still
  // running (what the max_queued_tasks quota counts).
  std::map<std::string, std::map<std::string, double>> team_states;
  std::map<std::string, double> team_queued;
  auto& info = metrics::AddGauge(*registry_, "memaudit_coordinator_audit_info",
                                 "Always 1; labels map each audit id to its kind.");
  for (const auto& [id, a] : audits) {
    const std::string name = AuditStateLabel(a.state);
    audit_states[name] += 1;
    if (!a.team.empty()) {
      auto [states, fresh] = team_states.try_emplace(a.team);
      if (fresh) states->second = ZeroAuditStates();
      states->second[name] += 1;
      team_queued.try_emplace(a.team, 0);
    }
    info.Add({{"audit", id}, {"kind", a.kind}}).Set(1);
  }
  for (const TaskRecord& t : tasks) {
    if (t.state != TaskState::kQueued && t.state != TaskState::kLeased) continue;
    auto audit = audits.find(t.audit_id);
    if (audit == audits.end() || audit->second.team.empty() || IsTerminal(audit->second.state)) {
      continue;
    }
    team_queued[audit->second.team] += 1;
  }
  auto& team_audits =
      metrics::AddGauge(*registry_, kTeamAudits, "Audits known, by owning team and state.");
  for (const auto& [team, states] : team_states) {
    for (const auto& [state, count] : states) {
      team_audits.Add({{"team", team}, {"state", state}}).Set(count);
    }
  }
  auto& queued_family =
      metrics::AddGauge(*registry_, kTeamQueuedTasks,
                        "Unfinished (queued or running) tasks of a team's audits still running.");
  for (const auto& [team, count] : team_queued) queued_family.Add({{"team", team}}).Set(count);
  auto& audit_family =
      metrics::AddGauge(*registry_, "memaudit_coordinator_audits", "Audits known, by state.");
  for (const auto& [state, count] : audit_states) audit_family.Add({{"state", state}}).Set(count);
  metrics::AddGauge(*registry_, "memaudit_coordinator_leases", "Leases currently held by workers.")
      .Add({})
      .Set(static_cast<double>(leases));
}

void SchedulerMetrics::TaskRetried(const std::string& reason) {
  if (registry_ == nullptr) return;
  metrics::AddCounter(*registry_, kRetries, "").Add({{"reason", RetryReason(reason)}}).Increment();
}

void SchedulerMetrics::TaskReleased() {
  if (registry_ == nullptr) return;
  metrics::AddCounter(*registry_, kRetries, "").Add({{"reason", "released"}}).Increment();
}

void SchedulerMetrics::QuotaRefused(const std::string& limit) {
  if (registry_ == nullptr) return;
  metrics::AddCounter(*registry_, kQuotaRefusals, "").Add({{"limit", limit}}).Increment();
}

void SchedulerMetrics::WorkerRegistered() {
  if (registry_ == nullptr) return;
  metrics::AddCounter(*registry_, kRegistered, "").Add({}).Increment();
}

}  // namespace memaudit::coordinator
