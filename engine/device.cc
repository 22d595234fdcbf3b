#include "engine/device.h"

#include <torch/torch.h>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/device_name.h"
#include "common/status_macros.h"

namespace memaudit::engine {
namespace {

ABSL_CONST_INIT absl::Mutex device_mu(absl::kConstInit);

std::string& DeviceName() ABSL_EXCLUSIVE_LOCKS_REQUIRED(device_mu) {
  static std::string name = "cpu";
  return name;
}

}  // namespace

absl::StatusOr<std::string> SetDefaultDevice(const std::string& name) {
  MEMAUDIT_RETURN_IF_ERROR(CheckDeviceName(name));
  std::string chosen = name;
  if (name == "auto") chosen = torch::cuda::is_available() ? "cuda" : "cpu";
  if (chosen != "cpu") {
    if (!torch::cuda::is_available()) {
      return absl::FailedPreconditionError(
          absl::StrCat("--device: \"", name, "\" but this machine has no usable CUDA device"));
    }
    const torch::Device device(chosen);
    if (device.has_index() && static_cast<size_t>(device.index()) >= torch::cuda::device_count()) {
      return absl::FailedPreconditionError(absl::StrCat("--device: \"", name, "\" but only ",
                                                        torch::cuda::device_count(),
                                                        " CUDA device(s) exist"));
    }
  }
  absl::MutexLock lock(&device_mu);
  DeviceName() = chosen;
  return chosen;
}

std::string DefaultDevice() {
  absl::MutexLock lock(&device_mu);
  return DeviceName();
}

}  // namespace memaudit::engine
