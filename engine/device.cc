#include "engine/device.h"

#include "absl/base/thread_annotations.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/base/status_macros.h"
#include "common/training/device_name.h"
#include "engine/torch_api.h"

namespace memaudit::engine {
namespace {

ABSL_CONST_INIT absl::Mutex device_mu(absl::kConstInit);

std::string& DeviceName() ABSL_EXCLUSIVE_LOCKS_REQUIRED(device_mu) {
  static std::string name = "cpu";
  return name;
}

MatmulPrecision& Precision() ABSL_EXCLUSIVE_LOCKS_REQUIRED(device_mu) {
  static MatmulPrecision precision = MatmulPrecision::kFp32;
  return precision;
}

// The calling thread's pin (SetThreadDevices); empty: the process default.
std::vector<std::string>& PinnedDevices() {
  thread_local std::vector<std::string> devices;
  return devices;
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
  if (!PinnedDevices().empty()) return PinnedDevices().front();
  absl::MutexLock lock(&device_mu);
  return DeviceName();
}

int CudaDeviceCount() {
  return torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
}

absl::Status SetThreadDevices(const std::vector<std::string>& devices) {
  for (const std::string& name : devices) {
    if (name == "cpu") continue;
    if (!absl::StartsWith(name, "cuda:") || !CheckDeviceName(name).ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("thread devices: \"", name, "\" is not cpu or cuda:N"));
    }
    if (torch::Device(name).index() >= CudaDeviceCount()) {
      return absl::FailedPreconditionError(absl::StrCat("thread devices: \"", name,
                                                        "\" but this machine has ",
                                                        CudaDeviceCount(), " CUDA device(s)"));
    }
  }
  PinnedDevices() = devices;
  return absl::OkStatus();
}

std::vector<std::string> ThreadDevices() {
  if (!PinnedDevices().empty()) return PinnedDevices();
  return {DefaultDevice()};
}

absl::Status SetMatmulPrecision(const std::string& name) {
  {
    absl::MutexLock lock(&device_mu);
    MEMAUDIT_RETURN_IF_ERROR(CheckMatmulPrecision(name, DeviceName()));
    Precision() = name == "tf32"   ? MatmulPrecision::kTf32
                  : name == "bf16" ? MatmulPrecision::kBf16
                                   : MatmulPrecision::kFp32;
  }
  ApplyMatmulPrecision();
  return absl::OkStatus();
}

MatmulPrecision CurrentMatmulPrecision() {
  absl::MutexLock lock(&device_mu);
  return Precision();
}

void ApplyMatmulPrecision() {
  const bool tf32 = CurrentMatmulPrecision() != MatmulPrecision::kFp32;
  at::globalContext().setAllowTF32CuBLAS(tf32);
  at::globalContext().setAllowTF32CuDNN(tf32);
}

}  // namespace memaudit::engine
