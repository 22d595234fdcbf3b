// A version counter that callers can wait on without a thread each: a watch
// stream subscribes once per change it waits for, and is called back (on the
// DeadlineTimer's thread, never inline under the notifier's or the bumper's
// locks) when the version passes what it saw or its timeout ends.
#ifndef MEMAUDIT_COMMON_BASE_CHANGE_NOTIFIER_H_
#define MEMAUDIT_COMMON_BASE_CHANGE_NOTIFIER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/base/deadline_timer.h"

namespace memaudit {

class ChangeNotifier {
 public:
  // Called with the version when it is called back.
  using Callback = absl::AnyInvocable<void(uint64_t) &&>;

  // `timer` runs the callbacks and the timeouts; it must outlive this.
  explicit ChangeNotifier(DeadlineTimer* timer) : timer_(timer) {}
  // Calls back every subscriber still waiting, as if stopped.
  ~ChangeNotifier() { Stop(); }

  uint64_t version() const;
  // Advances the version and schedules every subscriber's callback. Cheap
  // and safe under any lock of the caller.
  void Bump();
  // Calls `fn` once, on the timer's thread: as soon as the version is past
  // `seen` (at once if it already is), after `timeout` at the latest, or
  // when the notifier stops.
  void Subscribe(uint64_t seen, absl::Duration timeout, Callback fn);
  // Blocks (a thread) until the version passes `seen`, `timeout` elapses or
  // the notifier stops; returns the version.
  uint64_t Wait(uint64_t seen, absl::Duration timeout) const;
  // Calls back every subscriber now and every later one at once: a server
  // shutting down ends its watches.
  void Stop();
  size_t subscribers() const;

 private:
  // Shared with the timeouts waiting in the timer, which may outlive this.
  struct State {
    absl::Mutex mu;
    absl::CondVar changed;
    uint64_t version ABSL_GUARDED_BY(mu) = 0;
    bool stopped ABSL_GUARDED_BY(mu) = false;
    uint64_t next_id ABSL_GUARDED_BY(mu) = 1;
    // id -> (callback, its timeout in the timer)
    std::map<uint64_t, std::pair<Callback, DeadlineTimer::Id>> waiting ABSL_GUARDED_BY(mu);
  };
  // Schedules every subscriber's callback with the version now.
  void ReleaseAll() ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_->mu);

  DeadlineTimer* timer_;
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_BASE_CHANGE_NOTIFIER_H_
