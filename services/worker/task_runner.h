// Runs one leased task on top of engine/: derives the task's data and seeds
// from (spec seed, role, index), trains, and returns the observations to
// stream to the scorer. RunTask is the worker's task boundary: whatever the
// kind handler (and the engine under it) throws becomes a status here, and
// ClassifyFailure (failure_kind.h) says which statuses another attempt may cure.
#ifndef MEMAUDIT_SERVICES_WORKER_TASK_RUNNER_H_
#define MEMAUDIT_SERVICES_WORKER_TASK_RUNNER_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/messages/audit_kinds.h"
#include "common/messages/data_roots.h"
#include "engine/classifier_run.h"
#include "memaudit/v1/scorer.pb.h"
#include "memaudit/v1/worker.pb.h"

namespace memaudit::worker {

class KindHandler;

// A task's training so far. `examples` counts every example seen, once per
// epoch it was drawn in (the last batch of an epoch may be short).
struct TrainingProgress {
  uint64_t steps = 0;
  uint64_t examples = 0;
};

// Called after every optimizer step; returning false stops training.
using ProgressCallback = std::function<bool(const TrainingProgress&)>;

// Sends observations to the scorer before the task ends (tasks whose metrics
// fill in while they train, like forgetting curves). What it sends is sent
// again in the final result; the scorer stores each observation once.
using ObservationSink = std::function<absl::Status(const std::vector<v1::Observation>&)>;

// The handler that trains a task of `kind` (null: none). The real one is
// HandlerFor (kind_handler.h); tests pass their own, e.g. one whose engine
// throws.
using HandlerLookup = std::function<const KindHandler*(AuditKind kind)>;

// Trains `task` with `handlers`' handler once every file the task's spec
// names (common/messages/spec_paths.h) is found under `roots`, resolved on this host
// now: the worker reads the files, so it checks them itself whatever the
// coordinator checked at Submit. A path outside is INVALID_ARGUMENT naming
// the field, and the handler is not called. Never throws: an exception out of
// the handler or the engine is turned into a status by
// StatusOfCurrentException. CANCELLED means `on_progress` asked to stop; see
// ClassifyFailure (failure_kind.h) for which errors another attempt may cure.
absl::StatusOr<std::vector<v1::Observation>> RunTask(const HandlerLookup& handlers,
                                                     const DataRoots& roots, const v1::Task& task,
                                                     const ProgressCallback& on_progress,
                                                     const ObservationSink& send_early);

// The same with HandlerFor and DataRoots::Defaults() (a worker started
// without --data-root).
absl::StatusOr<std::vector<v1::Observation>> RunTask(const v1::Task& task,
                                                     const ProgressCallback& on_progress,
                                                     const ObservationSink& send_early = nullptr);

// The status of the exception being handled; call it only inside a `catch`.
// `context` ("membership task t-3") starts the message.
//   std::bad_alloc, c10::OutOfMemoryError (CUDA's caching allocator) and any
//   std::exception whose message says "out of memory" or "not enough memory"
//   (CUDA runtime errors, LibTorch's CPU allocator)  -> RESOURCE_EXHAUSTED
//   any other std::exception                           -> INTERNAL
//   anything else (`throw 42`)                         -> INTERNAL
// The message is the exception's what() up to LibTorch's appended backtrace.
absl::Status StatusOfCurrentException(absl::string_view context);

}  // namespace memaudit::worker

#endif  // MEMAUDIT_SERVICES_WORKER_TASK_RUNNER_H_
