#include "engine/device.h"

#include <torch/torch.h>

#include <mutex>

#include "absl/strings/str_cat.h"
#include "common/device_name.h"

namespace memaudit::engine {
namespace {

std::mutex& DeviceMutex() {
  static std::mutex mu;
  return mu;
}

std::string& DeviceName() {
  static std::string name = "cpu";
  return name;
}

}  // namespace

absl::StatusOr<std::string> SetDefaultDevice(const std::string& name) {
  if (absl::Status s = CheckDeviceName(name); !s.ok()) return s;
  std::string chosen = name;
  if (name == "auto") chosen = torch::cuda::is_available() ? "cuda" : "cpu";
  if (chosen != "cpu") {
    if (!torch::cuda::is_available()) {
      return absl::FailedPreconditionError(
          absl::StrCat("--device: \"", name, "\" but this machine has no usable CUDA device"));
    }
    const torch::Device device(chosen);
    if (device.has_index() && device.index() >= torch::cuda::device_count()) {
      return absl::FailedPreconditionError(absl::StrCat("--device: \"", name, "\" but only ",
                                                        torch::cuda::device_count(),
                                                        " CUDA device(s) exist"));
    }
  }
  std::lock_guard<std::mutex> lock(DeviceMutex());
  DeviceName() = chosen;
  return chosen;
}

std::string DefaultDevice() {
  std::lock_guard<std::mutex> lock(DeviceMutex());
  return DeviceName();
}

}  // namespace memaudit::engine
