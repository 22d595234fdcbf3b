// The coordinator's brain: hands tasks to workers under leases, re-queues a
// task whose lease expires, retries within a per-task budget, cancels, and
// keeps audit state. Every decision is committed to the Store before it takes
// effect in memory or is acknowledged to a caller; a heartbeat is not a
// decision (see Heartbeat).
//
// Leases are shared fairly between teams, then between a team's audits
// (fair_share.h). No call walks every task: each reads and updates an index
// of what it needs (task_index.h), so finished audits cost nothing.
#ifndef MEMAUDIT_SERVICES_COORDINATOR_SCHEDULER_H_
#define MEMAUDIT_SERVICES_COORDINATOR_SCHEDULER_H_

#include <list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/metrics.h"
#include "common/task_fit.h"
#include "memaudit/v1/audit.pb.h"
#include "memaudit/v1/worker.pb.h"
#include "services/coordinator/fair_share.h"
#include "services/coordinator/quotas.h"
#include "services/coordinator/records.h"
#include "services/coordinator/scheduler_metrics.h"
#include "services/coordinator/store.h"
#include "services/coordinator/task_index.h"

namespace memaudit::coordinator {

struct SchedulerOptions {
  // A lease not renewed by a heartbeat within this time is taken back.
  int64_t lease_ttl_ms = 10000;
  // A worker registration not seen (Lease, Heartbeat, Complete, Fail) for
  // this many lease TTLs is forgotten. A live worker calls far more often: an
  // idle one long-polls Lease back to back, a busy one heartbeats.
  int64_t worker_ttl_leases = 3;
  // Releases (Release) a task may make without its attempt being counted;
  // each one after these counts as a retryable failure, so a worker that
  // releases every task it takes (a scorer it can never reach, a shutdown
  // loop) cannot keep an audit running forever. Generous: a release costs a
  // retrain, not the audit.
  uint32_t max_releases_per_task = 100;
  // Expired leases a task may have without its attempt being counted. A
  // silent worker may have been preempted or cut off (not the task's fault)
  // or killed by the task itself (out of memory, every attempt): past this
  // many, each expiry counts, so the second kind ends in a failed audit.
  uint32_t max_expiries_per_task = 10;
  // Per-owner limits checked at Submit (quotas.h); the default limits nothing.
  QuotaConfig quotas;
};

// Who is asking. A team sees, watches and cancels only its own audits; an
// administrator every audit. What a caller submits is owned by its name.
struct Caller {
  std::string name;
  bool admin = false;
  // "team alpha": what events and quota refusals call the caller.
  std::string description;

  static Caller Team(const std::string& name) { return {name, false, "team " + name}; }
  static Caller Admin(const std::string& name) {
    return {name, true, name.empty() ? "admin" : "admin " + name};
  }
  // An audit owned by "" (stored before owners were kept) is an admin's only.
  bool Sees(const AuditRecord& audit) const {
    return admin || (!name.empty() && audit.team == name);
  }
};

// One Submit: the spec (validated, defaults applied) and who sends it.
struct Submission {
  std::string audit_id;  // the id the audit gets if it is new
  v1::AuditSpec spec;
  // Reference-model index -> the audit that trained it (Scheduler::Submit).
  std::map<uint32_t, std::string> reused;
  Caller caller = Caller::Admin("");
  // The caller's idempotency key; "" = none (every Submit is a new audit).
  std::string request_id;
  // The spec's size as submitted (before defaults), for max_spec_bytes;
  // 0 = the size of `spec`.
  uint64_t spec_bytes = 0;
};

struct LeaseGrant {
  TaskRecord task;
  v1::AuditSpec spec;
};

// What a worker can take now (LeaseRequest.capabilities and .free).
struct WorkerOffer {
  v1::WorkerCapabilities total;
  v1::WorkerCapabilities free;
};

struct HeartbeatVerdict {
  bool stop = false;
  std::string reason;
};

// A fresh, unguessable audit id.
std::string NewAuditId();

class Scheduler {
 public:
  // Loads the state the store holds (a restart resumes where it stopped).
  // `metrics` may be null.
  static absl::StatusOr<std::unique_ptr<Scheduler>> Create(Store* store, const Clock* clock,
                                                           const SchedulerOptions& options,
                                                           prometheus::Registry* metrics);

  // Plans `spec` (already validated and defaulted) and persists the audit.
  // Tasks whose results already exist (`reused`: reference-model index ->
  // the audit that trained it) start succeeded; a membership task packing
  // several models only when all of them are in `reused`.
  // Submitted by an administrator with no name and no request_id.
  absl::StatusOr<v1::Audit> Submit(const std::string& audit_id, const v1::AuditSpec& spec,
                                   const std::map<uint32_t, std::string>& reused = {});
  // The audit, owned by the caller. A resend (the caller's name and
  // request_id seen before) answers the audit that request created, with
  // nothing stored; the same request_id with a different spec is
  // FAILED_PRECONDITION. A new audit the owner's quotas refuse is
  // RESOURCE_EXHAUSTED naming the limit, with nothing stored.
  absl::StatusOr<v1::Audit> Submit(const Submission& submission);
  // Submit's checks alone, before the caller does anything it cannot undo
  // (opening the audit at the scorer): the audit an earlier request created
  // (a resend), nullopt when a new audit is admitted, or Submit's refusals.
  // Submit checks again, atomically with storing.
  absl::StatusOr<std::optional<v1::Audit>> Admit(const Submission& submission);

  // Get, List and Cancel see only the audits `caller` sees (Caller::Sees);
  // another owner's audit is NOT_FOUND with the message of an id that does
  // not exist. The default caller is an administrator (tests, tools).
  absl::StatusOr<v1::Audit> Get(const std::string& audit_id,
                                const Caller& caller = Caller::Admin("")) const;
  std::vector<v1::Audit> List(size_t limit, const Caller& caller = Caller::Admin("")) const;
  // The `audit_cancelled` event names the caller.
  absl::StatusOr<v1::Audit> Cancel(const std::string& audit_id,
                                   const Caller& caller = Caller::Admin(""));

  // Registrations expire (SchedulerOptions::worker_ttl_leases): a client
  // that registers over and over holds memory only for its recent ids.
  std::string RegisterWorker(const v1::WorkerCapabilities& capabilities);
  // Registrations not yet expired.
  size_t registered_workers() const;
  // Waits up to `wait_ms` (real time) for a queued task that fits `offer`
  // (task_fit.h); without an offer (an older worker), any CPU task. Which
  // one: fair_share.h (teams by weight, then an audit's priority); within
  // an audit, the lowest task index.
  absl::StatusOr<std::optional<LeaseGrant>> Lease(
      const std::string& worker_id, int wait_ms,
      const std::optional<WorkerOffer>& offer = std::nullopt);
  // Extends the lease by a TTL and records `steps_done`, in memory only: a
  // restarted coordinator gives every held lease a full TTL anyway (Create),
  // and shows the progress last committed (the task's progress is committed
  // with its next change of state). Never an error today; StatusOr so that
  // one can be added.
  absl::StatusOr<HeartbeatVerdict> Heartbeat(const std::string& lease_id, uint64_t steps_done);
  absl::Status Complete(const std::string& lease_id);
  // The task failed: re-queued if `retryable` and attempts remain (the
  // lease's attempt stays spent), else the audit fails.
  absl::Status Fail(const std::string& lease_id, const std::string& error, bool retryable);
  // The worker could not finish the task for a reason not the task's
  // (shutdown, an unreachable service): the task goes back to the queue with
  // the attempt its lease counted given back, a `task_released` event says
  // why, and the audit keeps running. Past
  // SchedulerOptions::max_releases_per_task it is Fail(retryable = true).
  // FAILED_PRECONDITION if the lease is not held.
  absl::Status Release(const std::string& lease_id, const std::string& reason);
  // Takes back every lease whose deadline has passed on the clock (re-queued
  // with the attempt given back, within max_expiries_per_task), and forgets
  // expired worker registrations.
  absl::Status ExpireLeases();

  absl::StatusOr<std::vector<EventRecord>> EventsAfter(const std::string& audit_id,
                                                       uint64_t after_sequence, int limit);
  // A counter that grows with every change; WaitForChange blocks until it
  // passes `seen` or `timeout_ms` elapses, and returns it.
  uint64_t version() const;
  uint64_t WaitForChange(uint64_t seen, int timeout_ms) const;
  // Wakes long-polls so the server can stop.
  void Shutdown();

 private:
  // A Lease call waiting for work (Lease, WakeFor).
  struct Waiter {
    explicit Waiter(const std::optional<WorkerOffer>* offer) : offer(offer) {}
    const std::optional<WorkerOffer>* offer;
    absl::CondVar cv;
    bool woken = false;  // set, and the waiter taken off waiters_, by whoever woke it
  };

  // An audit: its record and how the indexes know it.
  struct AuditEntry {
    AuditRecord record;
    size_t number = 0;  // in submit order; TaskIndex's and FairShare's audit number
    TaskNeeds needs;    // of each of its tasks
  };

  Scheduler(Store* store, const Clock* clock, SchedulerOptions options,
            prometheus::Registry* metrics);
  // Adds a stored audit and its tasks (in index order) to memory.
  void Add(AuditRecord audit, std::vector<TaskRecord> tasks) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Commits `m`, then makes it take effect in memory.
  absl::Status Apply(const Mutation& m) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The audit `caller` may see, or NOT_FOUND (the same for one it may not).
  absl::StatusOr<const AuditEntry*> Visible(const std::string& audit_id, const Caller& caller) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Admit's checks with the plan's task and model counts.
  absl::StatusOr<std::optional<v1::Audit>> AdmitLocked(const Submission& submission,
                                                       uint64_t planned_tasks,
                                                       uint64_t planned_models)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  v1::Audit Snapshot(const AuditEntry& audit) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  EventRecord Event(const std::string& audit_id, std::string type, std::string task_id,
                    std::string message) const;
  // Adds to `m` the requeue or terminal failure of a leased task.
  void RetryOrFail(TaskRecord task, const std::string& reason, bool retryable, Mutation* m)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Adds to `m` the return of a leased task to the queue with its attempt
  // given back (a release, or an expiry when `expired`), or past the cap for
  // that kind, RetryOrFail.
  void GiveBack(TaskRecord task, const std::string& reason, bool expired, Mutation* m)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Adds to `m` the cancellation of every unfinished task of an audit.
  void CancelRemaining(const AuditEntry& audit, const std::string& except_task, Mutation* m)
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // The position of the task holding `lease_id`, or FAILED_PRECONDITION.
  absl::StatusOr<size_t> FindLease(const std::string& lease_id) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Whether `offer` takes the tasks of audit `audit` (no offer: CPU tasks).
  bool Fits(const std::optional<WorkerOffer>& offer, size_t audit) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Wakes up to `tasks` waiting Lease calls that audit `audit`'s tasks fit.
  void WakeFor(size_t audit, size_t tasks) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Wakes every waiting Lease call that a queued task fits now.
  void WakeFitting() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sets the state gauges, and the team gauges of `owner`.
  void PublishGauges(const std::string& owner) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Marks a registered worker as seen until `seen_until_ms` (now, or the end
  // of a long-poll it is starting). Unknown or expired ids are not added back:
  // their capabilities are unknown, and they may lease regardless.
  void TouchWorker(const std::string& worker_id, int64_t seen_until_ms)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forgets registrations not seen within the worker TTL.
  void ForgetStaleWorkers() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  struct RegisteredWorker {
    v1::WorkerCapabilities capabilities;
    int64_t seen_until_ms = 0;
  };

  Store* store_;
  const Clock* clock_;
  SchedulerOptions options_;
  SchedulerMetrics metrics_;

  mutable absl::Mutex mu_;
  // Signalled on every change and on shutdown (WaitForChange waits on it).
  mutable absl::CondVar changed_;
  // Lease calls waiting for work, longest waiting first. New queued tasks
  // wake as many of those they fit (not every idle worker: a thousand
  // long-polls woken for one task would each take the lock for nothing).
  std::list<Waiter*> waiters_ ABSL_GUARDED_BY(mu_);
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, AuditEntry> audits_ ABSL_GUARDED_BY(mu_);
  std::vector<AuditEntry*> audit_order_ ABSL_GUARDED_BY(mu_);  // by number: submit order
  // (owner, request_id) -> the audit that request created.
  std::map<std::pair<std::string, std::string>, std::string> by_request_ ABSL_GUARDED_BY(mu_);
  TaskIndex index_ ABSL_GUARDED_BY(mu_);
  FairShare fair_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, RegisteredWorker> workers_ ABSL_GUARDED_BY(mu_);
  // The same workers by (seen_until_ms, id), oldest first: what expires next.
  std::set<std::pair<int64_t, std::string>> workers_by_seen_ ABSL_GUARDED_BY(mu_);
};

}  // namespace memaudit::coordinator

#endif  // MEMAUDIT_SERVICES_COORDINATOR_SCHEDULER_H_
