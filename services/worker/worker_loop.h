// The worker's life: register, long-poll for a lease, run the task while a
// heartbeat thread renews the lease (and learns of cancellation), stream the
// signals to the scorer, then report completion or failure.
#ifndef MEMAUDIT_SERVICES_WORKER_WORKER_LOOP_H_
#define MEMAUDIT_SERVICES_WORKER_WORKER_LOOP_H_

#include <atomic>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "common/metrics.h"
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
};

class WorkerLoop {
 public:
  // `metrics` (may be null) receives the families in worker_metrics.h.
  // `handlers` trains the tasks (tests pass handlers whose engine throws).
  explicit WorkerLoop(WorkerOptions options, prometheus::Registry* metrics = nullptr,
                      HandlerLookup handlers = HandlerFor);
  // Runs until Stop(); returns an error only if the coordinator is unreachable
  // at start for too long. A task that fails, however it fails (an error, an
  // exception out of the engine), is reported with Fail and the loop leases
  // the next one; Retryable (task_runner.h) decides whether the coordinator
  // may retry it.
  absl::Status Run();
  // Abandons the current task (handing it back for a retry) and returns.
  void Stop() { stopping_ = true; }

 private:
  absl::Status Register();
  // Returns the task's outcome label for WorkerMetrics.
  const char* RunOne(const v1::LeaseResponse& lease);
  // RunOne, or "failed" after reporting what it threw: the backstop for the
  // worker's own code (the engine's exceptions end in RunTask).
  const char* RunOneNoThrow(const v1::LeaseResponse& lease);
  absl::Status StreamToScorer(const std::vector<v1::Observation>& observations);
  void Fail(const std::string& lease_id, const absl::Status& status, bool retryable);

  WorkerOptions options_;
  HandlerLookup handlers_;
  std::unique_ptr<v1::WorkerService::Stub> coordinator_;
  std::unique_ptr<v1::ScorerService::Stub> scorer_;
  std::string worker_id_;
  uint32_t heartbeat_ms_ = 1000;
  std::atomic<bool> stopping_{false};
  WorkerMetrics metrics_;
};

}  // namespace memaudit::worker

#endif  // MEMAUDIT_SERVICES_WORKER_WORKER_LOOP_H_
