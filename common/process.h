// Process plumbing shared by the service mains, the CLI's embedded mode and
// the integration tests: child processes, port files and shutdown signals.
#ifndef MEMAUDIT_COMMON_PROCESS_H_
#define MEMAUDIT_COMMON_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace memaudit {

// A child process. The destructor stops it (SIGTERM, then SIGKILL).
class Subprocess {
 public:
  // Starts argv[0] with stdout and stderr appended to `log_path` (empty =
  // inherit the parent's).
  static absl::StatusOr<std::unique_ptr<Subprocess>> Spawn(const std::vector<std::string>& argv,
                                                           const std::string& log_path);
  ~Subprocess();

  pid_t pid() const { return pid_; }
  void Signal(int signal);
  // Waits for exit; returns the exit code, or 128 + signal when killed.
  int Wait();
  // Polls without blocking; true once the process has exited.
  bool Exited();
  // SIGTERM, wait up to `grace_ms`, then SIGKILL. Returns the exit code.
  int Stop(int grace_ms = 5000);

 private:
  explicit Subprocess(pid_t pid) : pid_(pid) {}
  pid_t pid_;
  bool reaped_ = false;
  int exit_code_ = 0;
};

// Writes `port` to `path` atomically (temp file + rename) so a reader never
// sees a partial number.
absl::Status WritePortFile(const std::string& path, int port);

// Waits until `path` holds a port number; fails early when `process` exits.
absl::StatusOr<int> WaitForPortFile(const std::string& path, int timeout_ms,
                                    Subprocess* process = nullptr);

// Blocks SIGTERM and SIGINT in this thread and every thread created after;
// call first thing in main(). WaitForShutdownSignal() then returns the signal.
void BlockShutdownSignals();
int WaitForShutdownSignal();

// The directory holding the running executable (to find sibling binaries).
std::string ExecutableDir();

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_PROCESS_H_
