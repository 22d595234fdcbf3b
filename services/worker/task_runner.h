// Runs one leased task on top of engine/: derives the task's data and seeds
// from (spec seed, role, index), trains, and returns the observations to
// stream to the scorer.
#ifndef MEMAUDIT_SERVICES_WORKER_TASK_RUNNER_H_
#define MEMAUDIT_SERVICES_WORKER_TASK_RUNNER_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/classifier_run.h"
#include "memaudit/v1/scorer.pb.h"
#include "memaudit/v1/worker.pb.h"

namespace memaudit::worker {

// A task's training so far. `examples` counts every example seen, once per
// epoch it was drawn in (the last batch of an epoch may be short).
struct TrainingProgress {
  uint64_t steps = 0;
  uint64_t examples = 0;
};

// Called after every optimizer step; returning false stops training.
using ProgressCallback = std::function<bool(const TrainingProgress&)>;

// INVALID_ARGUMENT / NOT_FOUND / UNIMPLEMENTED mean a retry cannot help;
// CANCELLED means `on_progress` asked to stop.
// Sends observations to the scorer before the task ends (tasks whose metrics
// fill in while they train, like forgetting curves). What it sends is sent
// again in the final result; the scorer stores each observation once.
using ObservationSink = std::function<absl::Status(const std::vector<v1::Observation>&)>;

absl::StatusOr<std::vector<v1::Observation>> RunTask(const v1::Task& task,
                                                     const ProgressCallback& on_progress,
                                                     const ObservationSink& send_early = nullptr);

// Whether a task failing with `status` may succeed on another attempt.
bool Retryable(const absl::Status& status);

}  // namespace memaudit::worker

#endif  // MEMAUDIT_SERVICES_WORKER_TASK_RUNNER_H_
