// Server-streaming watches on gRPC's callback API: a stream waiting for a
// change holds no thread, only a subscription to a ChangeNotifier
// (common/base/change_notifier.h). A synchronous handler holds a thread for its
// whole life, so a thousand watchers would cost a thousand threads.
//
// Used by AuditService.Watch (the coordinator) and ScorerService.WatchResults
// (the scorer); nothing in it is the coordinator's own.
#ifndef MEMAUDIT_COMMON_RPC_WATCH_REACTOR_H_
#define MEMAUDIT_COMMON_RPC_WATCH_REACTOR_H_

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/server_callback.h>

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/base/change_notifier.h"

namespace memaudit {

// A stream that ends at once with `status`, having written nothing: a watch
// refused before it starts (who calls, what it names).
template <class Message>
class FinishedWriteReactor final : public grpc::ServerWriteReactor<Message> {
 public:
  explicit FinishedWriteReactor(const grpc::Status& status) { this->Finish(status); }
  void OnDone() override { delete this; }
};

// Follows something by polling it: each Poll says what to write, then whether
// to poll again at once, to end the stream with a status, or to wait for the
// next change of `changes` (at most `wait`: then it polls anyway). What was
// a synchronous handler's loop
//
//   while (!ctx->IsCancelled()) {
//     seen = version(); look; Write(each); if (done) return status;
//     WaitForChange(seen, wait);
//   }
//
// with the same writes and statuses, one write in flight at a time. A
// cancelled call ends with OK, as that loop did; so does a failed write (the
// client is gone).
//
// Once `changes` stops (the server is shutting down: Scheduler::Shutdown,
// or the scorer's main before its server's Shutdown), every wait ends at
// once: the stream polls one last time, writes what that poll found and,
// where it would wait again, ends with UNAVAILABLE ("shutting down"), which
// a client takes as "watch again" (the CLI reconnects). Without that, each
// wait would call back at once and poll again, round and round, until the
// server's shutdown deadline cancelled the call. A stopped notifier is told
// from a timeout by the callback's arrival: with the version it was given
// and before `wait` has passed (ChangeNotifier calls back early only on a
// change or a stop; DeadlineTimer fires a timeout only at or after its
// deadline, on the same clock).
//
// Create it with new, call Start() once from the method handler and return
// it to gRPC; it deletes itself in OnDone.
//
// Who runs it, and why nothing touches freed memory. At any moment one of
// three things may drive the stream (poll, write, subscribe, finish): the
// method handler (Start), OnWriteDone after a write, or the notifier's
// callback after a wait. Which one is recorded in `Shared::phase`, under
// `Shared::mu`: kActive while one of them runs, kWaiting while only a
// subscription is pending, kFinished once Finish has been called. OnCancel
// may come at any time, on another thread: it only raises `cancelled`, which
// the driver checks before each poll, write and wait, except while the stream
// waits (no driver): then it finishes the stream itself. gRPC calls OnDone
// (which deletes the reactor) only after Finish and after every reaction
// returned, and only the one who moves `phase` to kFinished calls Finish, so
// the reactor lives as long as anyone may drive it. The notifier's callback
// may still come after that (a cancelled stream's subscription times out
// later; it cannot be withdrawn): it holds `Shared` by shared_ptr, not the
// reactor, and touches the reactor only after moving `phase` from kWaiting
// to kActive, which it cannot do once the stream finished. A callback the
// notifier drops uncalled (its timer destroyed) frees `Shared` and nothing
// else; the stream, left waiting, ends when the call is cancelled.
template <class Message>
class WatchReactor : public grpc::ServerWriteReactor<Message> {
 public:
  // What one Poll found, and what comes after its writes.
  struct Step {
    enum class Then { kWait, kPollAgain, kFinish };
    // Written in order, each after the last one's write completed.
    std::vector<Message> writes;
    Then then = Then::kWait;
    // kWait: the notifier's version read before the poll looked.
    uint64_t seen = 0;
    // kFinish: the stream's status.
    grpc::Status status;

    // Nothing written: the stream ends with `status` at once.
    static Step End(const grpc::Status& status) {
      Step step;
      step.then = Then::kFinish;
      step.status = status;
      return step;
    }
  };

  // Polls for the first time; then the reactor drives itself.
  void Start() { PollAndDrive(); }

  void OnWriteDone(bool ok) override {
    if (!ok) {
      FinishStream(grpc::Status::OK);  // the client is gone
      return;
    }
    ++written_;
    Drive();
  }

  void OnCancel() override {
    {
      absl::MutexLock lock(&shared_->mu);
      shared_->cancelled = true;
      // A driver sees `cancelled` itself; a finished stream has its status.
      if (shared_->phase != Phase::kWaiting) return;
      shared_->phase = Phase::kFinished;
    }
    this->Finish(grpc::Status::OK);
  }

  void OnDone() override { delete this; }

 protected:
  // Waits for the next change of `changes` (which must outlive every
  // subscription of the reactor), at most `wait`.
  WatchReactor(ChangeNotifier* changes, absl::Duration wait) : changes_(changes), wait_(wait) {}
  ~WatchReactor() override = default;

  // Looks at what the stream follows. Called by one driver at a time, never
  // concurrently with itself.
  virtual Step Poll() = 0;

 private:
  enum class Phase { kActive, kWaiting, kFinished };
  struct Shared {
    absl::Mutex mu;
    Phase phase ABSL_GUARDED_BY(mu) = Phase::kActive;
    bool cancelled ABSL_GUARDED_BY(mu) = false;
  };

  // The caller drives (phase kActive).
  void PollAndDrive() {
    if (Cancelled()) {
      FinishStream(grpc::Status::OK);
      return;
    }
    step_ = Poll();
    written_ = 0;
    Drive();
  }

  // The caller drives: writes what the last poll found, then does what it
  // said.
  void Drive() {
    if (written_ < step_.writes.size()) {
      if (Cancelled()) {
        FinishStream(grpc::Status::OK);
        return;
      }
      // OnWriteDone drives on, perhaps before StartWrite returns: nothing
      // may touch the reactor after it.
      this->StartWrite(&step_.writes[written_]);
      return;
    }
    switch (step_.then) {
      case Step::Then::kFinish:
        FinishStream(step_.status);
        return;
      case Step::Then::kPollAgain:
        PollAndDrive();
        return;
      case Step::Then::kWait:
        if (notifier_stopped_) {
          FinishStream(grpc::Status(grpc::StatusCode::UNAVAILABLE, "shutting down"));
          return;
        }
        Wait();
        return;
    }
  }

  // The caller drives: subscribes, handing the drive to the callback.
  void Wait() {
    // Kept here: once `mu` is released, OnCancel may finish the stream and
    // OnDone delete the reactor (and its `shared_`) before this returns.
    const std::shared_ptr<Shared> shared = shared_;
    {
      absl::MutexLock lock(&shared->mu);
      if (!shared->cancelled) {
        shared->phase = Phase::kWaiting;
        // Under `mu`, so that OnCancel cannot finish the stream before the
        // subscription is made (the notifier never calls back inline).
        const uint64_t seen = step_.seen;
        const absl::Time subscribed = absl::Now();
        const absl::Duration wait = wait_;
        changes_->Subscribe(
            seen, wait, [shared, self = this, seen, subscribed, wait](uint64_t version) {
              // Unchanged and early: not a change, not a timeout, so a stop.
              const bool stopped = version == seen && absl::Now() - subscribed < wait;
              {
                absl::MutexLock lock(&shared->mu);
                // Finished meanwhile (cancelled): `self` may be deleted.
                if (shared->phase != Phase::kWaiting) return;
                shared->phase = Phase::kActive;
              }
              if (stopped) self->notifier_stopped_ = true;
              self->PollAndDrive();
            });
        return;
      }
      shared->phase = Phase::kFinished;
    }
    this->Finish(grpc::Status::OK);
  }

  bool Cancelled() {
    absl::MutexLock lock(&shared_->mu);
    return shared_->cancelled;
  }

  // The caller drives; it ends the stream and touches the reactor no more.
  void FinishStream(const grpc::Status& status) {
    {
      absl::MutexLock lock(&shared_->mu);
      shared_->phase = Phase::kFinished;
    }
    this->Finish(status);
  }

  ChangeNotifier* const changes_;
  const absl::Duration wait_;
  const std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
  // The driver's: the last poll's steps, and how many of its writes are done.
  Step step_;
  size_t written_ = 0;
  // The driver's: `changes_` has stopped, so the next wait ends the stream.
  bool notifier_stopped_ = false;
};

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_RPC_WATCH_REACTOR_H_
