// Runs one `exposure` audit task (a canary, baseline or reference model of
// one sweep variant): maps the spec onto engine::RunExposure and turns its
// result into the observations listed in audits/exposure/signals.h.
#ifndef MEMAUDIT_AUDITS_EXPOSURE_WORKER_TASK_H_
#define MEMAUDIT_AUDITS_EXPOSURE_WORKER_TASK_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/exposure_run.h"
#include "memaudit/v1/scorer.pb.h"
#include "memaudit/v1/worker.pb.h"
#include "services/worker/kind_handler.h"

namespace memaudit::worker {

// The engine run a task describes; INVALID_ARGUMENT names a bad field.
absl::StatusOr<engine::ExposureRunSpec> ExposureRunSpecFor(const v1::Task& task);

// Observations for one finished run (run = the variant; the point names the
// model: exposure::SignalsAt lists what each sends).
std::vector<v1::Observation> ExposureObservations(const v1::Task& task,
                                                  const engine::ExposureRunResult& result);

// The observations of one evaluation point of the canary model (point
// "step/<n>": px_bits, rank, exact, rank_queries); none for the final point,
// which ExposureObservations reports at "final".
std::vector<v1::Observation> ExposurePointObservations(const v1::Task& task,
                                                       const engine::ExposurePoint& point);

// `on_steps` gets the optimizer steps done; false stops training.
// `send_early` (may be null) gets each evaluation point's observations as it
// is measured (they are in the returned observations too).
absl::StatusOr<std::vector<v1::Observation>> RunExposureModel(
    const v1::Task& task, const std::function<bool(uint64_t steps, uint64_t examples)>& on_steps,
    const std::function<absl::Status(const std::vector<v1::Observation>&)>& send_early = nullptr);

}  // namespace memaudit::worker

#endif  // MEMAUDIT_AUDITS_EXPOSURE_WORKER_TASK_H_
