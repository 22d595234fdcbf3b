#include "services/worker/machine.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"

namespace memaudit::worker {
namespace {

constexpr uint64_t kMb = 1024 * 1024;

std::string FirstLine(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

uint64_t LowerMemoryMb(uint64_t physical_bytes, const std::string& cgroup_limit) {
  uint64_t bytes = physical_bytes;
  uint64_t limit = 0;
  // v1 reports "no limit" as a huge number; min() takes care of it.
  if (absl::SimpleAtoi(absl::StripAsciiWhitespace(cgroup_limit), &limit) && limit > 0) {
    bytes = std::min(bytes, limit);
  }
  return bytes / kMb;
}

uint64_t UsableMemoryMb() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  const uint64_t physical = pages > 0 && page_size > 0
                                ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size)
                                : 0;
  std::string limit = FirstLine("/sys/fs/cgroup/memory.max");
  if (limit.empty()) limit = FirstLine("/sys/fs/cgroup/memory/memory.limit_in_bytes");
  return LowerMemoryMb(physical, limit);
}

}  // namespace memaudit::worker
