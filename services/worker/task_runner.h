// Runs one leased task on top of engine/: derives the task's data and seeds
// from (spec seed, role, index), trains, and returns the observations to
// stream to the scorer.
#ifndef MEMAUDIT_SERVICES_WORKER_TASK_RUNNER_H_
#define MEMAUDIT_SERVICES_WORKER_TASK_RUNNER_H_

#include <vector>

#include "absl/status/statusor.h"
#include "engine/classifier_run.h"
#include "memaudit/v1/scorer.pb.h"
#include "memaudit/v1/worker.pb.h"

namespace memaudit::worker {

// INVALID_ARGUMENT / NOT_FOUND / UNIMPLEMENTED mean a retry cannot help;
// CANCELLED means `on_step` asked to stop.
absl::StatusOr<std::vector<v1::Observation>> RunTask(const v1::Task& task,
                                                     const engine::StepCallback& on_step);

// Whether a task failing with `status` may succeed on another attempt.
bool Retryable(const absl::Status& status);

}  // namespace memaudit::worker

#endif  // MEMAUDIT_SERVICES_WORKER_TASK_RUNNER_H_
