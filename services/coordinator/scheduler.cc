#include "services/coordinator/scheduler.h"

#include <google/protobuf/util/message_differencer.h>

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/capability.h"
#include "common/spec_yaml.h"
#include "common/task_fit.h"
#include "services/coordinator/planner.h"
#include "services/coordinator/spec_validator.h"

namespace memaudit::coordinator {
namespace {

// Audit, lease and worker ids: 128 bits from OpenSSL's CSPRNG (RAND_bytes),
// so an id seen by no one cannot be guessed.
std::string RandomId(const char* prefix) { return RandomHexId(prefix); }

bool Unfinished(TaskState s) { return s == TaskState::kQueued || s == TaskState::kLeased; }

// The models a plan trains (what the max_models_per_audit quota counts).
uint64_t PlannedModels(const Plan& plan) {
  uint64_t models = 0;
  for (const PlannedTask& p : plan.tasks) models += p.models;
  return models;
}

}  // namespace

std::string NewAuditId() { return RandomId("a-"); }

Scheduler::Scheduler(Store* store, const Clock* clock, SchedulerOptions options,
                     prometheus::Registry* metrics)
    : store_(store), clock_(clock), options_(std::move(options)), metrics_(metrics) {}

absl::StatusOr<std::unique_ptr<Scheduler>> Scheduler::Create(Store* store, const Clock* clock,
                                                             const SchedulerOptions& options,
                                                             prometheus::Registry* metrics) {
  std::unique_ptr<Scheduler> s(new Scheduler(store, clock, options, metrics));
  absl::MutexLock lock(&s->mu_);
  auto audits = store->LoadAudits();
  if (!audits.ok()) return audits.status();
  for (AuditRecord& a : *audits) {
    s->audit_order_.push_back(a.audit_id);
    if (!a.request_id.empty()) s->by_request_[{a.team, a.request_id}] = a.audit_id;
    s->audits_[a.audit_id] = std::move(a);
  }
  auto tasks = store->LoadTasks();
  if (!tasks.ok()) return tasks.status();
  s->tasks_ = std::move(*tasks);
  // Workers kept training while this coordinator was down and could not
  // heartbeat: each held lease gets a full TTL from now to be heard again,
  // so an outage longer than the TTL costs no attempt.
  const int64_t resumed_deadline = clock->NowMs() + options.lease_ttl_ms;
  for (size_t i = 0; i < s->tasks_.size(); ++i) {
    TaskRecord& t = s->tasks_[i];
    s->task_by_id_[t.task_id] = i;
    if (t.state != TaskState::kLeased) continue;
    s->task_by_lease_[t.lease_id] = i;
    t.lease_deadline_ms = std::max(t.lease_deadline_ms, resumed_deadline);
  }
  s->UpdateGauges();
  return s;
}

EventRecord Scheduler::Event(const std::string& audit_id, std::string type, std::string task_id,
                             std::string message) const {
  EventRecord e;
  e.audit_id = audit_id;
  e.unix_ms = clock_->NowMs();
  e.type = std::move(type);
  e.task_id = std::move(task_id);
  e.message = std::move(message);
  return e;
}

absl::Status Scheduler::Apply(const Mutation& m) {
  if (absl::Status s = store_->Commit(m); !s.ok()) return s;
  for (const TaskRecord& t : m.tasks) {
    const size_t i = task_by_id_.at(t.task_id);
    metrics_.TaskChanged(tasks_[i], t, clock_->NowMs());
    // Counted once committed: a retry whose commit failed never happened.
    // Only RetryOrFail (its error is the reason) and GiveBack (which counts
    // the release or expiry) put a leased task back in the queue.
    if (tasks_[i].state == TaskState::kLeased && t.state == TaskState::kQueued) {
      if (t.releases > tasks_[i].releases) {
        metrics_.TaskReleased();
      } else {  // a failure, or an expiry ("lease expired ...": lease_expired)
        metrics_.TaskRetried(t.error);
      }
    }
    if (tasks_[i].state == TaskState::kLeased) task_by_lease_.erase(tasks_[i].lease_id);
    tasks_[i] = t;
    if (t.state == TaskState::kLeased) task_by_lease_[t.lease_id] = i;
  }
  if (m.audit.has_value()) audits_[m.audit->audit_id] = *m.audit;
  ++version_;
  changed_.SignalAll();
  UpdateGauges();
  return absl::OkStatus();
}

v1::Audit Scheduler::Snapshot(const AuditRecord& a) const {
  v1::Audit out;
  out.set_audit_id(a.audit_id);
  out.set_name(a.name);
  out.set_kind(a.kind);
  out.set_state(a.state);
  out.set_created_unix_ms(a.created_ms);
  out.set_updated_unix_ms(a.updated_ms);
  out.set_error(a.error);
  out.set_team(a.team);
  *out.mutable_spec() = a.spec;
  v1::TaskCounts* c = out.mutable_tasks();
  uint64_t done = 0, total = 0;
  for (const TaskRecord& t : tasks_) {
    if (t.audit_id != a.audit_id) continue;
    c->set_total(c->total() + 1);
    total += t.steps_total;
    switch (t.state) {
      case TaskState::kQueued:
        c->set_queued(c->queued() + 1);
        break;
      case TaskState::kLeased:
        c->set_running(c->running() + 1);
        done += std::min(t.steps_done, t.steps_total);
        break;
      case TaskState::kSucceeded:
        c->set_succeeded(c->succeeded() + 1);
        done += t.steps_total;
        break;
      case TaskState::kFailed:
        c->set_failed(c->failed() + 1);
        break;
      case TaskState::kCancelled:
        c->set_cancelled(c->cancelled() + 1);
        break;
    }
  }
  out.set_steps_done(done);
  out.set_steps_total(total);
  return out;
}

absl::StatusOr<v1::Audit> Scheduler::Submit(const std::string& audit_id, const v1::AuditSpec& spec,
                                            const std::map<uint32_t, std::string>& reused) {
  Submission submission;
  submission.audit_id = audit_id;
  submission.spec = spec;
  submission.reused = reused;
  return Submit(submission);
}

absl::StatusOr<std::optional<v1::Audit>> Scheduler::AdmitLocked(const Submission& submission,
                                                                uint64_t planned_tasks,
                                                                uint64_t planned_models) {
  const std::string& owner = submission.caller.name;
  if (!submission.request_id.empty()) {
    auto seen = by_request_.find({owner, submission.request_id});
    if (seen != by_request_.end()) {
      const AuditRecord& earlier = audits_.at(seen->second);
      if (!google::protobuf::util::MessageDifferencer::Equals(earlier.spec, submission.spec)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "request_id ", QuoteValue(submission.request_id), " already created audit ",
            earlier.audit_id, " from a different spec; send this spec with a new request_id"));
      }
      return std::optional<v1::Audit>(Snapshot(earlier));
    }
  }
  const QuotaLimits limits = options_.quotas.For(owner);
  if (!limits.max_spec_bytes && !limits.max_models_per_audit && !limits.max_concurrent_audits &&
      !limits.max_queued_tasks) {
    return std::optional<v1::Audit>();
  }
  QuotaUsage usage;
  usage.planned_tasks = planned_tasks;
  usage.planned_models = planned_models;
  usage.spec_bytes =
      submission.spec_bytes != 0 ? submission.spec_bytes : submission.spec.ByteSizeLong();
  for (const auto& [id, a] : audits_) {
    if (a.team == owner && !IsTerminal(a.state)) ++usage.active_audits;
  }
  for (const TaskRecord& t : tasks_) {
    if (!Unfinished(t.state)) continue;
    const AuditRecord& a = audits_.at(t.audit_id);
    if (a.team == owner && !IsTerminal(a.state)) ++usage.queued_tasks;
  }
  std::string limit;
  if (absl::Status s = CheckQuota(limits, submission.caller.description, usage, &limit); !s.ok()) {
    metrics_.QuotaRefused(limit);
    return s;
  }
  return std::optional<v1::Audit>();
}

absl::StatusOr<std::optional<v1::Audit>> Scheduler::Admit(const Submission& submission) {
  auto plan = PlanAudit(submission.spec);
  if (!plan.ok()) return plan.status();
  absl::MutexLock lock(&mu_);
  return AdmitLocked(submission, plan->tasks.size(), PlannedModels(*plan));
}

absl::StatusOr<v1::Audit> Scheduler::Submit(const Submission& submission) {
  const std::string& audit_id = submission.audit_id;
  const v1::AuditSpec& spec = submission.spec;
  const std::map<uint32_t, std::string>& reused = submission.reused;
  auto plan = PlanAudit(spec);
  if (!plan.ok()) return plan.status();
  AuditRecord audit;
  audit.audit_id = audit_id;
  audit.name = spec.name();
  audit.kind = KindName(spec);
  audit.state = v1::QUEUED;
  audit.spec = spec;
  audit.created_ms = audit.updated_ms = clock_->NowMs();
  audit.team = submission.caller.name;
  audit.request_id = submission.request_id;
  std::vector<TaskRecord> tasks;
  for (const PlannedTask& p : plan->tasks) {
    TaskRecord t;
    t.task_id = absl::StrCat(audit_id, "/", p.role, "/", p.index);
    t.audit_id = audit_id;
    t.role = p.role;
    t.index = p.index;
    t.steps_total = p.steps_total;
    tasks.push_back(std::move(t));
  }
  std::vector<EventRecord> events = {
      Event(audit_id, "submitted", "",
            absl::StrCat("submitted by ", submission.caller.description, ": ", tasks.size(),
                         " tasks planned"))};
  size_t reused_tasks = 0;
  for (size_t i = 0; i < tasks.size(); ++i) {
    // Only kinds with content-keyed reuse (membership) are handed reused runs.
    // A task is reused only when every model it trains is: a partly reused
    // task retrains all its models (bit-identical; the scorer keeps one copy).
    const PlannedTask& p = plan->tasks[i];
    std::vector<std::string> from;
    bool all = p.models > 0;
    for (uint32_t model = p.first_model; all && model < p.first_model + p.models; ++model) {
      auto it = reused.find(model);
      all = it != reused.end();
      if (all && std::find(from.begin(), from.end(), it->second) == from.end()) {
        from.push_back(it->second);
      }
    }
    if (!all) continue;
    TaskRecord& t = tasks[i];
    t.state = TaskState::kSucceeded;
    t.steps_done = t.steps_total;
    events.push_back(Event(audit_id, "task_reused", t.task_id,
                           absl::StrCat(p.models == 1 ? "model" : "models", " reused from audit ",
                                        absl::StrJoin(from, ", "))));
    ++reused_tasks;
  }
  if (reused_tasks == tasks.size()) {
    audit.state = v1::SUCCEEDED;
    events.push_back(Event(audit_id, "audit_succeeded", "", "every model was reused"));
  }

  absl::MutexLock lock(&mu_);
  // Again, atomically with storing: a concurrent resend or submission may
  // have been stored since the caller's Admit.
  auto admitted = AdmitLocked(submission, tasks.size(), PlannedModels(*plan));
  if (!admitted.ok()) return admitted.status();
  if (admitted->has_value()) return **admitted;
  if (audits_.count(audit_id)) {
    return absl::AlreadyExistsError(absl::StrCat("audit ", audit_id, " already exists"));
  }
  if (absl::Status s = store_->CreateAudit(audit, tasks, events); !s.ok()) return s;
  audits_[audit_id] = audit;
  audit_order_.push_back(audit_id);
  if (!audit.request_id.empty()) by_request_[{audit.team, audit.request_id}] = audit_id;
  for (TaskRecord& t : tasks) {
    task_by_id_[t.task_id] = tasks_.size();
    tasks_.push_back(std::move(t));
  }
  ++version_;
  changed_.SignalAll();
  UpdateGauges();
  return Snapshot(audits_.at(audit_id));
}

absl::StatusOr<const AuditRecord*> Scheduler::Visible(const std::string& audit_id,
                                                      const Caller& caller) const {
  auto it = audits_.find(audit_id);
  // One message whether the audit is missing or another owner's: a caller
  // learns nothing about ids it does not own.
  if (it == audits_.end() || !caller.Sees(it->second)) {
    return absl::NotFoundError(absl::StrCat("no audit ", QuoteValue(audit_id)));
  }
  return &it->second;
}

absl::StatusOr<v1::Audit> Scheduler::Get(const std::string& audit_id, const Caller& caller) const {
  absl::MutexLock lock(&mu_);
  auto audit = Visible(audit_id, caller);
  if (!audit.ok()) return audit.status();
  return Snapshot(**audit);
}

std::vector<v1::Audit> Scheduler::List(size_t limit, const Caller& caller) const {
  absl::MutexLock lock(&mu_);
  std::vector<v1::Audit> out;
  for (auto it = audit_order_.rbegin(); it != audit_order_.rend() && out.size() < limit; ++it) {
    const AuditRecord& audit = audits_.at(*it);
    if (caller.Sees(audit)) out.push_back(Snapshot(audit));
  }
  return out;
}

void Scheduler::CancelRemaining(const std::string& audit_id, const std::string& except_task,
                                Mutation* m) {
  for (const TaskRecord& t : tasks_) {
    if (t.audit_id != audit_id || t.task_id == except_task || !Unfinished(t.state)) continue;
    TaskRecord c = t;
    c.state = TaskState::kCancelled;
    m->tasks.push_back(std::move(c));
  }
}

absl::StatusOr<v1::Audit> Scheduler::Cancel(const std::string& audit_id, const Caller& caller) {
  absl::MutexLock lock(&mu_);
  auto visible = Visible(audit_id, caller);
  if (!visible.ok()) return visible.status();
  const AuditRecord& audit = **visible;
  if (IsTerminal(audit.state)) return Snapshot(audit);
  Mutation m;
  CancelRemaining(audit_id, "", &m);
  AuditRecord a = audit;
  a.state = v1::CANCELLED;
  a.updated_ms = clock_->NowMs();
  m.audit = a;
  m.events.push_back(
      Event(audit_id, "audit_cancelled", "", absl::StrCat("cancelled by ", caller.description)));
  if (absl::Status s = Apply(m); !s.ok()) return s;
  return Snapshot(audits_.at(audit_id));
}

std::string Scheduler::RegisterWorker(const v1::WorkerCapabilities& capabilities) {
  std::string id = RandomId("w-");
  absl::MutexLock lock(&mu_);
  ForgetStaleWorkers();
  const int64_t now = clock_->NowMs();
  workers_[id] = RegisteredWorker{capabilities, now};
  workers_by_seen_.emplace(now, id);
  metrics_.WorkerRegistered();
  return id;
}

size_t Scheduler::registered_workers() const {
  absl::MutexLock lock(&mu_);
  return workers_.size();
}

void Scheduler::TouchWorker(const std::string& worker_id, int64_t seen_until_ms) {
  auto it = workers_.find(worker_id);
  if (it == workers_.end()) return;
  workers_by_seen_.erase({it->second.seen_until_ms, worker_id});
  it->second.seen_until_ms = seen_until_ms;
  workers_by_seen_.emplace(seen_until_ms, worker_id);
}

void Scheduler::ForgetStaleWorkers() {
  const int64_t oldest = clock_->NowMs() - options_.lease_ttl_ms * options_.worker_ttl_leases;
  while (!workers_by_seen_.empty() && workers_by_seen_.begin()->first < oldest) {
    workers_.erase(workers_by_seen_.begin()->second);
    workers_by_seen_.erase(workers_by_seen_.begin());
  }
}

absl::StatusOr<std::optional<LeaseGrant>> Scheduler::Lease(
    const std::string& worker_id, int wait_ms, const std::optional<WorkerOffer>& offer) {
  const absl::Time deadline = absl::Now() + absl::Milliseconds(wait_ms);
  absl::MutexLock lock(&mu_);
  // Alive while it waits here, however long the poll.
  TouchWorker(worker_id, clock_->NowMs() + std::max(wait_ms, 0));
  while (!shutdown_) {
    for (const TaskRecord& queued : tasks_) {
      if (queued.state != TaskState::kQueued) continue;
      const AuditRecord& audit = audits_.at(queued.audit_id);
      if (IsTerminal(audit.state)) continue;
      const TaskNeeds needs = NeedsOf(audit.spec.resources());
      if (offer.has_value() ? !Fits(needs, offer->total, offer->free) : needs.gpus > 0) continue;
      TaskRecord t = queued;
      t.state = TaskState::kLeased;
      t.attempts += 1;
      t.steps_done = 0;
      t.lease_id = RandomId("l-");
      t.worker_id = worker_id;
      t.lease_deadline_ms = clock_->NowMs() + options_.lease_ttl_ms;
      Mutation m;
      m.tasks.push_back(t);
      m.events.push_back(Event(t.audit_id, "task_leased", t.task_id,
                               absl::StrCat("attempt ", t.attempts, " on ", worker_id)));
      if (audit.state == v1::QUEUED) {
        AuditRecord a = audit;
        a.state = v1::RUNNING;
        a.updated_ms = clock_->NowMs();
        m.audit = a;
      }
      if (absl::Status s = Apply(m); !s.ok()) return s;
      return std::optional<LeaseGrant>(LeaseGrant{t, audit.spec});
    }
    if (changed_.WaitWithDeadline(&mu_, deadline)) break;  // true: timed out
  }
  return std::optional<LeaseGrant>();
}

absl::StatusOr<TaskRecord*> Scheduler::FindLease(const std::string& lease_id) {
  auto it = task_by_lease_.find(lease_id);
  if (it == task_by_lease_.end()) {
    return absl::FailedPreconditionError(
        absl::StrCat("lease ", lease_id, " is not held (expired, finished or cancelled)"));
  }
  return &tasks_[it->second];
}

absl::StatusOr<HeartbeatVerdict> Scheduler::Heartbeat(const std::string& lease_id,
                                                      uint64_t steps_done) {
  absl::MutexLock lock(&mu_);
  auto task = FindLease(lease_id);
  if (!task.ok()) return HeartbeatVerdict{true, std::string(task.status().message())};
  TouchWorker((*task)->worker_id, clock_->NowMs());
  TaskRecord t = **task;
  t.steps_done = steps_done;
  t.lease_deadline_ms = clock_->NowMs() + options_.lease_ttl_ms;
  Mutation m;
  m.tasks.push_back(t);
  if (absl::Status s = Apply(m); !s.ok()) return s;
  return HeartbeatVerdict{};
}

absl::Status Scheduler::Complete(const std::string& lease_id) {
  absl::MutexLock lock(&mu_);
  auto task = FindLease(lease_id);
  if (!task.ok()) return task.status();
  TouchWorker((*task)->worker_id, clock_->NowMs());
  TaskRecord t = **task;
  t.state = TaskState::kSucceeded;
  t.steps_done = t.steps_total;
  t.lease_id.clear();
  Mutation m;
  m.tasks.push_back(t);
  m.events.push_back(Event(t.audit_id, "task_succeeded", t.task_id, ""));
  bool all_done = true;
  for (const TaskRecord& other : tasks_) {
    if (other.audit_id == t.audit_id && other.task_id != t.task_id &&
        other.state != TaskState::kSucceeded) {
      all_done = false;
    }
  }
  if (all_done) {
    AuditRecord a = audits_.at(t.audit_id);
    a.state = v1::SUCCEEDED;
    a.updated_ms = clock_->NowMs();
    m.audit = a;
    m.events.push_back(Event(t.audit_id, "audit_succeeded", "", "every task succeeded"));
  }
  return Apply(m);
}

void Scheduler::RetryOrFail(TaskRecord t, const std::string& reason, bool retryable, Mutation* m) {
  const AuditRecord& audit = audits_.at(t.audit_id);
  const uint32_t budget = audit.spec.resources().max_attempts();
  t.lease_id.clear();
  t.worker_id.clear();
  t.error = reason;
  if (retryable && t.attempts < budget) {
    t.state = TaskState::kQueued;
    t.steps_done = 0;
    m->events.push_back(Event(t.audit_id, "task_retried", t.task_id,
                              absl::StrCat(reason, " (attempt ", t.attempts, " of ", budget, ")")));
    m->tasks.push_back(std::move(t));
    return;
  }
  t.state = TaskState::kFailed;
  const std::string task_id = t.task_id;
  m->events.push_back(Event(t.audit_id, "task_failed", task_id, reason));
  AuditRecord a = audit;
  a.state = v1::FAILED;
  a.updated_ms = clock_->NowMs();
  a.error = absl::StrCat("task ", task_id, " failed after ", t.attempts, " attempt(s): ", reason);
  m->events.push_back(Event(t.audit_id, "audit_failed", task_id, a.error));
  m->tasks.push_back(std::move(t));
  CancelRemaining(a.audit_id, task_id, m);
  m->audit = std::move(a);
}

absl::Status Scheduler::Fail(const std::string& lease_id, const std::string& error,
                             bool retryable) {
  absl::MutexLock lock(&mu_);
  auto task = FindLease(lease_id);
  if (!task.ok()) return task.status();
  TouchWorker((*task)->worker_id, clock_->NowMs());
  Mutation m;
  RetryOrFail(**task, error, retryable, &m);
  return Apply(m);
}

void Scheduler::GiveBack(TaskRecord t, const std::string& reason, bool expired, Mutation* m) {
  const uint32_t cap = expired ? options_.max_expiries_per_task : options_.max_releases_per_task;
  uint32_t& given_back = expired ? t.expiries : t.releases;
  const char* what = expired ? "expired" : "released";
  if (given_back >= cap) {
    RetryOrFail(
        std::move(t),
        absl::StrCat(reason, " (", what, " ", cap, " times already: counted as an attempt)"),
        /*retryable=*/true, m);
    return;
  }
  given_back += 1;
  const std::string message = absl::StrCat(
      reason, " (", expired ? "lease of " : "released by ", t.worker_id, "; attempt not counted; ",
      expired ? "expiry " : "release ", given_back, " of ", cap, ")");
  t.state = TaskState::kQueued;
  t.attempts = t.attempts > 0 ? t.attempts - 1 : 0;  // Lease counted this one
  t.steps_done = 0;
  t.lease_id.clear();
  t.worker_id.clear();
  t.error = reason;
  m->events.push_back(Event(t.audit_id, "task_released", t.task_id, message));
  m->tasks.push_back(std::move(t));
}

absl::Status Scheduler::Release(const std::string& lease_id, const std::string& reason) {
  absl::MutexLock lock(&mu_);
  auto task = FindLease(lease_id);
  if (!task.ok()) return task.status();
  TouchWorker((*task)->worker_id, clock_->NowMs());
  Mutation m;
  GiveBack(**task, reason, /*expired=*/false, &m);
  return Apply(m);
}

absl::Status Scheduler::ExpireLeases() {
  absl::MutexLock lock(&mu_);
  ForgetStaleWorkers();
  const int64_t now = clock_->NowMs();
  std::vector<TaskRecord> expired;
  for (const TaskRecord& t : tasks_) {
    if (t.state == TaskState::kLeased && t.lease_deadline_ms <= now) expired.push_back(t);
  }
  for (TaskRecord& t : expired) {
    // A failure may have cancelled this task in an earlier iteration.
    if (tasks_[task_by_id_.at(t.task_id)].state != TaskState::kLeased) continue;
    Mutation m;
    GiveBack(t, absl::StrCat("lease expired (worker ", t.worker_id, " silent)"), /*expired=*/true,
             &m);
    if (absl::Status s = Apply(m); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<EventRecord>> Scheduler::EventsAfter(const std::string& audit_id,
                                                                uint64_t after_sequence,
                                                                int limit) {
  return store_->EventsAfter(audit_id, after_sequence, limit);
}

uint64_t Scheduler::version() const {
  absl::MutexLock lock(&mu_);
  return version_;
}

uint64_t Scheduler::WaitForChange(uint64_t seen, int timeout_ms) const {
  const absl::Time deadline = absl::Now() + absl::Milliseconds(timeout_ms);
  absl::MutexLock lock(&mu_);
  while (version_ == seen && !shutdown_) {
    if (changed_.WaitWithDeadline(&mu_, deadline)) break;  // true: timed out
  }
  return version_;
}

void Scheduler::Shutdown() {
  absl::MutexLock lock(&mu_);
  shutdown_ = true;
  changed_.SignalAll();
}

void Scheduler::UpdateGauges() { metrics_.Refresh(tasks_, audits_, task_by_lease_.size()); }

}  // namespace memaudit::coordinator
