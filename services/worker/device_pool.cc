#include "services/worker/device_pool.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/messages/task_fit.h"

namespace memaudit::worker {

absl::StatusOr<std::vector<std::string>> OfferedDevices(const std::string& chosen,
                                                        const std::string& devices_flag,
                                                        int visible) {
  if (chosen != "cuda") {
    if (!devices_flag.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--devices: needs --device cuda (or auto on a machine with CUDA); this worker trains on ",
          chosen));
    }
    if (chosen == "cpu") return std::vector<std::string>{};
    return std::vector<std::string>{chosen};
  }
  std::vector<std::string> offered;
  if (devices_flag.empty()) {
    for (int i = 0; i < visible && offered.size() < kMaxWorkerGpus; ++i) {
      offered.push_back(absl::StrCat("cuda:", i));
    }
    return offered;
  }
  std::set<int> seen;
  for (absl::string_view part : absl::StrSplit(devices_flag, ',')) {
    int index = -1;
    if (!absl::SimpleAtoi(part, &index) || index < 0 || index >= visible) {
      return absl::InvalidArgumentError(
          absl::StrCat("--devices: \"", part,
                       "\" is not a CUDA device index of this machine (0 to ", visible - 1, ")"));
    }
    if (!seen.insert(index).second) {
      return absl::InvalidArgumentError(absl::StrCat("--devices: ", index, " is listed twice"));
    }
    offered.push_back(absl::StrCat("cuda:", index));
  }
  if (offered.size() > kMaxWorkerGpus) {
    return absl::InvalidArgumentError(
        absl::StrCat("--devices: at most ", kMaxWorkerGpus, " devices"));
  }
  return offered;
}

std::vector<std::string> StartingAt(std::vector<std::string> offered, uint32_t first) {
  if (offered.empty()) return offered;
  std::rotate(offered.begin(), offered.begin() + first % offered.size(), offered.end());
  return offered;
}

std::vector<size_t> PickDevices(size_t offered, const std::vector<size_t>& held, uint32_t count) {
  std::vector<size_t> picked;
  for (size_t slot = 0; slot < offered && picked.size() < count; ++slot) {
    if (std::find(held.begin(), held.end(), slot) == held.end()) picked.push_back(slot);
  }
  return picked;
}

namespace {
std::vector<size_t>& ThreadSlots() {
  thread_local std::vector<size_t> slots;
  return slots;
}
}  // namespace

const std::vector<size_t>& TaskDeviceSlots() { return ThreadSlots(); }

void SetTaskDeviceSlots(std::vector<size_t> slots) { ThreadSlots() = std::move(slots); }

}  // namespace memaudit::worker
