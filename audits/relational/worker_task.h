// Runs one `relational` audit task (role "relational_variant", index = the
// variant: a units_sweep entry of the phone book or a key_dims entry of the
// linear model): maps the spec onto engine::RunPhoneBook /
// engine::RunLinearRelational and turns their output into observations.
#ifndef MEMAUDIT_AUDITS_RELATIONAL_WORKER_TASK_H_
#define MEMAUDIT_AUDITS_RELATIONAL_WORKER_TASK_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "audits/relational/signals.h"
#include "engine/relational_run.h"
#include "memaudit/v1/scorer.pb.h"
#include "memaudit/v1/worker.pb.h"
#include "services/worker/kind_handler.h"

namespace memaudit::worker {

// The engine runs of a task; INVALID_ARGUMENT names a bad field.
absl::StatusOr<engine::PhoneBookRunSpec> PhoneBookRunSpecFor(const v1::Task& task);
absl::StatusOr<engine::LinearRelationalRunSpec> LinearRunSpecFor(const v1::Task& task);

// The truth signals at point "truth", then per measured point its
// predictions (or estimates) and the clean-task values
// (audits/relational/signals.h).
std::vector<v1::Observation> PhoneBookObservations(const v1::Task& task,
                                                   const engine::PhoneBookRunResult& result);
std::vector<v1::Observation> LinearObservations(const v1::Task& task,
                                                const engine::LinearRelationalRunResult& result);

// `on_steps` gets the steps done and examples seen; false stops.
// `send_early` (may be null) receives each point's observations (with the
// truth, the first time) as soon as they are measured.
absl::StatusOr<std::vector<v1::Observation>> RunRelationalVariant(
    const v1::Task& task, const std::function<bool(uint64_t steps, uint64_t examples)>& on_steps,
    const std::function<absl::Status(const std::vector<v1::Observation>&)>& send_early);

}  // namespace memaudit::worker

#endif  // MEMAUDIT_AUDITS_RELATIONAL_WORKER_TASK_H_
