// How a worker trains one task of each audit kind. Each kind implements
// KindHandler in its folder (audits/<kind>/worker_task.cc) and binds it to its kind there
// (HandlerOfKind, common/messages/kind_table.h); HandlerFor is the one dispatch on the kind.
#ifndef MEMAUDIT_SERVICES_WORKER_KIND_HANDLER_H_
#define MEMAUDIT_SERVICES_WORKER_KIND_HANDLER_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/messages/audit_kinds.h"
#include "common/messages/kind_table.h"
#include "memaudit/v1/scorer.pb.h"
#include "memaudit/v1/worker.pb.h"
#include "services/worker/task_runner.h"

namespace memaudit::worker {

// Called after every optimizer step with the task's steps and examples so
// far (task_runner.h's TrainingProgress); returning false stops training.
using StepCallback = std::function<bool(uint64_t steps, uint64_t examples)>;

class KindHandler {
 public:
  virtual ~KindHandler() = default;

  // Trains `task` and returns the observations to stream to the scorer. A
  // role the kind does not have is UnknownRole(task). Errors: see RunTask.
  // It may throw, as the engine does (LibTorch's errors, out of memory):
  // RunTask, its one caller, turns the exception into a status.
  virtual absl::StatusOr<std::vector<v1::Observation>> Run(
      const v1::Task& task, const StepCallback& on_steps,
      const ObservationSink& send_early) const = 0;
};

// The handler of `kind`; null for KIND_NOT_SET.
const KindHandler* HandlerFor(AuditKind kind);

// UNIMPLEMENTED: this worker has no task of `task`'s role for its kind.
absl::Status UnknownRole(const v1::Task& task);

}  // namespace memaudit::worker

namespace memaudit {
// Each kind's file of this layer binds its handler (common/messages/kind_table.h).
MEMAUDIT_DECLARE_KIND_HANDLERS(worker::KindHandler);
}  // namespace memaudit

#endif  // MEMAUDIT_SERVICES_WORKER_KIND_HANDLER_H_
