// The CUDA devices a worker offers and which of its running tasks holds
// which: a task needing g GPUs gets g free devices, the lowest first, and
// trains on them (its thread pinned, engine/device.h) until it ends.
#ifndef MEMAUDIT_SERVICES_WORKER_DEVICE_POOL_H_
#define MEMAUDIT_SERVICES_WORKER_DEVICE_POOL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace memaudit::worker {

// The devices a worker offers ("cuda:N" each), from the device its --device
// resolved to (`chosen`: "cpu", "cuda" or "cuda:N"), its --devices flag (a
// comma-separated list of CUDA indices, or "") and the CUDA devices the
// machine has: none on the CPU; "cuda:N" alone; for "cuda", every visible
// device or those --devices lists. INVALID_ARGUMENT naming --devices for a
// list that is not one of distinct indices below `visible`, or that is given
// with a CPU or an indexed --device.
absl::StatusOr<std::vector<std::string>> OfferedDevices(const std::string& chosen,
                                                        const std::string& devices_flag,
                                                        int visible);

// `offered` turned so that its entry `first` (modulo its size) comes first:
// the worker fills its devices from there (--first-device), so that several
// workers on one machine (`memaudit run` starts two) start on different GPUs.
std::vector<std::string> StartingAt(std::vector<std::string> offered, uint32_t first);

// Which of `offered` devices (their indices: a worker may offer one name
// twice, as tests offer "cpu") a task needing `count` gets: the first
// `count` indices that `held` lacks, in order; fewer when fewer are free.
std::vector<size_t> PickDevices(size_t offered, const std::vector<size_t>& held, uint32_t count);

// The device indices of the task running on the calling thread (set by the
// worker as the task's thread starts); empty elsewhere and on a CPU worker.
const std::vector<size_t>& TaskDeviceSlots();
void SetTaskDeviceSlots(std::vector<size_t> slots);

}  // namespace memaudit::worker

#endif  // MEMAUDIT_SERVICES_WORKER_DEVICE_POOL_H_
