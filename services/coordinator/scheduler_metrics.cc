#include "services/coordinator/scheduler_metrics.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <vector>

#include "common/base/utf8.h"
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

// Tasks train for seconds (CPU quickstart) to hours (GPU sweeps).
const prometheus::Histogram::BucketBoundaries& DurationBuckets() {
  static const prometheus::Histogram::BucketBoundaries buckets = {
      0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400};
  return buckets;
}

const char* RetryReason(const std::string& reason) {
  return reason.rfind("lease expired", 0) == 0 ? "lease_expired" : "worker_error";
}

// What a code point of a caller's text is shown as (-1: as is).
int32_t Displayed(int32_t cp) {
  constexpr int32_t kReplacement = 0xFFFD;
  if (cp < 0) return kReplacement;
  if (cp == '\t' || cp == '\n' || cp == '\r' || cp == 0x2028 || cp == 0x2029) return ' ';
  if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)) return kReplacement;  // C0, DEL, C1
  // Bidirectional embeddings, overrides and isolates: they reorder what
  // follows them on screen (a name could show as another's).
  if ((cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069)) return kReplacement;
  return -1;
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

std::string LabelText(absl::string_view text, size_t max_chars) {
  std::vector<int32_t> chars;
  for (size_t i = 0; i < text.size() && chars.size() <= max_chars;) {
    const int32_t cp = NextCodePoint(text, &i);
    const int32_t shown = Displayed(cp);
    chars.push_back(shown >= 0 ? shown : cp);
  }
  if (chars.size() > max_chars) {
    chars.resize(max_chars > 0 ? max_chars - 1 : 0);
    if (max_chars > 0) chars.push_back(0x2026);  // …
  }
  std::string out;
  out.reserve(std::min(text.size(), 4 * max_chars) + 3);
  for (int32_t cp : chars) AppendUtf8(cp, &out);
  return out;
}

double AuditProgressRatio(const AuditTasks& tasks) {
  if (tasks.steps_total > 0) {
    return std::min(1.0,
                    static_cast<double>(tasks.steps_done) / static_cast<double>(tasks.steps_total));
  }
  if (tasks.total > 0) {
    return static_cast<double>(tasks.by_state[static_cast<size_t>(TaskState::kSucceeded)]) /
           static_cast<double>(tasks.total);
  }
  return tasks.state == v1::SUCCEEDED ? 1.0 : 0.0;
}

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

  // The state gauges, every series from the start (at 0 until set).
  auto& tasks =
      metrics::AddGauge(*registry_, "memaudit_coordinator_tasks", "Tasks known, by state.");
  for (size_t i = 0; i < kTaskStates; ++i) {
    tasks_[i] = &tasks.Add({{"state", TaskStateName(static_cast<TaskState>(i))}});
  }
  queue_depth_ = &metrics::AddGauge(*registry_, "memaudit_coordinator_queue_depth",
                                    "Tasks waiting for a worker (queued, in audits still running).")
                      .Add({});
  audit_info_ = &metrics::AddGauge(
      *registry_, "memaudit_coordinator_audit_info",
      "Always 1; labels map each audit id to its kind, name and team (name and team at most 64 "
      "characters, control characters replaced).");
  audit_progress_ = &metrics::AddGauge(
      *registry_, "memaudit_coordinator_audit_progress_ratio",
      "Training steps done / steps planned of an audit (succeeded / all tasks when its tasks "
      "have no steps).");
  team_audits_ =
      &metrics::AddGauge(*registry_, kTeamAudits, "Audits known, by owning team and state.");
  team_unfinished_ =
      &metrics::AddGauge(*registry_, kTeamQueuedTasks,
                         "Unfinished (queued or running) tasks of a team's audits still running.");
  auto& audits =
      metrics::AddGauge(*registry_, "memaudit_coordinator_audits", "Audits known, by state.");
  for (size_t i = 1; i < kAuditStates; ++i) {
    audits_[i] = &audits.Add({{"state", AuditStateLabel(static_cast<v1::AuditState>(i))}});
  }
  leases_ = &metrics::AddGauge(*registry_, "memaudit_coordinator_leases",
                               "Leases currently held by workers.")
                 .Add({});
  store_writes_ =
      &metrics::AddCounter(*registry_, "memaudit_coordinator_store_writes_total",
                           "Transactions written to the database (each a group of decisions).")
           .Add({});
  store_decisions_ = &metrics::AddCounter(*registry_, "memaudit_coordinator_store_decisions_total",
                                          "Decisions written to the database.")
                          .Add({});
  // 50 us .. 1.6 s: a sync to disk is a fraction of a millisecond to tens.
  store_write_seconds_ =
      &metrics::AddHistogram(*registry_, "memaudit_coordinator_store_write_seconds",
                             "Time to write one group of decisions, sync to disk included.")
           .Add({}, prometheus::Histogram::BucketBoundaries{
                        0.00005, 0.0001, 0.0002, 0.0004, 0.0008, 0.0016, 0.0032, 0.0064, 0.0128,
                        0.0256, 0.0512, 0.1024, 0.2048, 0.4096, 0.8192, 1.6384});
}

void SchedulerMetrics::GroupWritten(size_t decisions, double seconds) {
  if (registry_ == nullptr) return;
  store_writes_->Increment();
  store_decisions_->Increment(static_cast<double>(decisions));
  store_write_seconds_->Observe(seconds);
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

void SchedulerMetrics::SetTotals(const StateTotals& totals) {
  if (registry_ == nullptr) return;
  for (size_t i = 0; i < kTaskStates; ++i) tasks_[i]->Set(static_cast<double>(totals.tasks[i]));
  for (size_t i = 1; i < kAuditStates; ++i) audits_[i]->Set(static_cast<double>(totals.audits[i]));
  queue_depth_->Set(static_cast<double>(totals.queue_depth));
  leases_->Set(static_cast<double>(totals.leases));
}

void SchedulerMetrics::SetTeam(const std::string& team, const OwnerUsage& usage) {
  if (registry_ == nullptr || team.empty()) return;
  absl::MutexLock lock(&mu_);
  auto [it, fresh] = teams_.try_emplace(team);
  TeamGauges& gauges = it->second;
  if (fresh) {
    for (size_t i = 1; i < kAuditStates; ++i) {
      gauges.audits[i] = &team_audits_->Add(
          {{"team", team}, {"state", AuditStateLabel(static_cast<v1::AuditState>(i))}});
    }
    gauges.unfinished_tasks = &team_unfinished_->Add({{"team", team}});
  }
  for (size_t i = 1; i < kAuditStates; ++i) {
    gauges.audits[i]->Set(static_cast<double>(usage.audits[i]));
  }
  gauges.unfinished_tasks->Set(static_cast<double>(usage.unfinished_tasks));
}

void SchedulerMetrics::AuditKnown(const AuditRecord& audit) {
  if (registry_ == nullptr) return;
  audit_info_
      ->Add({{"audit", audit.audit_id},
             {"kind", audit.kind},
             {"name", LabelText(audit.name)},
             {"team", LabelText(audit.team)}})
      .Set(1);
}

void SchedulerMetrics::AuditProgress(const std::string& audit_id, const AuditTasks& tasks) {
  if (registry_ == nullptr) return;
  audit_progress_->Add({{"audit", audit_id}}).Set(AuditProgressRatio(tasks));
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
