// Runs one `forgetting` audit task (role "forgetting_trial", index = trial):
// maps the spec onto engine::RunForgetting and turns its signals into
// observations, point = steps since injection (or "checkpoint").
#ifndef MEMAUDIT_AUDITS_FORGETTING_WORKER_TASK_H_
#define MEMAUDIT_AUDITS_FORGETTING_WORKER_TASK_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/forgetting_lm_run.h"
#include "engine/forgetting_run.h"
#include "memaudit/v1/scorer.pb.h"
#include "memaudit/v1/worker.pb.h"
#include "services/worker/kind_handler.h"

namespace memaudit::worker {

// D (first pool_size rows) and Dp of one trial, both drawn from the training
// split by (audit seed, trial), and Dp's labels (seeded flips when
// injected.flip_labels). Random selection: Dp = the next injected.size rows.
// Otherwise the next injected.candidates rows are scored by one reference
// model trained on D (seeds from (audit seed, trial)) and Dp is the easy /
// medium / hard injected.size of them. Each trial draws its own, as a re-run
// with another seed would, so the spread across trials is a re-run's.
struct ForgettingData {
  std::vector<uint32_t> clean_rows, injected_rows;
  std::vector<uint8_t> injected_labels;
  // Selection by loss only: each Dp row's reference loss (Dp order) and the
  // mean over every candidate.
  std::vector<double> selection_loss;
  double candidate_loss_mean = 0;
};
// `on_step` (may be null) counts the reference model's steps; false stops.
absl::StatusOr<ForgettingData> ForgettingDataFor(const v1::AuditSpec& spec, uint32_t trial,
                                                 const data::LabeledExamples& data,
                                                 const std::function<bool(uint64_t)>& on_step);

// The engine run of one trial on `sets`; INVALID_ARGUMENT names a bad field.
absl::StatusOr<engine::ForgettingRunSpec> ForgettingRunSpecFor(const v1::Task& task,
                                                               ForgettingData sets);

// phi_checkpoint / loss_checkpoint (and, selecting by loss, selection_loss /
// candidate_loss_mean) at point "checkpoint", then phi_injected,
// phi_baseline, loss_injected, loss_baseline (and phi_replay with attack
// "deterministic_replay", phi_reference_<j> with "lira_references" and
// "lira_online", phi_in_reference_<j> with "lira_online") at every evaluation
// point.
std::vector<v1::Observation> ForgettingObservations(const v1::Task& task,
                                                    const ForgettingData& sets,
                                                    const engine::ForgettingRunResult& result);

// LM canaries (`canaries` set): the engine run of one trial.
absl::StatusOr<engine::ForgettingLmRunSpec> ForgettingLmRunSpecFor(const v1::Task& task);

// exposure_checkpoint at point "checkpoint", then exposure_injected,
// exposure_baseline, exact_injected and exact_baseline at every point.
std::vector<v1::Observation> ForgettingCanaryObservations(
    const v1::Task& task, const engine::ForgettingLmRunResult& result);

// `on_steps` gets the optimizer steps done and examples seen; false stops.
// `send_early` (may be null) receives each evaluation point's observations
// (with the checkpoint's, the first time) as soon as they are measured.
absl::StatusOr<std::vector<v1::Observation>> RunForgettingTrial(
    const v1::Task& task, const std::function<bool(uint64_t steps, uint64_t examples)>& on_steps,
    const std::function<absl::Status(const std::vector<v1::Observation>&)>& send_early);

}  // namespace memaudit::worker

#endif  // MEMAUDIT_AUDITS_FORGETTING_WORKER_TASK_H_
