#include "services/coordinator/scheduler.h"

#include <google/protobuf/util/message_differencer.h>

#include <algorithm>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "common/messages/audit_kinds.h"
#include "common/messages/spec_yaml.h"
#include "common/messages/task_fit.h"
#include "common/security/capability.h"
#include "common/training/numerics.h"
#include "spdlog/spdlog.h"
#include "spec/planner.h"
#include "spec/spec_validator.h"

namespace memaudit::coordinator {
namespace {

// Whether `environment` joins an audit's recorded numeric environments: not
// empty, not there yet, and room left (the kMaxNumericEnvironments-th
// distinct one is recorded as "...", none after it, so the list stays
// bounded whatever the workers send).
bool IsNewNumericEnvironment(const std::string& environment,
                             const google::protobuf::RepeatedPtrField<std::string>& recorded) {
  if (environment.empty() || recorded.size() >= kMaxNumericEnvironments) return false;
  return std::find(recorded.begin(), recorded.end(), environment) == recorded.end();
}

void RecordNumericEnvironment(const std::string& environment,
                              google::protobuf::RepeatedPtrField<std::string>* recorded) {
  const bool last = recorded->size() + 1 == kMaxNumericEnvironments;
  *recorded->Add() = last ? "..." : environment;
}

// Audit, lease and worker ids: 128 bits from OpenSSL's CSPRNG (RAND_bytes),
// so an id seen by no one cannot be guessed.
std::string RandomId(const char* prefix) { return RandomHexId(prefix); }

// A priority within the validator's bounds (a spec stored before they were
// checked could hold anything).
int32_t PriorityOf(const v1::AuditSpec& spec) {
  return std::clamp(spec.resources().priority(), -100, 100);
}

// The models a plan trains (what the max_models_per_audit quota counts).
uint64_t PlannedModels(const spec::Plan& plan) {
  uint64_t models = 0;
  for (const spec::PlannedTask& p : plan.tasks) models += p.models;
  return models;
}

// Runs `start` with a callback and waits (this thread) for its answer.
absl::Status Await(absl::FunctionRef<void(Scheduler::Done)> start) {
  absl::Notification answered;
  absl::Status status;
  start([&](const absl::Status& s) {
    status = s;
    answered.Notify();
  });
  answered.WaitForNotification();
  return status;
}

}  // namespace

std::string NewAuditId() { return RandomId("a-"); }

Scheduler::Scheduler(Store* store, const Clock* clock, SchedulerOptions options,
                     prometheus::Registry* metrics)
    : store_(store),
      clock_(clock),
      options_(std::move(options)),
      metrics_(metrics),
      fair_(options_.quotas.weights),
      commit_(store, CommitHooks(this)) {}

GroupCommit::Hooks Scheduler::CommitHooks(Scheduler* s) {
  GroupCommit::Hooks hooks;
  // Watchers read events from the store: woken once they are there.
  hooks.durable = [s](size_t decisions, absl::Duration took) {
    s->metrics_.GroupWritten(decisions, absl::ToDoubleSeconds(took));
    s->changes_.Bump();
  };
  hooks.failed = [s](const absl::Status& why) { s->WriteFailed(why); };
  return hooks;
}

Scheduler::~Scheduler() {
  Shutdown();
  commit_.Stop();
  timer_.Stop();
}

absl::StatusOr<std::unique_ptr<Scheduler>> Scheduler::Create(Store* store, const Clock* clock,
                                                             const SchedulerOptions& options,
                                                             prometheus::Registry* metrics) {
  std::unique_ptr<Scheduler> s(new Scheduler(store, clock, options, metrics));
  absl::MutexLock lock(&s->mu_);
  if (absl::Status loaded = s->LoadLocked(); !loaded.ok()) return loaded;
  return s;
}

absl::Status Scheduler::LoadLocked() {
  auto audits = store_->LoadAudits();
  if (!audits.ok()) return audits.status();
  auto tasks = store_->LoadTasks();
  if (!tasks.ok()) return tasks.status();
  audits_.clear();
  audit_order_.clear();
  unwarned_.clear();
  by_request_.clear();
  // What memory knew of the leases the store holds too (after a failed
  // write): their deadlines and progress stand.
  const TaskIndex held = std::move(index_);
  index_ = TaskIndex();
  fair_ = FairShare(options_.quotas.weights);
  // The store lists tasks in audit order, then index; group them by audit.
  std::map<std::string, std::vector<TaskRecord>> by_audit;
  for (TaskRecord& t : *tasks) by_audit[t.audit_id].push_back(std::move(t));
  // Workers kept training while this coordinator was down and could not
  // heartbeat: each held lease gets a full TTL from now to be heard again,
  // so an outage longer than the TTL costs no attempt.
  const int64_t resumed_deadline = clock_->NowMs() + options_.lease_ttl_ms;
  for (AuditRecord& a : *audits) {
    std::vector<TaskRecord> of;
    if (auto it = by_audit.find(a.audit_id); it != by_audit.end()) {
      of = std::move(it->second);
      by_audit.erase(it);
    }
    for (TaskRecord& t : of) {
      if (t.state != TaskState::kLeased) continue;
      if (std::optional<size_t> pos = held.FindLease(t.lease_id); pos.has_value()) {
        t.lease_deadline_ms = held.task(*pos).lease_deadline_ms;
        t.steps_done = held.task(*pos).steps_done;
      } else {
        t.lease_deadline_ms = std::max(t.lease_deadline_ms, resumed_deadline);
      }
    }
    Add(std::move(a), std::move(of));
  }
  if (!by_audit.empty()) {
    return absl::DataLossError(absl::StrCat("stored task ", by_audit.begin()->second[0].task_id,
                                            " belongs to no stored audit"));
  }
  PublishGauges("");
  for (const auto& [owner, usage] : index_.owners()) metrics_.SetTeam(owner, usage);
  return absl::OkStatus();
}

void Scheduler::WriteFailed(const absl::Status& why) {
  absl::MutexLock lock(&mu_);
  // Taken on the memory being thrown away: none of it may reach disk.
  commit_.DiscardQueued();
  if (absl::Status loaded = LoadLocked(); !loaded.ok()) {
    // Neither memory nor the store can be trusted: stop, and let a restart
    // load what the store holds.
    spdlog::critical("a write failed ({}) and reloading the store failed too ({}); exiting",
                     why.ToString(), loaded.ToString());
    std::abort();
  }
  spdlog::warn("a write failed ({}); state reloaded from the store", why.ToString());
  WakeFitting();
}

void Scheduler::Add(AuditRecord audit, std::vector<TaskRecord> tasks) {
  const std::string id = audit.audit_id;
  AuditEntry& e = audits_[id];
  e.number = audit_order_.size();
  e.needs = NeedsOf(audit.spec.resources());
  e.record = std::move(audit);
  audit_order_.push_back(&e);
  if (e.record.state == v1::QUEUED) unwarned_.push_back(e.number);
  if (!e.record.request_id.empty()) by_request_[{e.record.team, e.record.request_id}] = id;
  const size_t number = index_.AddAudit(e.record.team, e.record.state);
  for (TaskRecord& t : tasks) index_.AddTask(number, std::move(t));
  index_.Retire(number);  // a finished audit keeps only its counts in memory
  fair_.AddAudit(number, e.record.team, PriorityOf(e.record.spec));
  fair_.SetReady(number, index_.audit(number).leasable());
  metrics_.AuditKnown(e.record);
  metrics_.AuditProgress(id, index_.audit(number));
}

void Scheduler::PublishGauges(const std::string& owner) {
  metrics_.SetTotals(index_.totals());
  if (const OwnerUsage* usage = index_.usage(owner)) metrics_.SetTeam(owner, *usage);
}

EventRecord Scheduler::Event(const std::string& audit_id, v1::EventType type, std::string task_id,
                             std::string message) const {
  EventRecord e;
  e.audit_id = audit_id;
  e.unix_ms = clock_->NowMs();
  e.type = type;
  e.task_id = std::move(task_id);
  e.message = std::move(message);
  return e;
}

void Scheduler::Apply(Mutation m, Done done) {
  const int64_t now = clock_->NowMs();
  // Every mutation is about one audit; more would be handled alike.
  std::vector<size_t> touched;
  auto touch = [&](size_t audit) {
    if (std::find(touched.begin(), touched.end(), audit) == touched.end()) {
      touched.push_back(audit);
    }
  };
  std::map<size_t, size_t> requeued;                     // audit -> tasks newly queued
  std::vector<std::pair<TaskRecord, TaskRecord>> moved;  // (before, after), for the metrics
  moved.reserve(m.tasks.size());
  for (const TaskRecord& t : m.tasks) {
    const size_t pos = *index_.FindTask(t.task_id);
    const TaskRecord& before = index_.task(pos);
    moved.emplace_back(before, t);
    const bool granted = before.state == TaskState::kQueued && t.state == TaskState::kLeased;
    const size_t audit = index_.audit_of(pos);
    if (before.state != TaskState::kQueued && t.state == TaskState::kQueued) ++requeued[audit];
    index_.SetTask(pos, t);
    if (granted) fair_.Charge(audit);
    touch(audit);
  }
  if (m.audit.has_value()) {
    AuditEntry& e = audits_.at(m.audit->audit_id);
    e.record = *m.audit;
    e.needs = NeedsOf(e.record.spec.resources());  // a native audit's class, once pinned
    index_.SetAuditState(e.number, e.record.state);
    touch(e.number);
  }
  for (size_t audit : touched) {
    fair_.SetReady(audit, index_.audit(audit).leasable());
    PublishGauges(audit_order_[audit]->record.team);
    metrics_.AuditProgress(audit_order_[audit]->record.audit_id, index_.audit(audit));
    // Finished: no later decision reads its tasks (no lease is held, Cancel
    // is a no-op), so only its counts stay in memory.
    index_.Retire(audit);
  }
  commit_.Enqueue(std::move(m), [this, now, moved = std::move(moved),
                                 done = std::move(done)](const absl::Status& written) mutable {
    // Counted once durable: a retry whose write failed never happened.
    if (written.ok()) {
      for (const auto& [before, after] : moved) {
        metrics_.TaskChanged(before, after, now);
        // Only RetryOrFail (its error is the reason) and GiveBack (which
        // counts the release or expiry) put a leased task back in the queue.
        if (before.state == TaskState::kLeased && after.state == TaskState::kQueued) {
          if (after.releases > before.releases) {
            metrics_.TaskReleased();
          } else {  // a failure, or an expiry ("lease expired ...": lease_expired)
            metrics_.TaskRetried(after.error);
          }
        }
      }
    }
    std::move(done)(written);
  });
  // After the mutation is queued: the grants build on it.
  for (const auto& [audit, tasks] : requeued) {
    if (index_.audit(audit).leasable()) WakeFor(audit, tasks);
  }
}

void Scheduler::Decide(Done done, absl::FunctionRef<absl::StatusOr<Mutation>()> decide) {
  absl::Status refused;
  {
    absl::MutexLock lock(&mu_);
    absl::StatusOr<Mutation> m = decide();
    if (m.ok()) {
      Apply(*std::move(m), std::move(done));
      return;
    }
    refused = m.status();
  }
  std::move(done)(refused);
}

v1::Audit Scheduler::Snapshot(const AuditEntry& e, bool with_spec) const {
  const AuditRecord& a = e.record;
  v1::Audit out;
  out.set_audit_id(a.audit_id);
  out.set_name(a.name);
  out.set_kind(ApiKind(AuditKindByName(a.kind)));
  out.set_state(a.state);
  out.set_created_unix_ms(a.created_ms);
  out.set_updated_unix_ms(a.updated_ms);
  out.set_error(a.error);
  out.set_team(a.team);
  if (with_spec) *out.mutable_spec() = a.spec;
  const AuditTasks& tasks = index_.audit(e.number);
  v1::TaskCounts* c = out.mutable_tasks();
  c->set_total(tasks.total);
  c->set_queued(tasks.by_state[static_cast<size_t>(TaskState::kQueued)]);
  c->set_running(tasks.by_state[static_cast<size_t>(TaskState::kLeased)]);
  c->set_succeeded(tasks.by_state[static_cast<size_t>(TaskState::kSucceeded)]);
  c->set_failed(tasks.by_state[static_cast<size_t>(TaskState::kFailed)]);
  c->set_cancelled(tasks.by_state[static_cast<size_t>(TaskState::kCancelled)]);
  out.set_steps_done(tasks.steps_done);
  out.set_steps_total(tasks.steps_total);
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
      const AuditEntry& earlier = audits_.at(seen->second);
      if (!google::protobuf::util::MessageDifferencer::Equals(earlier.record.spec,
                                                              submission.spec)) {
        return absl::FailedPreconditionError(
            absl::StrCat("request_id ", QuoteValue(submission.request_id),
                         " already created audit ", earlier.record.audit_id,
                         " from a different spec; send this spec with a new request_id"));
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
  if (const OwnerUsage* held = index_.usage(owner)) {
    usage.active_audits = held->active_audits();
    usage.queued_tasks = held->unfinished_tasks;
  }
  std::string limit;
  if (absl::Status s = CheckQuota(limits, submission.caller.description, usage, &limit); !s.ok()) {
    metrics_.QuotaRefused(limit);
    return s;
  }
  return std::optional<v1::Audit>();
}

absl::StatusOr<std::optional<v1::Audit>> Scheduler::Admit(const Submission& submission) {
  auto plan = spec::PlanAudit(submission.spec);
  if (!plan.ok()) return plan.status();
  absl::MutexLock lock(&mu_);
  return AdmitLocked(submission, plan->tasks.size(), PlannedModels(*plan));
}

absl::StatusOr<v1::Audit> Scheduler::Submit(const Submission& submission) {
  const std::string& audit_id = submission.audit_id;
  const v1::AuditSpec& spec = submission.spec;
  const std::map<uint32_t, std::string>& reused = submission.reused;
  auto plan = spec::PlanAudit(spec);
  if (!plan.ok()) return plan.status();
  AuditRecord audit;
  audit.audit_id = audit_id;
  audit.name = spec.name();
  audit.kind = spec::KindName(spec);
  audit.state = v1::QUEUED;
  audit.spec = spec;
  audit.created_ms = audit.updated_ms = clock_->NowMs();
  audit.team = submission.caller.name;
  audit.request_id = submission.request_id;
  std::vector<TaskRecord> tasks;
  for (const spec::PlannedTask& p : plan->tasks) {
    TaskRecord t;
    t.task_id = absl::StrCat(audit_id, "/", p.role, "/", p.index);
    t.audit_id = audit_id;
    t.role = p.role;
    t.index = p.index;
    t.steps_total = p.steps_total;
    tasks.push_back(std::move(t));
  }
  std::vector<EventRecord> events = {
      Event(audit_id, v1::SUBMITTED, "",
            absl::StrCat("submitted by ", submission.caller.description, ": ", tasks.size(),
                         " tasks planned"))};
  size_t reused_tasks = 0;
  for (size_t i = 0; i < tasks.size(); ++i) {
    // Only kinds with content-keyed reuse (membership) are handed reused runs.
    // A task is reused only when every model it trains is: a partly reused
    // task retrains all its models (bit-identical; the scorer keeps one copy).
    const spec::PlannedTask& p = plan->tasks[i];
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
    events.push_back(Event(audit_id, v1::TASK_REUSED, t.task_id,
                           absl::StrCat(p.models == 1 ? "model" : "models", " reused from audit ",
                                        absl::StrJoin(from, ", "))));
    ++reused_tasks;
  }
  if (reused_tasks == tasks.size()) {
    audit.state = v1::SUCCEEDED;
    events.push_back(Event(audit_id, v1::AUDIT_SUCCEEDED, "", "every model was reused"));
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
  const std::string owner = audit.team;
  Add(std::move(audit), std::move(tasks));
  PublishGauges(owner);
  changes_.Bump();
  const AuditEntry& added = audits_.at(audit_id);
  const AuditTasks& queued = index_.audit(added.number);
  if (queued.leasable()) WakeFor(added.number, queued.queued.size());
  return Snapshot(added);
}

absl::StatusOr<const Scheduler::AuditEntry*> Scheduler::Visible(const std::string& audit_id,
                                                                const Caller& caller) const {
  auto it = audits_.find(audit_id);
  // One message whether the audit is missing or another owner's: a caller
  // learns nothing about ids it does not own.
  if (it == audits_.end() || !caller.Sees(it->second.record)) {
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
  AuditQuery query;
  query.limit = limit;
  return Query(query, caller).audits;
}

Scheduler::AuditPage Scheduler::Query(const AuditQuery& query, const Caller& caller) const {
  absl::MutexLock lock(&mu_);
  AuditPage page;
  for (size_t i = std::min(query.before, audit_order_.size()); i-- > 0;) {
    const AuditRecord& a = audit_order_[i]->record;
    if (!caller.Sees(a)) continue;
    if (query.state != v1::AUDIT_STATE_UNSPECIFIED && a.state != query.state) continue;
    if (!query.kind.empty() && a.kind != query.kind) continue;
    if (!absl::StrContains(a.name, query.name_contains)) continue;
    if (page.audits.size() == query.limit) {  // one more matches: a next page
      page.next_before = i + 1;
      break;
    }
    page.audits.push_back(Snapshot(*audit_order_[i], query.with_spec));
  }
  return page;
}

void Scheduler::CancelRemaining(const AuditEntry& audit, const std::string& except_task,
                                Mutation* m) {
  for (size_t pos : index_.Unfinished(audit.number)) {
    const TaskRecord& t = index_.task(pos);
    if (t.task_id == except_task) continue;
    TaskRecord c = t;
    c.state = TaskState::kCancelled;
    m->tasks.push_back(std::move(c));
  }
}

absl::StatusOr<v1::Audit> Scheduler::Cancel(const std::string& audit_id, const Caller& caller) {
  std::optional<v1::Audit> ended;  // already terminal: nothing to do
  const absl::Status written = Await([&](Done done) {
    Decide(std::move(done), [&]() -> absl::StatusOr<Mutation> {
      mu_.AssertHeld();  // Decide calls it under the lock
      auto visible = Visible(audit_id, caller);
      if (!visible.ok()) return visible.status();
      const AuditEntry& audit = **visible;
      if (IsTerminal(audit.record.state)) {
        ended = Snapshot(audit);
        return absl::AlreadyExistsError("ended");  // no mutation; `ended` answers
      }
      Mutation m;
      CancelRemaining(audit, "", &m);
      AuditRecord a = audit.record;
      a.state = v1::CANCELLED;
      a.updated_ms = clock_->NowMs();
      m.audit = a;
      m.events.push_back(Event(audit_id, v1::AUDIT_CANCELLED, "",
                               absl::StrCat("cancelled by ", caller.description)));
      return m;
    });
  });
  if (ended.has_value()) return *ended;
  if (!written.ok()) return written;
  return Get(audit_id, caller);
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

size_t Scheduler::tasks_in_memory() const {
  absl::MutexLock lock(&mu_);
  return index_.records();
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
  absl::Notification answered;
  absl::StatusOr<std::optional<LeaseGrant>> result;
  Lease(worker_id, wait_ms, offer, [&](absl::StatusOr<std::optional<LeaseGrant>> answer) {
    result = std::move(answer);
    answered.Notify();
  });
  answered.WaitForNotification();
  return result;
}

uint64_t Scheduler::Lease(const std::string& worker_id, int wait_ms,
                          const std::optional<WorkerOffer>& offer, LeaseAnswer answer) {
  {
    absl::MutexLock lock(&mu_);
    // Alive while it waits here, however long the poll.
    TouchWorker(worker_id, clock_->NowMs() + std::max(wait_ms, 0));
    if (!shutdown_) {
      if (TryGrant(worker_id, offer, &answer)) return 0;
      if (wait_ms > 0) {
        const uint64_t id = next_wait_++;
        Waiter& w = waiters_.emplace_back();
        w.id = id;
        w.worker_id = worker_id;
        w.offer = offer;
        w.answer = std::move(answer);
        w.timeout = timer_.At(absl::Now() + absl::Milliseconds(wait_ms), [this, id] {
          LeaseAnswer timed_out;
          {
            absl::MutexLock lock(&mu_);
            timed_out = TakeWaiter(id);
          }
          if (timed_out) std::move(timed_out)(std::optional<LeaseGrant>());
        });
        waiter_at_[id] = std::prev(waiters_.end());
        return id;
      }
    }
  }
  std::move(answer)(std::optional<LeaseGrant>());
  return 0;
}

void Scheduler::CancelLeaseWait(uint64_t wait) {
  LeaseAnswer cancelled;
  {
    absl::MutexLock lock(&mu_);
    cancelled = TakeWaiter(wait);
  }
  if (cancelled) std::move(cancelled)(absl::CancelledError("the client went away"));
}

size_t Scheduler::waiting_leases() const {
  absl::MutexLock lock(&mu_);
  return waiters_.size();
}

Scheduler::LeaseAnswer Scheduler::TakeWaiter(uint64_t wait) {
  auto at = waiter_at_.find(wait);
  if (at == waiter_at_.end()) return nullptr;
  LeaseAnswer answer = std::move(at->second->answer);
  RemoveWaiter(at->second);
  return answer;
}

std::list<Scheduler::Waiter>::iterator Scheduler::RemoveWaiter(std::list<Waiter>::iterator it) {
  timer_.Cancel(it->timeout);
  waiter_at_.erase(it->id);
  return waiters_.erase(it);
}

bool Scheduler::TryGrant(const std::string& worker_id, const std::optional<WorkerOffer>& offer,
                         LeaseAnswer* answer) {
  auto fits = [&](size_t audit) {
    mu_.AssertHeld();  // Pick calls it within TryGrant, under the lock
    return Fits(offer, audit);
  };
  const std::optional<size_t> picked = fair_.Pick(fits);
  if (!picked.has_value()) return false;
  const AuditEntry& audit = *audit_order_[*picked];
  TaskRecord t = index_.task(*index_.audit(*picked).queued.begin());
  t.state = TaskState::kLeased;
  t.attempts += 1;
  t.steps_done = 0;
  t.lease_id = RandomId("l-");
  t.worker_id = worker_id;
  t.lease_deadline_ms = clock_->NowMs() + options_.lease_ttl_ms;
  Mutation m;
  m.tasks.push_back(t);
  m.events.push_back(Event(t.audit_id, v1::TASK_LEASED, t.task_id,
                           absl::StrCat("attempt ", t.attempts, " on ", worker_id)));
  std::optional<AuditRecord> changed;
  if (audit.record.state == v1::QUEUED) {
    changed = audit.record;
    changed->state = v1::RUNNING;
  }
  // A native audit not yet in a class joins this worker's: its other tasks,
  // retries included, go to workers of the same class only.
  if (audit.needs.gpus == 0 && audit.needs.numeric_class == kNativeNumerics && offer.has_value()) {
    if (!changed.has_value()) changed = audit.record;
    changed->spec.mutable_resources()->set_numeric_class(offer->total.numeric_class());
    m.events.push_back(Event(t.audit_id, v1::TASK_LEASED, t.task_id,
                             absl::StrCat("numeric class ", offer->total.numeric_class(),
                                          ": the audit's tasks run on workers of it only")));
  }
  if (changed.has_value()) {
    changed->updated_ms = clock_->NowMs();
    m.audit = *changed;
  }
  LeaseGrant grant{std::move(t), m.audit.has_value() ? m.audit->spec : audit.record.spec};
  Apply(std::move(m), [grant = std::move(grant),
                       answer = std::move(*answer)](const absl::Status& written) mutable {
    if (written.ok()) {
      std::move(answer)(std::optional<LeaseGrant>(std::move(grant)));
    } else {
      std::move(answer)(written);
    }
  });
  return true;
}

bool Scheduler::Fits(const std::optional<WorkerOffer>& offer, size_t audit) const {
  const TaskNeeds& needs = audit_order_[audit]->needs;
  return offer.has_value() ? memaudit::Fits(needs, offer->total, offer->free) : needs.gpus == 0;
}

void Scheduler::WakeFor(size_t audit, size_t tasks) {
  for (auto it = waiters_.begin(); it != waiters_.end() && tasks > 0;) {
    Waiter& w = *it;
    if (!Fits(w.offer, audit)) {
      ++it;
      continue;
    }
    // Fair share may pick another audit's task that fits: as good.
    if (!TryGrant(w.worker_id, w.offer, &w.answer)) break;
    it = RemoveWaiter(it);
    --tasks;
  }
}

void Scheduler::WakeFitting() {
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    Waiter& w = *it;
    it = TryGrant(w.worker_id, w.offer, &w.answer) ? RemoveWaiter(it) : std::next(it);
  }
}

absl::StatusOr<size_t> Scheduler::FindLease(const std::string& lease_id) const {
  std::optional<size_t> pos = index_.FindLease(lease_id);
  if (!pos.has_value()) {
    return absl::FailedPreconditionError(
        absl::StrCat("lease ", lease_id, " is not held (expired, finished or cancelled)"));
  }
  return *pos;
}

absl::StatusOr<HeartbeatVerdict> Scheduler::Heartbeat(const std::string& lease_id,
                                                      uint64_t steps_done) {
  absl::MutexLock lock(&mu_);
  auto pos = FindLease(lease_id);
  if (!pos.ok()) return HeartbeatVerdict{true, std::string(pos.status().message())};
  const TaskRecord& t = index_.task(*pos);
  TouchWorker(t.worker_id, clock_->NowMs());
  const bool progressed = t.steps_done != steps_done;
  index_.Renew(*pos, steps_done, clock_->NowMs() + options_.lease_ttl_ms);
  if (progressed) {  // what Get and Watch show changed
    changes_.Bump();
    metrics_.AuditProgress(t.audit_id, index_.audit(index_.audit_of(*pos)));
  }
  return HeartbeatVerdict{};
}

absl::Status Scheduler::Complete(const std::string& lease_id,
                                 const std::string& numeric_environment) {
  return Await([&](Done done) { Complete(lease_id, numeric_environment, std::move(done)); });
}

void Scheduler::Complete(const std::string& lease_id, const std::string& numeric_environment,
                         Done done) {
  Decide(std::move(done), [&]() -> absl::StatusOr<Mutation> {
    mu_.AssertHeld();  // Decide calls it under the lock
    auto pos = FindLease(lease_id);
    if (!pos.ok()) return pos.status();
    TaskRecord t = index_.task(*pos);
    TouchWorker(t.worker_id, clock_->NowMs());
    t.state = TaskState::kSucceeded;
    t.steps_done = t.steps_total;
    t.lease_id.clear();
    Mutation m;
    m.tasks.push_back(t);
    m.events.push_back(Event(t.audit_id, v1::TASK_SUCCEEDED, t.task_id, ""));
    const AuditRecord& current = audits_.at(t.audit_id).record;
    const bool new_environment = IsNewNumericEnvironment(
        numeric_environment, current.spec.resources().numeric_environments());
    // Every other task succeeded (this one is still leased).
    const AuditTasks& tasks = index_.audit(index_.audit_of(*pos));
    const bool last = tasks.by_state[static_cast<size_t>(TaskState::kSucceeded)] + 1 == tasks.total;
    // The audit's row changes only then: most completions write the task alone.
    if (!new_environment && !last) return m;
    AuditRecord a = current;
    if (new_environment) {
      RecordNumericEnvironment(numeric_environment,
                               a.spec.mutable_resources()->mutable_numeric_environments());
    }
    if (last) {
      a.state = v1::SUCCEEDED;
      m.events.push_back(Event(t.audit_id, v1::AUDIT_SUCCEEDED, "", "every task succeeded"));
    }
    a.updated_ms = clock_->NowMs();
    m.audit = std::move(a);
    return m;
  });
}

void Scheduler::RetryOrFail(TaskRecord t, const std::string& reason, bool retryable, Mutation* m) {
  const AuditEntry& audit = audits_.at(t.audit_id);
  const uint32_t budget = audit.record.spec.resources().max_attempts();
  t.lease_id.clear();
  t.worker_id.clear();
  t.error = reason;
  if (retryable && t.attempts < budget) {
    t.state = TaskState::kQueued;
    t.steps_done = 0;
    m->events.push_back(Event(t.audit_id, v1::TASK_RETRIED, t.task_id,
                              absl::StrCat(reason, " (attempt ", t.attempts, " of ", budget, ")")));
    m->tasks.push_back(std::move(t));
    return;
  }
  t.state = TaskState::kFailed;
  const std::string task_id = t.task_id;
  m->events.push_back(Event(t.audit_id, v1::TASK_FAILED, task_id, reason));
  AuditRecord a = audit.record;
  a.state = v1::FAILED;
  a.updated_ms = clock_->NowMs();
  a.error = absl::StrCat("task ", task_id, " failed after ", t.attempts, " attempt(s): ", reason);
  m->events.push_back(Event(t.audit_id, v1::AUDIT_FAILED, task_id, a.error));
  m->tasks.push_back(std::move(t));
  CancelRemaining(audit, task_id, m);
  m->audit = std::move(a);
}

absl::Status Scheduler::Fail(const std::string& lease_id, const std::string& error,
                             bool retryable) {
  return Await([&](Done done) { Fail(lease_id, error, retryable, std::move(done)); });
}

void Scheduler::Fail(const std::string& lease_id, const std::string& error, bool retryable,
                     Done done) {
  Decide(std::move(done), [&]() -> absl::StatusOr<Mutation> {
    mu_.AssertHeld();  // Decide calls it under the lock
    auto pos = FindLease(lease_id);
    if (!pos.ok()) return pos.status();
    const TaskRecord& task = index_.task(*pos);
    TouchWorker(task.worker_id, clock_->NowMs());
    Mutation m;
    RetryOrFail(task, error, retryable, &m);
    return m;
  });
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
  m->events.push_back(Event(t.audit_id, v1::TASK_RELEASED, t.task_id, message));
  m->tasks.push_back(std::move(t));
}

absl::Status Scheduler::Release(const std::string& lease_id, const std::string& reason) {
  return Await([&](Done done) { Release(lease_id, reason, std::move(done)); });
}

void Scheduler::Release(const std::string& lease_id, const std::string& reason, Done done) {
  Decide(std::move(done), [&]() -> absl::StatusOr<Mutation> {
    mu_.AssertHeld();  // Decide calls it under the lock
    auto pos = FindLease(lease_id);
    if (!pos.ok()) return pos.status();
    const TaskRecord& task = index_.task(*pos);
    TouchWorker(task.worker_id, clock_->NowMs());
    Mutation m;
    GiveBack(task, reason, /*expired=*/false, &m);
    return m;
  });
}

void Scheduler::ReleaseAll(const std::string& worker_id, const std::string& reason,
                           uint32_t* released, Done done) {
  Decide(std::move(done), [&]() -> absl::StatusOr<Mutation> {
    mu_.AssertHeld();  // Decide calls it under the lock
    Mutation m;
    const std::vector<size_t> held = index_.LeasedBy(worker_id);
    for (size_t pos : held) GiveBack(index_.task(pos), reason, /*expired=*/false, &m);
    if (released != nullptr) *released = static_cast<uint32_t>(held.size());
    return m;
  });
}

absl::Status Scheduler::ExpireLeases() {
  {
    absl::MutexLock lock(&mu_);
    ForgetStaleWorkers();
  }
  // One expiry written at a time: those before a failed write stand, the
  // rest wait for the next sweep. Expiries are rare; a sync each is cheap.
  while (true) {
    absl::Status written = Await([&](Done done) {
      Decide(std::move(done), [&]() -> absl::StatusOr<Mutation> {
        mu_.AssertHeld();  // Decide calls it under the lock
        for (size_t pos : index_.ExpiredLeases(clock_->NowMs())) {
          const TaskRecord& t = index_.task(pos);
          if (t.state != TaskState::kLeased) continue;
          Mutation m;
          GiveBack(t, absl::StrCat("lease expired (worker ", t.worker_id, " silent)"),
                   /*expired=*/true, &m);
          return m;
        }
        return absl::NotFoundError("");  // nothing (more) expired
      });
    });
    if (absl::IsNotFound(written)) return WarnWaitingAudits();
    if (!written.ok()) return written;
  }
}

absl::Status Scheduler::WarnWaitingAudits() {
  while (true) {
    absl::Status written = Await([&](Done done) {
      Decide(std::move(done), [&]() -> absl::StatusOr<Mutation> {
        mu_.AssertHeld();  // Decide calls it under the lock
        const int64_t now = clock_->NowMs();
        while (!unwarned_.empty()) {
          const AuditRecord& a = audit_order_[unwarned_.front()]->record;
          if (a.state != v1::QUEUED) {  // a task was taken, or it ended
            unwarned_.pop_front();
            continue;
          }
          if (now - a.created_ms < options_.waiting_warning_ms) break;
          unwarned_.pop_front();
          std::vector<v1::WorkerCapabilities> totals;
          for (const auto& [id, worker] : workers_) totals.push_back(worker.capabilities);
          const std::string unfit = NoWorkerFits(NeedsOf(a.spec.resources()), totals);
          Mutation m;
          m.events.push_back(Event(
              a.audit_id, v1::AUDIT_WAITING, "",
              absl::StrCat("no worker has taken a task in ",
                           absl::StrFormat("%.1f", (now - a.created_ms) / 1000.0),
                           " s; workers connected: ", workers_.size(),
                           workers_.empty() ? " (start one: memaudit-worker --coordinator ...)"
                           : !unfit.empty() ? absl::StrCat(" (", unfit, ")")
                                            : " (every one able to take them is busy)")));
          return m;
        }
        return absl::NotFoundError("");  // none due
      });
    });
    if (absl::IsNotFound(written)) return absl::OkStatus();
    if (!written.ok()) return written;
  }
}

absl::StatusOr<std::vector<EventRecord>> Scheduler::EventsAfter(const std::string& audit_id,
                                                                uint64_t after_sequence,
                                                                int limit) {
  return store_->EventsAfter(audit_id, after_sequence, limit);
}

void Scheduler::Shutdown() {
  std::vector<LeaseAnswer> answers;
  {
    absl::MutexLock lock(&mu_);
    shutdown_ = true;
    for (Waiter& w : waiters_) {
      timer_.Cancel(w.timeout);
      answers.push_back(std::move(w.answer));
    }
    waiters_.clear();
    waiter_at_.clear();
  }
  changes_.Stop();
  for (LeaseAnswer& answer : answers) std::move(answer)(std::optional<LeaseGrant>());
}

}  // namespace memaudit::coordinator
