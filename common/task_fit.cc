#include "common/task_fit.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace memaudit {

TaskNeeds NeedsOf(const v1::Resources& resources) {
  TaskNeeds needs;
  needs.threads = std::max<uint32_t>(resources.threads_per_task(), 1);
  needs.gpus = resources.gpus_per_task();
  needs.memory_mb = resources.memory_mb_per_task();
  return needs;
}

bool Fits(const TaskNeeds& needs, const v1::WorkerCapabilities& total,
          const v1::WorkerCapabilities& free) {
  if ((needs.gpus > 0) != (total.gpus() > 0)) return false;
  if (needs.threads > free.threads() || needs.gpus > free.gpus()) return false;
  return needs.memory_mb == 0 || needs.memory_mb <= free.memory_mb();
}

std::string CapabilityProblem(const v1::WorkerCapabilities& total,
                              const v1::WorkerCapabilities& free) {
  if (total.threads() > kMaxWorkerThreads) {
    return absl::StrCat("capabilities.threads: must be at most ", kMaxWorkerThreads, " (got ",
                        total.threads(), ")");
  }
  if (total.hostname().size() > kMaxHostnameBytes) {
    return absl::StrCat("capabilities.hostname: must be at most ", kMaxHostnameBytes,
                        " bytes (got ", total.hostname().size(), ")");
  }
  if (total.gpus() > kMaxWorkerGpus) {
    return absl::StrCat("capabilities.gpus: must be at most ", kMaxWorkerGpus, " (got ",
                        total.gpus(), ")");
  }
  if (total.memory_mb() > kMaxWorkerMemoryMb) {
    return absl::StrCat("capabilities.memory_mb: must be at most ", kMaxWorkerMemoryMb, " (got ",
                        total.memory_mb(), ")");
  }
  if (free.threads() > total.threads()) return "free.threads: more than capabilities.threads";
  if (free.gpus() > total.gpus()) return "free.gpus: more than capabilities.gpus";
  if (free.memory_mb() > total.memory_mb())
    return "free.memory_mb: more than capabilities.memory_mb";
  return "";
}

void Reserve(const TaskNeeds& needs, v1::WorkerCapabilities* free) {
  free->set_threads(free->threads() - std::min(free->threads(), needs.threads));
  free->set_gpus(free->gpus() - std::min(free->gpus(), needs.gpus));
  free->set_memory_mb(free->memory_mb() - std::min(free->memory_mb(), needs.memory_mb));
}

}  // namespace memaudit
