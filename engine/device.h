// The device engine trains on when a run names none ("" in TrainerOptions and
// the facades' specs): CPU unless the process says otherwise, once, at start
// (the worker's --device). Torch-free, so services can set it.
#ifndef MEMAUDIT_ENGINE_DEVICE_H_
#define MEMAUDIT_ENGINE_DEVICE_H_

#include <string>

#include "absl/status/statusor.h"

namespace memaudit::engine {

// `name`: "cpu", "cuda", "cuda:N", or "auto" (CUDA when available, else
// CPU). INVALID_ARGUMENT for another name, FAILED_PRECONDITION for CUDA on
// a machine without it. Returns the device chosen.
absl::StatusOr<std::string> SetDefaultDevice(const std::string& name);

std::string DefaultDevice();

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_DEVICE_H_
