// Runs one trial of a forgetting audit's `construction` (task role
// "forgetting_trial", index = the trial): no model and no engine, the
// closed-form learner of scoring/forgetting_constructions.h on the trial's
// own samples. Observations: guess_injected, guess_baseline and
// arms_identical (one value each) at every evaluation point.
#ifndef MEMAUDIT_AUDITS_FORGETTING_WORKER_TASK_CONSTRUCTION_H_
#define MEMAUDIT_AUDITS_FORGETTING_WORKER_TASK_CONSTRUCTION_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "memaudit/v1/scorer.pb.h"
#include "memaudit/v1/worker.pb.h"

namespace memaudit::worker {

// `on_steps` gets the trial's per-example updates once it is done.
absl::StatusOr<std::vector<v1::Observation>> RunConstructionTrial(
    const v1::Task& task, const std::function<bool(uint64_t, uint64_t)>& on_steps);

}  // namespace memaudit::worker

#endif  // MEMAUDIT_AUDITS_FORGETTING_WORKER_TASK_CONSTRUCTION_H_
