// The worker's life: register, long-poll for leases of tasks that fit what
// is free, run each on a thread of its own and stream its signals to the
// scorer while one heartbeat thread renews every running task's lease (and
// learns of cancellation), then report completion, failure or release.
// Outages of the coordinator or the scorer are waited out for as long as the
// lease is held.
#ifndef MEMAUDIT_SERVICES_WORKER_WORKER_LOOP_H_
#define MEMAUDIT_SERVICES_WORKER_WORKER_LOOP_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/metrics/metrics.h"
#include "common/security/tls.h"
#include "memaudit/v1/scorer.grpc.pb.h"
#include "memaudit/v1/worker.grpc.pb.h"
#include "services/worker/heartbeats.h"
#include "services/worker/kind_handler.h"
#include "services/worker/task_runner.h"
#include "services/worker/worker_metrics.h"

namespace memaudit::worker {

struct WorkerOptions {
  std::string coordinator;  // host:port
  // What the worker offers: tasks run at once while their needs fit
  // (task_fit.h). gpus > 0: it trains on its GPUs, GPU tasks only.
  uint32_t threads = 1;
  uint32_t gpus = 0;
  // The devices behind `gpus` (device_pool.h), one per GPU: "cuda:N", or
  // "cpu" repeated where tests simulate GPUs. Each task trains on devices of
  // its own. Empty: the engine's default device.
  std::vector<std::string> devices;
  uint64_t memory_mb = 0;  // 0 = unknown
  // How its CPU tasks compute (common/training/numerics.h): which CPU tasks it takes.
  std::string numeric_class = "portable";
  uint32_t lease_wait_ms = 2000;
  // Exit (Run returns OK) once no task has been running or offered for this
  // long, counted over answered lease polls only; zero: never.
  absl::Duration exit_when_idle = absl::ZeroDuration();
  // Stop leasing after this many tasks and exit once they end; 0: no limit.
  uint32_t max_tasks = 0;
  // Register's retries back off up to this.
  absl::Duration max_register_backoff = absl::Seconds(30);
  // Where the files a task's spec names must lie (RunTask checks each task);
  // none: a spec naming any file fails its task.
  DataRoots data_roots;
  // What the worker presents to the coordinator and the scorer (tls.h).
  ClientCredentials credentials;
};

class WorkerLoop {
 public:
  // `metrics` (may be null) receives the families in worker_metrics.h.
  // `handlers` trains the tasks (tests pass handlers whose engine throws).
  explicit WorkerLoop(WorkerOptions options, prometheus::Registry* metrics = nullptr,
                      HandlerLookup handlers = HandlerFor);
  ~WorkerLoop();
  // Runs until Stop(), --exit-when-idle or --max-tasks. A task that fails,
  // however it fails (an error, an exception out of the engine), is reported
  // with Fail, classified by ClassifyFailure (failure_kind.h). Registers
  // again and again until the coordinator answers (backing off up to
  // max_register_backoff). Returns an error if the coordinator refuses this
  // worker's credentials, or after reporting a task that failed with a CUDA
  // error (not out of memory), which may have left the process's CUDA
  // context unusable: the process must exit non-zero so that its supervisor
  // starts a fresh one.
  absl::Status Run();
  // Abandons the running tasks (releasing them: the coordinator re-queues
  // them without counting the attempt) and makes Run return. Returns at
  // once; it cancels a Register or Lease in flight (an idle worker is
  // always in a Lease long-poll) and wakes every backoff pause, so Run
  // returns as soon as its tasks are released, not after the long-poll.
  void Stop();

 private:
  struct RunningTask;
  // Registers a Register or Lease call's context for Stop() to cancel while
  // the call is in flight (cancelled at once when already stopping).
  class StoppableCall;

  absl::Status Register();
  // Tells the coordinator this worker is going away, so a lease granted to a
  // Lease call Stop() cancelled goes back to the queue at once.
  void Leave();
  // What is free now: the options less the needs of the running tasks.
  v1::WorkerCapabilities Free() const;
  // Starts `lease`'s task on a thread of its own.
  void Start(v1::LeaseResponse lease);
  // Joins the threads of tasks that ended; with `all`, waits for every one.
  void Reap(bool all);
  // Returns the task's outcome label for WorkerMetrics.
  const char* RunOne(const v1::LeaseResponse& lease, WorkerMetrics::Task* meter);
  // RunOne, or the outcome of reporting what it threw (ReportFailure): the
  // backstop for the worker's own code (the engine's exceptions end in
  // RunTask).
  const char* RunOneNoThrow(const v1::LeaseResponse& lease, WorkerMetrics::Task* meter);
  // Streams to the scorer, each observation with the task's `capability`
  // (LeaseResponse.capability), again while the scorer is out of reach
  // (UNAVAILABLE, or no answer in time) for as long as `lease_held` and the
  // worker is not stopping; an error says it came from the scorer.
  absl::Status StreamToScorer(std::vector<v1::Observation> observations,
                              const std::string& capability,
                              const std::function<bool()>& lease_held);
  // Reports a task that ended with `status` (Fail with its FailureKind) and
  // returns the outcome label ("failed" or "released").
  const char* ReportFailure(const v1::LeaseResponse& lease, absl::Status status,
                            const std::function<bool()>& lease_held);
  // Makes `call` (a Complete or Fail about `lease`), again while it answers
  // UNAVAILABLE (the coordinator, or for Complete the scorer behind it, out
  // of reach) or nothing in time, with capped backoff, for as long as
  // `lease_held`; once stopping, for a few seconds more at most. Returns the
  // first other answer: OK, FAILED_PRECONDITION (the lease is gone), ...
  absl::Status Report(const v1::LeaseResponse& lease, const char* what,
                      const std::function<bool()>& lease_held,
                      const std::function<grpc::Status(grpc::ClientContext*)>& call);
  // Sleeps for `duration`, or less once Stop() is called: it wakes the
  // moment Stop() is (a condition variable, not a polling loop).
  void PauseUnlessStopping(absl::Duration duration) const;

  WorkerOptions options_;
  // What Register and every Lease say the worker offers (made once).
  v1::WorkerCapabilities offer_;
  HandlerLookup handlers_;
  std::unique_ptr<v1::WorkerService::Stub> coordinator_;
  std::unique_ptr<v1::ScorerService::Stub> scorer_;
  std::string worker_id_;
  uint32_t heartbeat_ms_ = 1000;
  // Renews every running task's lease, one call per interval (made at the
  // first Register, which says the interval).
  std::unique_ptr<Heartbeats> heartbeats_;
  std::atomic<bool> stopping_{false};
  WorkerMetrics metrics_;

  mutable absl::Mutex mu_;
  // Signalled when a task ends and on Stop().
  absl::CondVar changed_;
  std::map<uint64_t, std::unique_ptr<RunningTask>> running_ ABSL_GUARDED_BY(mu_);
  // The Register and Lease calls in flight, which Stop() cancels.
  std::set<grpc::ClientContext*> stoppable_calls_ ABSL_GUARDED_BY(mu_);
  uint64_t next_task_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time last_busy_ ABSL_GUARDED_BY(mu_);
  // Set by a task's CUDA error: Run stops leasing.
  absl::Status device_error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace memaudit::worker

#endif  // MEMAUDIT_SERVICES_WORKER_WORKER_LOOP_H_
