// The coordinator's brain: hands tasks to workers under leases, re-queues a
// task whose lease expires, retries within a per-task budget, cancels, and
// keeps audit state. Every decision is durable in the Store before it is
// acknowledged to a caller; a heartbeat is not a decision (see Heartbeat).
// Decisions take effect in memory at once and reach disk in groups
// (group_commit.h), so no lock is held across a disk sync; a read (Get,
// List) may show a decision one group before it is durable, and a group that
// fails to write takes memory back to what the store holds.
//
// The calls a server makes for many waiting clients (Lease long-polls, the
// answers of Complete, Fail and Release) have asynchronous forms that answer
// through a callback and hold no thread meanwhile; their synchronous forms
// wait for the same answer.
//
// Leases are shared fairly between teams, then between a team's audits
// (fair_share.h). No call walks every task: each reads and updates an index
// of what it needs (task_index.h), so finished audits cost nothing, and
// their tasks leave memory (their counts stay; the store keeps the rest).
#ifndef MEMAUDIT_SERVICES_COORDINATOR_SCHEDULER_H_
#define MEMAUDIT_SERVICES_COORDINATOR_SCHEDULER_H_

#include <deque>
#include <limits>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/base/change_notifier.h"
#include "common/base/clock.h"
#include "common/base/deadline_timer.h"
#include "common/messages/task_fit.h"
#include "common/metrics/metrics.h"
#include "memaudit/v1/audit.pb.h"
#include "memaudit/v1/worker.pb.h"
#include "services/coordinator/fair_share.h"
#include "services/coordinator/group_commit.h"
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
  // An audit no worker has taken a task of this long after its submission
  // gets one "audit_waiting" event saying so (and how many workers are
  // connected): a client watching learns why nothing moves.
  int64_t waiting_warning_ms = 30000;
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
  // Answers a decision: OK once durable, else why it was not taken. Called
  // on another thread than the caller's or after the call returned, never
  // under the scheduler's lock.
  using Done = GroupCommit::Done;
  // Answers a Lease: a task (durable), no task, or an error.
  using LeaseAnswer = absl::AnyInvocable<void(absl::StatusOr<std::optional<LeaseGrant>>) &&>;

  // Answers every waiting Lease, writes every decision taken, and stops the
  // threads that answer waits.
  ~Scheduler();
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
  // One page of the audits `caller` sees that match `query`, most recent
  // first, and where the next page starts (nullopt on the last page).
  struct AuditQuery {
    size_t limit = 100;
    // Only audits submitted before the one with this submit-order number.
    size_t before = std::numeric_limits<size_t>::max();
    v1::AuditState state = v1::AUDIT_STATE_UNSPECIFIED;  // unspecified = any
    std::string kind;                                    // "" = any
    std::string name_contains;                           // "" = any
    bool with_spec = true;
  };
  struct AuditPage {
    std::vector<v1::Audit> audits;
    std::optional<size_t> next_before;
  };
  AuditPage Query(const AuditQuery& query, const Caller& caller) const;
  // The `audit_cancelled` event names the caller.
  absl::StatusOr<v1::Audit> Cancel(const std::string& audit_id,
                                   const Caller& caller = Caller::Admin(""));

  // Registrations expire (SchedulerOptions::worker_ttl_leases): a client
  // that registers over and over holds memory only for its recent ids.
  std::string RegisterWorker(const v1::WorkerCapabilities& capabilities);
  // Registrations not yet expired.
  size_t registered_workers() const;
  // Task records held in memory: those of audits not finished.
  size_t tasks_in_memory() const;
  // Waits up to `wait_ms` (real time) for a queued task that fits `offer`
  // (task_fit.h); without an offer (an older worker), any CPU task. Which
  // one: fair_share.h (teams by weight, then an audit's priority); within
  // an audit, the lowest task index.
  absl::StatusOr<std::optional<LeaseGrant>> Lease(
      const std::string& worker_id, int wait_ms,
      const std::optional<WorkerOffer>& offer = std::nullopt);
  // The same, answered through `answer`. Returns the id of the wait when the
  // call waits (0 when it was answered or is being answered), for
  // CancelLeaseWait.
  uint64_t Lease(const std::string& worker_id, int wait_ms, const std::optional<WorkerOffer>& offer,
                 LeaseAnswer answer);
  // The client of wait `wait` went away: it is answered CANCELLED at once
  // (nothing happens when it was answered already).
  void CancelLeaseWait(uint64_t wait);
  // Lease calls waiting for work now.
  size_t waiting_leases() const;
  // Extends the lease by a TTL and records `steps_done`, in memory only: a
  // restarted coordinator gives every held lease a full TTL anyway (Create),
  // and shows the progress last committed (the task's progress is committed
  // with its next change of state). Never an error today; StatusOr so that
  // one can be added.
  absl::StatusOr<HeartbeatVerdict> Heartbeat(const std::string& lease_id, uint64_t steps_done);
  // The task succeeded. A non-empty `numeric_environment` (what trained it,
  // checked by the caller) joins the audit's spec
  // resources.numeric_environments when new there.
  absl::Status Complete(const std::string& lease_id, const std::string& numeric_environment = "");
  void Complete(const std::string& lease_id, const std::string& numeric_environment, Done done);
  // The task failed: re-queued if `retryable` and attempts remain (the
  // lease's attempt stays spent), else the audit fails.
  absl::Status Fail(const std::string& lease_id, const std::string& error, bool retryable);
  void Fail(const std::string& lease_id, const std::string& error, bool retryable, Done done);
  // The worker could not finish the task for a reason not the task's
  // (shutdown, an unreachable service): the task goes back to the queue with
  // the attempt its lease counted given back, a `task_released` event says
  // why, and the audit keeps running. Past
  // SchedulerOptions::max_releases_per_task it is Fail(retryable = true).
  // FAILED_PRECONDITION if the lease is not held.
  absl::Status Release(const std::string& lease_id, const std::string& reason);
  void Release(const std::string& lease_id, const std::string& reason, Done done);
  // Release of every lease `worker_id` holds, for `reason`; `released`
  // (may be null) gets their number once durable.
  void ReleaseAll(const std::string& worker_id, const std::string& reason, uint32_t* released,
                  Done done);
  // Takes back every lease whose deadline has passed on the clock (re-queued
  // with the attempt given back, within max_expiries_per_task), and forgets
  // expired worker registrations.
  // Also sends the "audit_waiting" events that are due (waiting_warning_ms).
  absl::Status ExpireLeases();

  absl::StatusOr<std::vector<EventRecord>> EventsAfter(const std::string& audit_id,
                                                       uint64_t after_sequence, int limit);
  // A counter that grows with every change of what Get, List and
  // EventsAfter show; WaitForChange blocks until it passes `seen` or
  // `timeout_ms` elapses, and returns it. Streams subscribe to changes()
  // instead, holding no thread while they wait.
  uint64_t version() const { return changes_.version(); }
  uint64_t WaitForChange(uint64_t seen, int timeout_ms) const {
    return changes_.Wait(seen, absl::Milliseconds(timeout_ms));
  }
  ChangeNotifier& changes() { return changes_; }
  // Answers every waiting Lease (no task) and every later one at once, and
  // ends watches, so the server can stop.
  void Shutdown();
  // Groups of decisions written so far and the decisions in them.
  uint64_t commit_groups() const { return commit_.groups(); }
  uint64_t committed_decisions() const { return commit_.decisions(); }

 private:
  // A Lease call waiting for work (Lease, WakeFor).
  struct Waiter {
    uint64_t id = 0;
    std::string worker_id;
    std::optional<WorkerOffer> offer;
    LeaseAnswer answer;
    DeadlineTimer::Id timeout = 0;  // in timer_
  };

  // An audit: its record and how the indexes know it.
  struct AuditEntry {
    AuditRecord record;
    size_t number = 0;  // in submit order; TaskIndex's and FairShare's audit number
    TaskNeeds needs;    // of each of its tasks
  };

  Scheduler(Store* store, const Clock* clock, SchedulerOptions options,
            prometheus::Registry* metrics);
  // What the group commit calls back: version bumps and WriteFailed.
  static GroupCommit::Hooks CommitHooks(Scheduler* s);
  // Replaces what memory holds with what the store holds. A lease memory
  // holds too keeps its deadline and progress; any other held lease gets at
  // least a full TTL from now.
  absl::Status LoadLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Adds a stored audit and its tasks (in index order) to memory.
  void Add(AuditRecord audit, std::vector<TaskRecord> tasks) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Makes `m` take effect in memory and queues it for the store; `done`
  // learns when it is durable. Counters move only once it is.
  void Apply(Mutation m, Done done) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Under the lock, `decide` makes a mutation (applied, `done` answered once
  // durable) or refuses (`done` answered with its error after the lock).
  void Decide(Done done, absl::FunctionRef<absl::StatusOr<Mutation>()> decide)
      ABSL_LOCKS_EXCLUDED(mu_);
  // One "audit_waiting" event for each queued audit past waiting_warning_ms.
  absl::Status WarnWaitingAudits() ABSL_LOCKS_EXCLUDED(mu_);
  // A group failed to write (group_commit.h): memory back to the store.
  void WriteFailed(const absl::Status& why) ABSL_LOCKS_EXCLUDED(mu_);
  // Leases the next task that fits `offer` to `worker_id`, answering
  // `*answer` (moved from) once durable; false, `*answer` untouched, when no
  // queued task fits.
  bool TryGrant(const std::string& worker_id, const std::optional<WorkerOffer>& offer,
                LeaseAnswer* answer) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes wait `wait` off the waiters; its answer, or null if it has none.
  LeaseAnswer TakeWaiter(uint64_t wait) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes a waiter off the list, its index and the timer; the next one.
  std::list<Waiter>::iterator RemoveWaiter(std::list<Waiter>::iterator it)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The audit `caller` may see, or NOT_FOUND (the same for one it may not).
  absl::StatusOr<const AuditEntry*> Visible(const std::string& audit_id, const Caller& caller) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Admit's checks with the plan's task and model counts.
  absl::StatusOr<std::optional<v1::Audit>> AdmitLocked(const Submission& submission,
                                                       uint64_t planned_tasks,
                                                       uint64_t planned_models)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  v1::Audit Snapshot(const AuditEntry& audit, bool with_spec = true) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  EventRecord Event(const std::string& audit_id, v1::EventType type, std::string task_id,
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
  // Grants up to `tasks` waiting Lease calls that audit `audit`'s tasks fit
  // a task, longest waiting first.
  void WakeFor(size_t audit, size_t tasks) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Grants every waiting Lease call that a queued task fits a task.
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

  // Runs the callbacks of waits (changes_, Lease long-polls) on one thread.
  DeadlineTimer timer_;
  // Bumped on every change, stopped on shutdown.
  ChangeNotifier changes_{&timer_};

  mutable absl::Mutex mu_;
  // Lease calls waiting for work, longest waiting first, and where each is.
  // A newly queued task is granted to the first waiter it fits, there and
  // then (not every idle worker woken: a thousand long-polls woken for one
  // task would each take the lock for nothing).
  std::list<Waiter> waiters_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, std::list<Waiter>::iterator> waiter_at_ ABSL_GUARDED_BY(mu_);
  uint64_t next_wait_ ABSL_GUARDED_BY(mu_) = 1;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, AuditEntry> audits_ ABSL_GUARDED_BY(mu_);
  std::vector<AuditEntry*> audit_order_ ABSL_GUARDED_BY(mu_);  // by number: submit order
  // Queued audits not yet warned of as waiting (WarnWaitingAudits), in
  // submit order, so only the front is ever due.
  std::deque<size_t> unwarned_ ABSL_GUARDED_BY(mu_);
  // (owner, request_id) -> the audit that request created.
  std::map<std::pair<std::string, std::string>, std::string> by_request_ ABSL_GUARDED_BY(mu_);
  TaskIndex index_ ABSL_GUARDED_BY(mu_);
  FairShare fair_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, RegisteredWorker> workers_ ABSL_GUARDED_BY(mu_);
  // The same workers by (seen_until_ms, id), oldest first: what expires next.
  std::set<std::pair<int64_t, std::string>> workers_by_seen_ ABSL_GUARDED_BY(mu_);
  // Last: its writer thread calls back into everything above.
  GroupCommit commit_;
};

}  // namespace memaudit::coordinator

#endif  // MEMAUDIT_SERVICES_COORDINATOR_SCHEDULER_H_
