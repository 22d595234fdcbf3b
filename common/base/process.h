// Process plumbing shared by the service mains, the CLI's embedded mode and
// the integration tests: child processes, port files and shutdown signals.
#ifndef MEMAUDIT_COMMON_BASE_PROCESS_H_
#define MEMAUDIT_COMMON_BASE_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace memaudit {

// A child process. The destructor stops it (SIGTERM, then SIGKILL).
//
// Every wait blocks in the kernel until the child exits (poll on a pidfd,
// Linux 5.3 and later): a stop returns the moment the child is gone, with no
// polling interval. Where pidfd_open is refused (an older kernel, a seccomp
// profile), waits fall back to checking every few milliseconds.
class Subprocess {
 public:
  // Starts argv[0] with stdout and stderr appended to `log_path` (empty =
  // inherit the parent's).
  static absl::StatusOr<std::unique_ptr<Subprocess>> Spawn(const std::vector<std::string>& argv,
                                                           const std::string& log_path);
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  void Signal(int signal);
  // Waits for exit; returns the exit code, or 128 + signal when killed.
  int Wait();
  // Polls without blocking; true once the process has exited.
  bool Exited();
  // Blocks until the process exits or `timeout_ms` passes; true once it has
  // exited (and is reaped).
  bool WaitFor(int timeout_ms);
  // SIGTERM, wait up to `grace_ms`, then SIGKILL. Returns the exit code.
  int Stop(int grace_ms = 5000);
  // Stop for several processes at once: SIGTERM to each first, then one
  // grace period of `grace_ms` for all of them together (each that outlives
  // it gets SIGKILL), so stopping n processes takes as long as the slowest,
  // not the sum. Null entries are skipped.
  static void StopAll(const std::vector<Subprocess*>& processes, int grace_ms = 5000);

  // Readable (POLLIN) once the process has exited; -1 without a pidfd.
  int exit_fd() const { return pidfd_; }

 private:
  Subprocess(pid_t pid, int pidfd) : pid_(pid), pidfd_(pidfd) {}
  pid_t pid_;
  int pidfd_;  // -1: pidfd_open was refused
  bool reaped_ = false;
  int exit_code_ = 0;
};

// Writes `port` to `path` atomically (temp file + rename) so a reader never
// sees a partial number.
absl::Status WritePortFile(const std::string& path, int port);

// Waits until `path` holds a port number; fails early (UNAVAILABLE) when
// `process` exits, and with CANCELLED once `interrupt_fd` (-1: none) polls
// readable, e.g. ShutdownSignalFd(). Sleeps in the kernel until the file's
// directory changes (inotify: the rename WritePortFile ends with), the
// process exits or the interrupt comes, so it returns as soon as the port is
// written; without inotify it checks every 20 ms.
absl::StatusOr<int> WaitForPortFile(const std::string& path, int timeout_ms,
                                    Subprocess* process = nullptr, int interrupt_fd = -1);

// Blocks SIGTERM and SIGINT in this thread and every thread created after;
// call first thing in main(). WaitForShutdownSignal() then returns the signal.
void BlockShutdownSignals();
int WaitForShutdownSignal();
// A descriptor (signalfd) that polls readable while SIGTERM or SIGINT is
// pending, for a wait that must end on a shutdown signal (WaitForPortFile's
// interrupt_fd); the signal stays pending for WaitForShutdownSignal. Needs
// BlockShutdownSignals first; -1 if the kernel refuses. Close it when done.
int ShutdownSignalFd();

// The directory holding the running executable (to find sibling binaries).
std::string ExecutableDir();

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_BASE_PROCESS_H_
