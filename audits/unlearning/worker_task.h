// Runs one `unlearning` audit task (role "shadow_original" or
// "target_original", index = original i): maps the spec and the task's data
// plan (audits/unlearning/signals.h) onto engine::RunUnlearning and turns the
// released posteriors into observations.
#ifndef MEMAUDIT_AUDITS_UNLEARNING_WORKER_TASK_H_
#define MEMAUDIT_AUDITS_UNLEARNING_WORKER_TASK_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/unlearning_run.h"
#include "memaudit/v1/scorer.pb.h"
#include "memaudit/v1/worker.pb.h"
#include "services/worker/kind_handler.h"

namespace memaudit::worker {

// Whether `task` is an unlearning task this worker runs.
bool IsUnlearningTask(const v1::Task& task);

// The engine run of the task over `data` (the training split); pool
// positions become dataset rows through the audit pool. INVALID_ARGUMENT
// names a bad field.
absl::StatusOr<engine::UnlearningRunSpec> UnlearningRunSpecFor(const v1::Task& task,
                                                               const data::LabeledExamples& data);

// The summary at point "<side>" and, per child j and defense, the released
// posteriors at point "<side>/<j>" (audits/unlearning/signals.h).
std::vector<v1::Observation> UnlearningObservations(const v1::Task& task,
                                                    const engine::UnlearningRunResult& result);

// `on_steps` gets the optimizer steps done and examples seen; false stops.
absl::StatusOr<std::vector<v1::Observation>> RunUnlearningTask(
    const v1::Task& task, const std::function<bool(uint64_t steps, uint64_t examples)>& on_steps);

}  // namespace memaudit::worker

#endif  // MEMAUDIT_AUDITS_UNLEARNING_WORKER_TASK_H_
