// What LibTorch's NCCL process group reads from the environment when a
// data-parallel task creates one (engine/data_parallel.cc). By default
// PyTorch 2's watchdog aborts the whole process when a collective times out,
// which would take every other task of the worker with it, and a wait on a
// collective returns before the collective ends, so a rank that stopped
// would hang its peers on the GPU. Blocking waits with no async error
// handling make the waiting rank throw after the group's timeout instead:
// the step fails, the task is released, the worker goes on. Torch-free, so
// the worker sets it before its first thread starts.
#ifndef MEMAUDIT_ENGINE_COLLECTIVE_ENVIRONMENT_H_
#define MEMAUDIT_ENGINE_COLLECTIVE_ENVIRONMENT_H_

#include <cstdlib>
#include <utility>

namespace memaudit::engine {

// Both spellings: PyTorch 2 reads TORCH_NCCL_*, earlier versions NCCL_*.
inline constexpr std::pair<const char*, const char*> kCollectiveEnvironment[] = {
    {"TORCH_NCCL_BLOCKING_WAIT", "1"},
    {"NCCL_BLOCKING_WAIT", "1"},
    {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "0"},
    {"NCCL_ASYNC_ERROR_HANDLING", "0"},
};

// Sets each variable the environment does not set already (an operator's
// own choice stands). setenv is not thread-safe: call before any thread.
inline void SetCollectiveEnvironmentDefaults() {
  for (const auto& [name, value] : kCollectiveEnvironment) setenv(name, value, /*overwrite=*/0);
}

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_COLLECTIVE_ENVIRONMENT_H_
