// A worker loop (what memaudit-worker runs) on a thread of this test
// process, so that a test can give it an engine of its own and see Run's
// result.
#ifndef MEMAUDIT_TESTS_INTEGRATION_IN_PROCESS_WORKER_H_
#define MEMAUDIT_TESTS_INTEGRATION_IN_PROCESS_WORKER_H_

#include <atomic>
#include <memory>
#include <thread>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "services/worker/kind_handler.h"
#include "services/worker/worker_loop.h"

namespace memaudit::testing {

class InProcessWorker {
 public:
  // Starts Run() at once; `engine` (null: the real handlers) trains every task.
  InProcessWorker(worker::WorkerOptions options, const worker::KindHandler* engine);
  // Stops it (what SIGTERM does) and waits for Run to return.
  ~InProcessWorker() { Stop(); }
  void Stop();
  // Waits up to `timeout` for Run to return on its own.
  bool WaitForReturn(absl::Duration timeout) const;
  bool returned() const { return returned_; }
  // Run's result, once returned.
  const absl::Status& result() const { return result_; }

 private:
  std::unique_ptr<worker::WorkerLoop> loop_;
  absl::Status result_;
  std::atomic<bool> returned_{false};
  std::thread runner_;  // last: starts once the members above exist
};

}  // namespace memaudit::testing

#endif  // MEMAUDIT_TESTS_INTEGRATION_IN_PROCESS_WORKER_H_
