// The worker's life: register, long-poll for a lease, run the task and
// stream its signals to the scorer while a heartbeat thread renews the lease
// (and learns of cancellation), then report completion, failure or release.
#ifndef MEMAUDIT_SERVICES_WORKER_WORKER_LOOP_H_
#define MEMAUDIT_SERVICES_WORKER_WORKER_LOOP_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/metrics.h"
#include "common/tls.h"
#include "memaudit/v1/scorer.grpc.pb.h"
#include "memaudit/v1/worker.grpc.pb.h"
#include "services/worker/kind_handler.h"
#include "services/worker/task_runner.h"
#include "services/worker/worker_metrics.h"

namespace memaudit::worker {

struct WorkerOptions {
  std::string coordinator;  // host:port
  uint32_t threads = 1;
  uint32_t gpus = 0;
  uint32_t lease_wait_ms = 2000;
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
  // Runs until Stop(). A task that fails, however it fails (an error, an
  // exception out of the engine), is reported with Fail, classified by
  // ClassifyFailure (failure_kind.h), and the loop leases the next one.
  // Returns an error if the coordinator is unreachable at start for too
  // long, or after reporting a task that failed with a CUDA error (not out
  // of memory), which may have left the process's CUDA context unusable:
  // the process must exit non-zero so that its supervisor starts a fresh one.
  absl::Status Run();
  // Abandons the current task (releasing it: the coordinator re-queues it
  // without counting the attempt) and returns.
  void Stop() { stopping_ = true; }

 private:
  absl::Status Register();
  // Returns the task's outcome label for WorkerMetrics.
  const char* RunOne(const v1::LeaseResponse& lease);
  // RunOne, or the outcome of reporting what it threw (ReportFailure): the
  // backstop for the worker's own code (the engine's exceptions end in
  // RunTask).
  const char* RunOneNoThrow(const v1::LeaseResponse& lease);
  // Streams to the scorer, each observation with the task's `capability`
  // (LeaseResponse.capability), again while it is UNAVAILABLE (5 tries over
  // 7.5 s, fewer once stopping); an error says it came from the scorer.
  absl::Status StreamToScorer(std::vector<v1::Observation> observations,
                              const std::string& capability);
  // Reports a task that ended with `status` (Fail with its FailureKind) and
  // returns the outcome label ("failed" or "released").
  const char* ReportFailure(const v1::LeaseResponse& lease, absl::Status status);
  // Makes `call` (a Complete or Fail about `lease`), again while the
  // coordinator cannot be reached (UNAVAILABLE, or no answer within an
  // attempt's deadline), with backoff, for up to the lease's TTL: past that
  // the coordinator takes the lease back on its own. Returns the first other
  // answer: OK, FAILED_PRECONDITION (the lease is gone), ...
  absl::Status Report(const v1::LeaseResponse& lease, const char* what,
                      const std::function<grpc::Status(grpc::ClientContext*)>& call);
  // Sleeps for `duration`, or less once Stop() is called.
  void PauseUnlessStopping(absl::Duration duration) const;

  WorkerOptions options_;
  HandlerLookup handlers_;
  std::unique_ptr<v1::WorkerService::Stub> coordinator_;
  std::unique_ptr<v1::ScorerService::Stub> scorer_;
  std::string worker_id_;
  uint32_t heartbeat_ms_ = 1000;
  std::atomic<bool> stopping_{false};
  // Set (on the Run thread) by a task's CUDA error: Run stops leasing.
  absl::Status device_error_;
  WorkerMetrics metrics_;
};

}  // namespace memaudit::worker

#endif  // MEMAUDIT_SERVICES_WORKER_WORKER_LOOP_H_
