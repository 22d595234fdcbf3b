// Names of the devices a worker trains on, checked without LibTorch so the
// CLI can refuse a bad --device before it starts any process.
#ifndef MEMAUDIT_COMMON_DEVICE_NAME_H_
#define MEMAUDIT_COMMON_DEVICE_NAME_H_

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

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_DEVICE_NAME_H_
