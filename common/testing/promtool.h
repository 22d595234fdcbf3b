// `promtool check metrics` on an exposition, for the tests that lint what a
// registry serves (Debian's `prometheus` package ships promtool).
#ifndef MEMAUDIT_COMMON_TESTING_PROMTOOL_H_
#define MEMAUDIT_COMMON_TESTING_PROMTOOL_H_

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <optional>
#include <string>

namespace memaudit::testing {

inline constexpr char kPromtoolPath[] = "/usr/bin/promtool";

struct PromtoolCheck {
  int status = -1;     // promtool's exit status (pclose's)
  std::string output;  // what it printed: problems, one per line
};

// Lints `exposition`; nullopt when promtool is not installed or the
// exposition could not be handed to it.
inline std::optional<PromtoolCheck> CheckMetricsWithPromtool(const std::string& exposition) {
  if (access(kPromtoolPath, X_OK) != 0) return std::nullopt;
  char path[] = "/tmp/memaudit_promtool_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return std::nullopt;
  close(fd);
  { std::ofstream(path) << exposition; }
  const std::string command = std::string(kPromtoolPath) + " check metrics < " + path + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    unlink(path);
    return std::nullopt;
  }
  PromtoolCheck check;
  char buffer[512];
  while (fgets(buffer, sizeof(buffer), pipe) != nullptr) check.output += buffer;
  check.status = pclose(pipe);
  unlink(path);
  return check;
}

}  // namespace memaudit::testing

#endif  // MEMAUDIT_COMMON_TESTING_PROMTOOL_H_
