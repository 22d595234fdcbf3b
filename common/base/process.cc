#include "common/base/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>

#include "absl/strings/str_cat.h"

extern char** environ;

namespace memaudit {
namespace {

using SteadyClock = std::chrono::steady_clock;

// Without a pidfd (or inotify), how often a wait looks again.
constexpr int kFallbackExitCheckMs = 5;
constexpr int kFallbackPortFileCheckMs = 20;

// A descriptor that polls readable once `pid` (our child) exits; -1 where
// the kernel or a seccomp profile refuses pidfd_open.
int OpenPidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  const long fd = syscall(SYS_pidfd_open, pid, 0);  // close-on-exec by default
  return fd >= 0 ? static_cast<int>(fd) : -1;
#else
  (void)pid;
  return -1;
#endif
}

// poll()'s timeout for `deadline`: the milliseconds left, rounded up, 0 once
// it has passed.
int MillisUntil(SteadyClock::time_point deadline) {
  const auto left = deadline - SteadyClock::now();
  if (left <= SteadyClock::duration::zero()) return 0;
  const int64_t ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return static_cast<int>(std::min<int64_t>(ms, INT_MAX));
}

SteadyClock::time_point DeadlineIn(int ms) {
  return SteadyClock::now() + std::chrono::milliseconds(std::max(ms, 0));
}

int DecodeWaitStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Subprocess>> Subprocess::Spawn(const std::vector<std::string>& argv,
                                                              const std::string& log_path) {
  if (argv.empty()) return absl::InvalidArgumentError("argv: must name a program");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!log_path.empty()) {
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  }
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  // Children must not inherit the parent's blocked shutdown signals.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty;
  sigemptyset(&empty);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);

  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0].c_str(), &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return absl::UnavailableError(absl::StrCat("cannot start ", argv[0], ": ", strerror(rc)));
  }
  // Opened before anyone can reap the child, so it names this process.
  return std::unique_ptr<Subprocess>(new Subprocess(pid, OpenPidfd(pid)));
}

Subprocess::~Subprocess() {
  if (!reaped_) Stop(2000);
  if (pidfd_ >= 0) close(pidfd_);
}

void Subprocess::Signal(int signal) {
  if (!reaped_) kill(pid_, signal);
}

int Subprocess::Wait() {
  if (reaped_) return exit_code_;
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  exit_code_ = DecodeWaitStatus(status);
  return exit_code_;
}

bool Subprocess::Exited() {
  if (reaped_) return true;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) {
    reaped_ = true;
    exit_code_ = DecodeWaitStatus(status);
  }
  return reaped_;
}

bool Subprocess::WaitFor(int timeout_ms) {
  const auto deadline = DeadlineIn(timeout_ms);
  while (!Exited()) {
    const int left = MillisUntil(deadline);
    if (left == 0) return false;
    if (pidfd_ >= 0) {
      // Readable once the child exits; EINTR just looks again.
      pollfd exited{pidfd_, POLLIN, 0};
      poll(&exited, 1, left);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(left, kFallbackExitCheckMs)));
    }
  }
  return true;
}

int Subprocess::Stop(int grace_ms) {
  if (Exited()) return exit_code_;
  Signal(SIGTERM);
  if (!WaitFor(grace_ms)) Signal(SIGKILL);
  return Wait();
}

void Subprocess::StopAll(const std::vector<Subprocess*>& processes, int grace_ms) {
  for (Subprocess* p : processes) {
    if (p != nullptr && !p->Exited()) p->Signal(SIGTERM);
  }
  const auto deadline = DeadlineIn(grace_ms);
  for (Subprocess* p : processes) {
    if (p != nullptr && !p->WaitFor(MillisUntil(deadline))) p->Signal(SIGKILL);
  }
  for (Subprocess* p : processes) {
    if (p != nullptr) p->Wait();
  }
}

absl::Status WritePortFile(const std::string& path, int port) {
  const std::string temp = path + ".tmp";
  {
    std::ofstream out(temp, std::ios::trunc);
    out << port << "\n";
    if (!out) return absl::InternalError(absl::StrCat("cannot write ", temp));
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("cannot rename ", temp, " to ", path));
  }
  return absl::OkStatus();
}

namespace {

// The port number `path` holds; 0 while it holds none.
int ReadPort(const std::string& path) {
  std::ifstream in(path);
  int port = 0;
  return in >> port && port > 0 ? port : 0;
}

// An inotify descriptor that polls readable when a file is written or
// renamed into the directory of `path`; closed with the object. fd() is -1
// where inotify is unavailable (the directory is missing, the limit of
// watches is reached).
class DirectoryWatch {
 public:
  explicit DirectoryWatch(const std::string& path) {
    const size_t slash = path.find_last_of('/');
    const std::string dir =
        slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
    fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd_ >= 0 && inotify_add_watch(fd_, dir.c_str(), IN_MOVED_TO | IN_CLOSE_WRITE) < 0) {
      close(fd_);
      fd_ = -1;
    }
  }
  ~DirectoryWatch() {
    if (fd_ >= 0) close(fd_);
  }
  DirectoryWatch(const DirectoryWatch&) = delete;
  DirectoryWatch& operator=(const DirectoryWatch&) = delete;

  int fd() const { return fd_; }
  // Reads the events that woke a poll (which file changed does not matter).
  void Drain() {
    alignas(inotify_event) char buffer[4096];
    while (fd_ >= 0 && read(fd_, buffer, sizeof(buffer)) > 0) {
    }
  }

 private:
  int fd_ = -1;
};

}  // namespace

absl::StatusOr<int> WaitForPortFile(const std::string& path, int timeout_ms, Subprocess* process,
                                    int interrupt_fd) {
  const auto deadline = DeadlineIn(timeout_ms);
  // Watching before the first look: a port written between the two still
  // wakes the poll.
  DirectoryWatch watch(path);
  while (true) {
    if (const int port = ReadPort(path); port > 0) return port;
    if (process != nullptr && process->Exited()) {
      return absl::UnavailableError(
          absl::StrCat("process ", process->pid(), " exited before writing ", path));
    }
    const int left = MillisUntil(deadline);
    if (left == 0) break;
    pollfd fds[3];
    nfds_t n = 0;
    if (interrupt_fd >= 0) fds[n++] = pollfd{interrupt_fd, POLLIN, 0};
    if (watch.fd() >= 0) fds[n++] = pollfd{watch.fd(), POLLIN, 0};
    if (process != nullptr && process->exit_fd() >= 0) {
      fds[n++] = pollfd{process->exit_fd(), POLLIN, 0};
    }
    // EINTR or a wake-up for another file: look again.
    poll(fds, n, watch.fd() >= 0 ? left : std::min(left, kFallbackPortFileCheckMs));
    if (interrupt_fd >= 0 && (fds[0].revents & POLLIN) != 0) {
      return absl::CancelledError(absl::StrCat("interrupted waiting for ", path));
    }
    watch.Drain();
  }
  return absl::DeadlineExceededError(absl::StrCat("timed out waiting for ", path));
}

void BlockShutdownSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int WaitForShutdownSignal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  int signal = 0;
  sigwait(&set, &signal);
  return signal;
}

int ShutdownSignalFd() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

std::string ExecutableDir() {
  char buffer[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (n <= 0) return ".";
  std::string path(buffer, n);
  return path.substr(0, path.find_last_of('/'));
}

}  // namespace memaudit
