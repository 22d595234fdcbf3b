// Writes the scheduler's decisions to the Store in groups: what is decided
// while one group is being written goes into the next, one transaction and
// one sync to disk for all of it. The scheduler decides under its lock (in
// memory, in order), queues the decision here and answers its caller only
// when the decision is durable, so "acknowledged = durable" holds while the
// lock is never held across a disk sync.
//
// A group that fails to write leaves memory ahead of the disk. Before
// anything else is written or answered, the `failed` hook must bring memory
// back to what the store holds (the scheduler reloads it) and discard what
// was queued meanwhile (DiscardQueued): those decisions were taken on the
// memory being thrown away. Every caller of the failed group and of the
// discarded decisions is answered with the write's error.
//
// Two threads: one writes, one answers (in the order written), so the next
// group is on its way to disk while the last one's callers are answered.
#ifndef MEMAUDIT_SERVICES_COORDINATOR_GROUP_COMMIT_H_
#define MEMAUDIT_SERVICES_COORDINATOR_GROUP_COMMIT_H_

#include <cstdint>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "services/coordinator/records.h"
#include "services/coordinator/store.h"

namespace memaudit::coordinator {

class GroupCommit {
 public:
  // Learns whether a decision reached disk. Runs on the answering thread,
  // with no lock of this class held.
  using Done = absl::AnyInvocable<void(const absl::Status&) &&>;
  struct Hooks {
    // On the writer thread, after each group that reached disk, before its
    // callbacks: how many decisions it held and how long the write took.
    absl::AnyInvocable<void(size_t decisions, absl::Duration took)> durable = [](size_t,
                                                                                 absl::Duration) {};
    // On the writer thread, after a group failed, before its callbacks
    // (see above).
    absl::AnyInvocable<void(const absl::Status&)> failed = [](const absl::Status&) {};
  };

  // Starts the writer thread. `store` must outlive this.
  GroupCommit(Store* store, Hooks hooks);
  // Stop().
  ~GroupCommit();
  GroupCommit(const GroupCommit&) = delete;
  GroupCommit& operator=(const GroupCommit&) = delete;

  // Queues `m` behind everything queued before; `done` is called once it is
  // durable or failed. Cheap: call it under the lock that ordered the
  // decision.
  void Enqueue(Mutation m, Done done) ABSL_LOCKS_EXCLUDED(mu_);
  // For the `failed` hook: fails everything queued and not yet being written.
  void DiscardQueued() ABSL_LOCKS_EXCLUDED(mu_);
  // Writes what is queued, answers it, and ends both threads. Enqueue must
  // not be called after.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  // Groups written so far and the decisions in them, for tests and benches.
  uint64_t groups() const ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t decisions() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Write();
  void Answer();

  Store* const store_;
  Hooks hooks_;
  mutable absl::Mutex mu_;
  std::vector<Mutation> queued_ ABSL_GUARDED_BY(mu_);
  std::vector<Done> waiting_ ABSL_GUARDED_BY(mu_);    // one per queued_ entry
  std::vector<Done> discarded_ ABSL_GUARDED_BY(mu_);  // answered after a failure
  absl::CondVar queued_changed_;                      // something queued, or Stop
  absl::CondVar written_;                             // a group written, or the writer ended
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Groups written, with the outcome, waiting for the answering thread.
  std::vector<std::pair<absl::Status, std::vector<Done>>> to_answer_ ABSL_GUARDED_BY(mu_);
  bool written_all_ ABSL_GUARDED_BY(mu_) = false;  // the writer has ended
  uint64_t groups_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t decisions_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread writer_;
  std::thread answerer_;
};

}  // namespace memaudit::coordinator

#endif  // MEMAUDIT_SERVICES_COORDINATOR_GROUP_COMMIT_H_
