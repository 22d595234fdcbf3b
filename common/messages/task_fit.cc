#include "common/messages/task_fit.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/training/numerics.h"

namespace memaudit {

TaskNeeds NeedsOf(const v1::Resources& resources) {
  TaskNeeds needs;
  needs.threads = std::max<uint32_t>(resources.threads_per_task(), 1);
  needs.gpus = resources.gpus_per_task();
  needs.memory_mb = resources.memory_mb_per_task();
  if (resources.numerics() == kNativeNumerics) {
    needs.numeric_class =
        resources.numeric_class().empty() ? kNativeNumerics : resources.numeric_class();
  }
  return needs;
}

bool NumericsFit(const TaskNeeds& needs, const std::string& worker_class) {
  const std::string& have = worker_class.empty() ? kPortableNumericClass : worker_class;
  if (needs.numeric_class == kNativeNumerics) return IsNativeClass(have);
  return have == needs.numeric_class;
}

bool Fits(const TaskNeeds& needs, const v1::WorkerCapabilities& total,
          const v1::WorkerCapabilities& free) {
  if ((needs.gpus > 0) != (total.gpus() > 0)) return false;
  // CUDA results are a class of their own whatever the spec's numerics.
  if (needs.gpus == 0 && !NumericsFit(needs, total.numeric_class())) return false;
  if (needs.threads > free.threads() || needs.gpus > free.gpus()) return false;
  return needs.memory_mb == 0 || needs.memory_mb <= free.memory_mb();
}

std::string NoWorkerFits(const TaskNeeds& needs,
                         const std::vector<v1::WorkerCapabilities>& totals) {
  uint32_t most_gpus = 0, most_threads = 0;
  uint64_t most_memory = 0;
  bool any_cpu_worker = false, any_of_class = false;
  for (const v1::WorkerCapabilities& total : totals) {
    if (Fits(needs, total, total)) return "";
    // Only workers of the task's kind (GPU or CPU) count for its sizes.
    if ((needs.gpus > 0) != (total.gpus() > 0)) continue;
    any_cpu_worker |= total.gpus() == 0;
    if (needs.gpus == 0 && !NumericsFit(needs, total.numeric_class())) continue;
    any_of_class = true;
    most_gpus = std::max(most_gpus, total.gpus());
    most_threads = std::max(most_threads, total.threads());
    most_memory = std::max<uint64_t>(most_memory, total.memory_mb());
  }
  if (needs.gpus > 0 && most_gpus < needs.gpus) {
    return absl::StrCat("the tasks need ", needs.gpus, " GPU", needs.gpus == 1 ? "" : "s",
                        " each (resources.gpus_per_task); the most a worker offers is ", most_gpus);
  }
  if (needs.gpus == 0 && !any_cpu_worker) {
    return "the tasks train on the CPU (resources.gpus_per_task 0); every worker is a GPU worker";
  }
  if (!any_of_class) {
    return absl::StrCat("the tasks need a worker of numeric class ", needs.numeric_class,
                        " (resources.numerics); none has it");
  }
  if (most_threads < needs.threads) {
    return absl::StrCat("the tasks need ", needs.threads,
                        " threads each (resources.threads_per_task); the most a worker offers is ",
                        most_threads);
  }
  return absl::StrCat("the tasks need ", needs.memory_mb,
                      " MB each (resources.memory_mb_per_task); the most a worker offers is ",
                      most_memory);
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
  if (std::string problem = NumericClassProblem(total.numeric_class()); !problem.empty()) {
    return absl::StrCat("capabilities.numeric_class: ", problem);
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
