// memaudit-worker: leases tasks from a coordinator and trains them.
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/data_roots.h"
#include "common/process.h"
#include "common/serving.h"
#include "common/task_fit.h"
#include "common/tls.h"
#include "engine/device.h"
#include "services/worker/machine.h"
#include "services/worker/worker_loop.h"

namespace {

// How long --coordinator-port-file is waited for.
constexpr int kCoordinatorPortFileWaitMs = 120000;

}  // namespace

int main(int argc, char** argv) {
  using namespace memaudit;
  BlockShutdownSignals();
  CLI::App app{
      "memaudit worker: leases training tasks from a coordinator, trains them with "
      "LibTorch and streams per-example signals to the scorer."};
  worker::WorkerOptions options;
  options.coordinator = "127.0.0.1:7400";
  app.add_option("--coordinator", options.coordinator, "coordinator gRPC address")
      ->capture_default_str();
  std::string coordinator_port_file;
  app.add_option("--coordinator-port-file", coordinator_port_file,
                 "wait for this file (the coordinator's --port-file) and talk to the port it "
                 "holds on --coordinator's host: how `memaudit run` starts workers while the "
                 "coordinator is still starting");
  app.add_option("--threads", options.threads,
                 "compute threads this worker offers; it runs as many tasks at once as their "
                 "resources.threads_per_task fit in these")
      ->capture_default_str()
      ->check(CLI::Range(1u, kMaxWorkerThreads));
  options.memory_mb = worker::UsableMemoryMb();
  app.add_option("--memory-mb", options.memory_mb,
                 "host memory this worker offers, in MiB; a task stating "
                 "resources.memory_mb_per_task runs only within it (default: physical memory or "
                 "the container's limit, the lower)")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, kMaxWorkerMemoryMb));
  int exit_when_idle_s = 0;
  app.add_option("--exit-when-idle", exit_when_idle_s,
                 "exit 0 once no task has run or been offered for this many seconds (a batch "
                 "Job's worker); 0: never")
      ->capture_default_str()
      ->check(CLI::Range(0, 7 * 24 * 3600));
  app.add_option("--max-tasks", options.max_tasks,
                 "lease at most this many tasks, then exit 0 once they end; 0: no limit")
      ->capture_default_str();
  app.add_option("--lease-wait-ms", options.lease_wait_ms,
                 "how long one Lease long-poll waits for a task (the coordinator caps it at "
                 "30000); SIGTERM ends a waiting one at once")
      ->capture_default_str()
      ->check(CLI::Range(1u, 30000u));
  std::string device = "cpu";
  app.add_option("--device", device,
                 "where tasks train: cpu, cuda, cuda:N, or auto (CUDA when present)")
      ->capture_default_str();
  std::string metrics_listen;
  std::string metrics_port_file;
  AddMetricsFlags(&app, &metrics_listen, &metrics_port_file, "127.0.0.1:9402");
  std::string token_file;
  AddClientCredentialFlags(&app, &options.credentials, &token_file);
  std::vector<std::string> data_root_flags;
  app.add_option(
      "--data-root", data_root_flags,
      absl::StrCat(kDataRootFlagHelp, "; a task whose spec names a file elsewhere fails (default: ",
                   absl::StrJoin(kDefaultDataRoots, ", "), ", those present)"));
  CLI11_PARSE(app, argc, argv);
  InitLogging("worker");
  absl::StatusOr<DataRoots> data_roots = DataRoots::FromFlag(data_root_flags);
  if (!data_roots.ok()) {
    spdlog::critical("--data-root: {}", std::string(data_roots.status().message()));
    return 1;
  }
  options.data_roots = *std::move(data_roots);
  spdlog::info("data roots: {}", DescribeDataRoots(options.data_roots));
  // Every task this process runs trains there (engine runs name no device).
  absl::StatusOr<std::string> chosen = engine::SetDefaultDevice(device);
  if (!chosen.ok()) {
    spdlog::critical("{}", std::string(chosen.status().message()));
    return 1;
  }
  spdlog::info("training on {}", *chosen);
  // One device per process: a CUDA worker offers one GPU and takes GPU tasks only.
  options.gpus = chosen->rfind("cuda", 0) == 0 ? 1 : 0;
  options.exit_when_idle = absl::Seconds(exit_when_idle_s);
  if (absl::Status s = LoadClientToken(token_file, &options.credentials); !s.ok()) {
    spdlog::critical("{}", s.ToString());
    return 1;
  }
  if (absl::Status s = CheckTlsFlags(options.credentials.tls, /*server=*/false); !s.ok()) {
    spdlog::critical("{}", s.ToString());
    return 1;
  }
  if (options.credentials.tls.insecure) {
    spdlog::warn("INSECURE: talking plain text to the coordinator and scorer (--insecure)");
  }

  // The worker serves no RPCs; Prometheus scrapes it like the servers.
  prometheus::Registry registry;
  auto metrics_server = StartMetricsServing(metrics_listen, metrics_port_file, &registry);
  if (!metrics_server.ok()) {
    spdlog::critical("{}", metrics_server.status().ToString());
    return 1;
  }
  spdlog::info("metrics on port {}", (*metrics_server)->port());
  if (!coordinator_port_file.empty()) {
    // Everything above (LibTorch's loading above all) overlapped the
    // coordinator's start; a shutdown signal meanwhile ends the wait.
    const int signals = ShutdownSignalFd();
    absl::StatusOr<int> port =
        WaitForPortFile(coordinator_port_file, kCoordinatorPortFileWaitMs, nullptr, signals);
    if (signals >= 0) close(signals);
    if (port.status().code() == absl::StatusCode::kCancelled) {
      spdlog::info("signal before the coordinator was up: exiting");
      return 0;
    }
    absl::StatusOr<std::pair<std::string, int>> host = SplitHostPort(options.coordinator);
    if (!port.ok() || !host.ok()) {
      spdlog::critical("--coordinator-port-file: {}",
                       (port.ok() ? host.status() : port.status()).ToString());
      return 1;
    }
    options.coordinator = absl::StrCat(host->first, ":", *port);
    spdlog::info("coordinator at {} (from {})", options.coordinator, coordinator_port_file);
  }
  worker::WorkerLoop loop(options, &registry);
  absl::Status result;
  std::atomic<bool> ended{false};
  std::thread runner([&] { result = loop.Run(); });
  std::thread watcher([&] {
    const int signal = WaitForShutdownSignal();
    if (ended) return;  // woken below: Run ended on its own
    spdlog::info("signal {}: shutting down", signal);
    loop.Stop();
  });
  runner.join();
  if (!result.ok()) {
    spdlog::critical("{}", result.ToString());
    std::_Exit(1);
  }
  // Run ended on its own (--exit-when-idle, --max-tasks) with the watcher
  // still in sigwait: a SIGTERM of our own, to that thread, ends its wait.
  ended = true;
  pthread_kill(watcher.native_handle(), SIGTERM);
  watcher.join();
  // Every task is released or reported and nothing is left to write, so the
  // exit skips the static destructors: LibTorch's alone (deregistering every
  // operator kernel) cost about 60 ms of CPU at each exit, for nothing.
  spdlog::shutdown();
  std::fflush(nullptr);
  std::_Exit(0);
}
