// What the machine a worker runs on offers, for its defaults.
#ifndef MEMAUDIT_SERVICES_WORKER_MACHINE_H_
#define MEMAUDIT_SERVICES_WORKER_MACHINE_H_

#include <cstdint>
#include <string>

namespace memaudit::worker {

// The memory this process may use, in MiB: the smaller of physical memory
// and the cgroup's limit (a container's `resources.limits.memory`).
uint64_t UsableMemoryMb();

// The lower of physical memory and `cgroup_limit` (the text of a cgroup v2
// memory.max or v1 memory.limit_in_bytes: a byte count or "max"), in MiB.
uint64_t LowerMemoryMb(uint64_t physical_bytes, const std::string& cgroup_limit);

}  // namespace memaudit::worker

#endif  // MEMAUDIT_SERVICES_WORKER_MACHINE_H_
