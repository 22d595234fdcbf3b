// One thread that runs callbacks at given times, for servers that wait on
// thousands of things at once (long-polls, watch streams) without a thread
// each. Callbacks run on the timer's thread with no lock of the timer held,
// in deadline order; a slow one delays the others, so they must be short
// (finish an RPC, queue a write).
#ifndef MEMAUDIT_COMMON_BASE_DEADLINE_TIMER_H_
#define MEMAUDIT_COMMON_BASE_DEADLINE_TIMER_H_

#include <cstdint>
#include <map>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace memaudit {

class DeadlineTimer {
 public:
  using Id = uint64_t;
  using Callback = absl::AnyInvocable<void() &&>;

  DeadlineTimer();
  // Stop().
  ~DeadlineTimer();
  DeadlineTimer(const DeadlineTimer&) = delete;
  DeadlineTimer& operator=(const DeadlineTimer&) = delete;

  // Runs `fn` on the timer's thread at `when` (at once if it has passed).
  Id At(absl::Time when, Callback fn) ABSL_LOCKS_EXCLUDED(mu_);
  // Runs `fn` on the timer's thread as soon as it can: for work that must not
  // run inline under the caller's locks.
  Id Post(Callback fn) { return At(absl::InfinitePast(), std::move(fn)); }
  // True when `id` was still waiting and will now never run; false when it
  // has run, is running or was never given.
  bool Cancel(Id id) ABSL_LOCKS_EXCLUDED(mu_);
  // Runs what is due, drops the rest and joins the thread: after it, no
  // callback runs. Idempotent; At and Post after it never run.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);
  // Callbacks waiting to run.
  size_t pending() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Run();

  mutable absl::Mutex mu_;
  Id next_id_ ABSL_GUARDED_BY(mu_) = 1;
  absl::CondVar wake_;  // a new earliest deadline, or Stop
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::pair<absl::Time, Id>, Callback> due_ ABSL_GUARDED_BY(mu_);
  std::map<Id, absl::Time> when_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_BASE_DEADLINE_TIMER_H_
