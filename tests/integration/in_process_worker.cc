#include "tests/integration/in_process_worker.h"

#include <utility>

#include "absl/time/clock.h"

namespace memaudit::testing {

InProcessWorker::InProcessWorker(worker::WorkerOptions options, const worker::KindHandler* engine)
    : loop_(std::make_unique<worker::WorkerLoop>(
          std::move(options), nullptr,
          engine == nullptr ? worker::HandlerLookup(worker::HandlerFor)
                            : [engine](AuditKind) { return engine; })),
      runner_([this] {
        result_ = loop_->Run();
        returned_ = true;
      }) {}

void InProcessWorker::Stop() {
  loop_->Stop();
  if (runner_.joinable()) runner_.join();
}

bool InProcessWorker::WaitForReturn(absl::Duration timeout) const {
  const absl::Time end = absl::Now() + timeout;
  while (!returned_ && absl::Now() < end) absl::SleepFor(absl::Milliseconds(50));
  return returned_;
}

}  // namespace memaudit::testing
