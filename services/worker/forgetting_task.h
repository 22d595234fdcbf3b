// Runs one `forgetting` audit task (role "forgetting_trial", index = trial):
// maps the spec onto engine::RunForgetting and turns its signals into
// observations, point = steps since injection (or "checkpoint").
#ifndef MEMAUDIT_SERVICES_WORKER_FORGETTING_TASK_H_
#define MEMAUDIT_SERVICES_WORKER_FORGETTING_TASK_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/forgetting_run.h"
#include "memaudit/v1/scorer.pb.h"
#include "memaudit/v1/worker.pb.h"

namespace memaudit::worker {

// D (first pool_size rows) and Dp (the next injected.size rows) of the
// audit, both drawn from the training split by the audit seed, and Dp's
// labels (seeded flips when injected.flip_labels).
struct ForgettingData {
  std::vector<uint32_t> clean_rows, injected_rows;
  std::vector<uint8_t> injected_labels;
};
absl::StatusOr<ForgettingData> ForgettingDataFor(const v1::AuditSpec& spec,
                                                 const engine::LabeledImages& data);

// The engine run of one trial; INVALID_ARGUMENT names a bad field.
absl::StatusOr<engine::ForgettingRunSpec> ForgettingRunSpecFor(const v1::Task& task,
                                                               const engine::LabeledImages& data);

// phi_checkpoint / loss_checkpoint at point "checkpoint", then phi_injected,
// phi_baseline, loss_injected, loss_baseline (and phi_replay with attack
// "deterministic_replay") at every evaluation point.
std::vector<v1::Observation> ForgettingObservations(const v1::Task& task,
                                                    const engine::ForgettingRunResult& result);

// `on_steps` gets the optimizer steps done and examples seen; false stops.
// `send_early` (may be null) receives each evaluation point's observations
// (with the checkpoint's, the first time) as soon as they are measured.
absl::StatusOr<std::vector<v1::Observation>> RunForgettingTrial(
    const v1::Task& task, const std::function<bool(uint64_t steps, uint64_t examples)>& on_steps,
    const std::function<absl::Status(const std::vector<v1::Observation>&)>& send_early);

}  // namespace memaudit::worker

#endif  // MEMAUDIT_SERVICES_WORKER_FORGETTING_TASK_H_
