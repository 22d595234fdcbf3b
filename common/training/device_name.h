// Names of the devices a worker trains on and of the precisions it runs
// CUDA products at, checked without LibTorch so the CLI can refuse a bad
// --device or --matmul-precision before it starts any process.
#ifndef MEMAUDIT_COMMON_TRAINING_DEVICE_NAME_H_
#define MEMAUDIT_COMMON_TRAINING_DEVICE_NAME_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace memaudit {

// "cpu", "cuda", "cuda:N" or "auto" (CUDA when the machine has it, else CPU).
inline absl::Status CheckDeviceName(const std::string& name) {
  if (name == "cpu" || name == "cuda" || name == "auto") return absl::OkStatus();
  if (absl::StartsWith(name, "cuda:") && name.size() > 5 && name.size() <= 8) {
    bool digits = true;
    for (char c : name.substr(5)) digits = digits && absl::ascii_isdigit(c);
    if (digits) return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--device: \"", name, "\" is not a device (use cpu, cuda, cuda:N or auto)"));
}

// How CUDA runs float32 products (engine/device.h's MatmulPrecision):
// "fp32", "tf32" or "bf16"; the last two need a CUDA `device` (the CPU runs
// fp32 only; "auto" is let through and checked where it is resolved).
inline absl::Status CheckMatmulPrecision(const std::string& name, const std::string& device) {
  if (name != "fp32" && name != "tf32" && name != "bf16") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--matmul-precision: \"", name, "\" is not a precision (use fp32, tf32 or bf16)"));
  }
  if (name != "fp32" && device == "cpu") {
    return absl::FailedPreconditionError(absl::StrCat(
        "--matmul-precision: \"", name, "\" needs a CUDA device; the CPU runs fp32 only"));
  }
  return absl::OkStatus();
}

// Whether workers started on `device` can take a task needing `gpus` GPUs:
// a GPU task goes to CUDA workers only and a CPU task to CPU workers only
// (worker.proto, Register), so `memaudit run` with the other kind would wait
// forever. "auto" is let through (it is resolved by each worker).
inline absl::Status CheckDeviceServesSpec(const std::string& device, uint32_t gpus) {
  if (device == "cpu" && gpus > 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("--device: \"cpu\" starts CPU workers, which never take a task with "
                     "resources.gpus_per_task: ",
                     gpus, "; run with --device cuda, or set resources.gpus_per_task: 0"));
  }
  if (absl::StartsWith(device, "cuda") && gpus == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--device: \"", device,
        "\" starts CUDA workers, which take only GPU tasks; set resources.gpus_per_task: 1 "
        "to train on the GPU, or run with --device cpu"));
  }
  return absl::OkStatus();
}

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_TRAINING_DEVICE_NAME_H_
