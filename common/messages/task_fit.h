// What a task needs of a worker and whether a worker can take it: the one
// place both the coordinator (leasing) and the worker (how many tasks it
// runs at once) decide it.
#ifndef MEMAUDIT_COMMON_MESSAGES_TASK_FIT_H_
#define MEMAUDIT_COMMON_MESSAGES_TASK_FIT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/training/numerics.h"
#include "memaudit/v1/spec.pb.h"
#include "memaudit/v1/worker.pb.h"

namespace memaudit {

// Ceilings a worker may claim (checked before a claim is used): far above
// any machine, low enough that sums cannot overflow.
inline constexpr uint32_t kMaxWorkerThreads = 4096;
inline constexpr uint32_t kMaxWorkerGpus = 64;
inline constexpr uint64_t kMaxWorkerMemoryMb = uint64_t{1} << 24;  // 16 TiB
inline constexpr size_t kMaxHostnameBytes = 253;                   // a DNS name's
// What a spec may ask of one task.
// Several GPUs train one model data-parallel across the devices of one
// worker (engine/data_parallel.h): at most a machine's.
inline constexpr uint32_t kMaxGpusPerTask = 8;
inline constexpr uint64_t kMaxMemoryMbPerTask = kMaxWorkerMemoryMb;

struct TaskNeeds {
  uint32_t threads = 1;
  uint32_t gpus = 0;
  uint64_t memory_mb = 0;  // 0 = unstated
  // CPU tasks: the numeric class a worker must have (common/training/numerics.h):
  // "portable", a native class, or "native" for any native class (an audit
  // not yet pinned to one).
  std::string numeric_class = kPortableNumericClass;
};

// Whether a worker of `worker_class` ("" = portable) computes a CPU task as
// `needs` requires.
bool NumericsFit(const TaskNeeds& needs, const std::string& worker_class);

// From the spec's resources (defaults applied: threads_per_task 0 is 1).
TaskNeeds NeedsOf(const v1::Resources& resources);

// Whether a worker offering `total` in all with `free` free now takes a
// task needing `needs`. A GPU worker (total.gpus > 0) takes GPU tasks only
// and a CPU worker CPU tasks only: where a task trains follows from its spec.
// A CPU task goes to a worker of its numeric class only (NumericsFit).
bool Fits(const TaskNeeds& needs, const v1::WorkerCapabilities& total,
          const v1::WorkerCapabilities& free);

// Why no worker whose whole offer is one of `totals` could ever take a task
// needing `needs`: "" when one could (the task then waits for room), else the
// requirement none meets, naming the spec field, e.g. "the tasks need 2 GPUs
// each (resources.gpus_per_task); the most a worker offers is 1".
std::string NoWorkerFits(const TaskNeeds& needs, const std::vector<v1::WorkerCapabilities>& totals);

// "" when `free` is within `total` and `total` within the ceilings above,
// else what is wrong, naming the field ("capabilities.threads: ..."). A
// worker offering no threads is no problem: no task fits it.
std::string CapabilityProblem(const v1::WorkerCapabilities& total,
                              const v1::WorkerCapabilities& free);

// `free` less what a running task holds (never below 0).
void Reserve(const TaskNeeds& needs, v1::WorkerCapabilities* free);

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_MESSAGES_TASK_FIT_H_
