// memaudit-worker: leases tasks from a coordinator and trains them.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/process.h"
#include "common/base/status_macros.h"
#include "common/messages/data_roots.h"
#include "common/messages/task_fit.h"
#include "common/rpc/serving.h"
#include "common/security/tls.h"
#include "common/training/device_name.h"
#include "common/training/numerics.h"
#include "engine/collective_environment.h"
#include "services/worker/device_pool.h"
#include "services/worker/engine_access.h"
#include "services/worker/machine.h"
#include "services/worker/worker_loop.h"

namespace {

using namespace memaudit;

// How long --coordinator-port-file is waited for.
constexpr int kCoordinatorPortFileWaitMs = 120000;

// The command line, before it is checked and turned into WorkerOptions.
struct WorkerFlags {
  worker::WorkerOptions options;
  std::string coordinator_port_file;
  int exit_when_idle_s = 0;
  std::string device = "cpu";
  std::string devices;
  uint32_t first_device = 0;
  std::string matmul_precision = "fp32";
  std::string numerics = kPortableNumerics;
  std::string metrics_listen;
  std::string metrics_port_file;
  std::string token_file;
  std::vector<std::string> data_roots;
};

void AddWorkerFlags(CLI::App* app, WorkerFlags* flags) {
  worker::WorkerOptions& options = flags->options;
  options.coordinator = "127.0.0.1:7400";
  app->add_option("--coordinator", options.coordinator, "coordinator gRPC address")
      ->capture_default_str();
  app->add_option("--coordinator-port-file", flags->coordinator_port_file,
                  "wait for this file (the coordinator's --port-file) and talk to the port it "
                  "holds on --coordinator's host: how `memaudit run` starts workers while the "
                  "coordinator is still starting");
  app->add_option("--threads", options.threads,
                  "compute threads this worker offers; it runs as many tasks at once as their "
                  "resources.threads_per_task fit in these")
      ->capture_default_str()
      ->check(CLI::Range(1u, kMaxWorkerThreads));
  options.memory_mb = worker::UsableMemoryMb();
  app->add_option("--memory-mb", options.memory_mb,
                  "host memory this worker offers, in MiB; a task stating "
                  "resources.memory_mb_per_task runs only within it (default: physical memory "
                  "or the container's limit, the lower)")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, kMaxWorkerMemoryMb));
  app->add_option("--exit-when-idle", flags->exit_when_idle_s,
                  "exit 0 once no task has run or been offered for this many seconds (a batch "
                  "Job's worker); 0: never")
      ->capture_default_str()
      ->check(CLI::Range(0, 7 * 24 * 3600));
  app->add_option("--max-tasks", options.max_tasks,
                  "lease at most this many tasks, then exit 0 once they end; 0: no limit")
      ->capture_default_str();
  app->add_option("--lease-wait-ms", options.lease_wait_ms,
                  "how long one Lease long-poll waits for a task (the coordinator caps it at "
                  "30000); SIGTERM ends a waiting one at once")
      ->capture_default_str()
      ->check(CLI::Range(1u, 30000u));
  app->add_option("--device", flags->device,
                  "where tasks train: cpu, cuda, cuda:N, or auto (CUDA when present)")
      ->capture_default_str();
  app->add_option("--devices", flags->devices,
                  "with --device cuda: the CUDA devices to offer, as indices (e.g. 0,1); default "
                  "every visible device. One task trains on each free device at once (give "
                  "--threads at least as many)");
  app->add_option("--first-device", flags->first_device,
                  "with --device cuda: the offered device (its position in what the worker offers, "
                  "modulo their count) to fill first; memaudit run gives each of its workers its "
                  "own, so that they start on different GPUs")
      ->capture_default_str();
  app->add_option("--matmul-precision", flags->matmul_precision,
                  "how CUDA runs float32 products: fp32 (exact), tf32 (TensorFloat-32 tensor "
                  "cores) or bf16 (fully connected layers on bfloat16 inputs); tf32 and bf16 "
                  "change results and need a CUDA --device (docs/engine.md)")
      ->capture_default_str();
  app->add_option("--numerics", flags->numerics,
                  "how CPU tasks compute: portable (LibTorch, oneDNN and OpenBLAS pinned to their "
                  "AVX2 kernels: the same bits on every x86-64 CPU with AVX2 and FMA) or native "
                  "(the machine's fastest kernels; takes only audits with resources.numerics: "
                  "native, whose numbers may differ between CPU types; docs/engine.md)")
      ->capture_default_str()
      ->check(CLI::IsMember({std::string(kPortableNumerics), std::string(kNativeNumerics)}));
  AddMetricsFlags(app, &flags->metrics_listen, &flags->metrics_port_file, "127.0.0.1:9402");
  AddClientCredentialFlags(app, &options.credentials, &flags->token_file);
  app->add_option(
      "--data-root", flags->data_roots,
      absl::StrCat(kDataRootFlagHelp, "; a task whose spec names a file elsewhere fails (default: ",
                   absl::StrJoin(kDefaultDataRoots, ", "), ", those present)"));
}

// Checks the flags that need more than a range and completes the options:
// data roots, the training device, the token and TLS files.
absl::Status ApplyFlags(WorkerFlags* flags) {
  worker::WorkerOptions& options = flags->options;
  absl::StatusOr<DataRoots> data_roots = DataRoots::FromFlag(flags->data_roots);
  if (!data_roots.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--data-root: ", data_roots.status().message()));
  }
  options.data_roots = *std::move(data_roots);
  spdlog::info("data roots: {}", DescribeDataRoots(options.data_roots));
  // Before anything loads LibTorch, oneDNN or OpenBLAS: they read it once.
  MEMAUDIT_ASSIGN_OR_RETURN(const NumericsMode numerics, ParseNumericsMode(flags->numerics));
  MEMAUDIT_RETURN_IF_ERROR(PinNumerics(numerics));
  options.numeric_class = LocalNumericClass(numerics);
  spdlog::info("numerics: {} (class {})", flags->numerics, options.numeric_class);
  // Every task this process runs trains there (engine runs name no device).
  MEMAUDIT_RETURN_IF_ERROR(CheckDeviceName(flags->device));
  MEMAUDIT_RETURN_IF_ERROR(CheckMatmulPrecision(flags->matmul_precision, flags->device));
  std::string chosen = "cpu";  // the engine's default, with fp32 products
  if (flags->device != "cpu") {
    // Only LibTorch can tell whether the device is there: load the engine now.
    absl::StatusOr<std::string> device = worker::Engine().set_default_device(flags->device);
    if (!device.ok()) return device.status();
    chosen = *device;
    MEMAUDIT_RETURN_IF_ERROR(worker::Engine().set_matmul_precision(flags->matmul_precision));
  }
  // A CUDA worker offers its devices, one GPU each, and takes GPU tasks only.
  MEMAUDIT_ASSIGN_OR_RETURN(
      std::vector<std::string> offered,
      worker::OfferedDevices(chosen, flags->devices,
                             chosen == "cpu" ? 0 : worker::Engine().cuda_device_count()));
  options.devices = worker::StartingAt(std::move(offered), flags->first_device);
  options.gpus = static_cast<uint32_t>(options.devices.size());
  if (chosen != "cpu" && options.gpus == 0) {
    return absl::FailedPreconditionError("--device: CUDA reports no device to offer");
  }
  spdlog::info(
      "training on {}{}, {} products", chosen,
      options.devices.empty() ? "" : absl::StrCat(" (", absl::StrJoin(options.devices, ", "), ")"),
      flags->matmul_precision);
  if (options.gpus > options.threads) {
    spdlog::warn("--threads {} runs at most {} of the {} GPUs' tasks at once", options.threads,
                 options.threads, options.gpus);
  }
  options.exit_when_idle = absl::Seconds(flags->exit_when_idle_s);
  if (absl::Status s = LoadClientToken(flags->token_file, &options.credentials); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckTlsFlags(options.credentials.tls, /*server=*/false); !s.ok()) {
    return s;
  }
  if (options.credentials.tls.insecure) {
    spdlog::warn("INSECURE: talking plain text to the coordinator and scorer (--insecure)");
  }
  return absl::OkStatus();
}

// With --coordinator-port-file: waits for the coordinator's port and points
// options->coordinator at it. kCancelled: a shutdown signal came first.
absl::Status ResolveCoordinatorPort(const std::string& port_file, worker::WorkerOptions* options) {
  if (port_file.empty()) return absl::OkStatus();
  const int signals = ShutdownSignalFd();
  absl::StatusOr<int> port =
      WaitForPortFile(port_file, kCoordinatorPortFileWaitMs, nullptr, signals);
  if (signals >= 0) close(signals);
  if (port.status().code() == absl::StatusCode::kCancelled) return port.status();
  absl::StatusOr<std::pair<std::string, int>> host = SplitHostPort(options->coordinator);
  if (!port.ok() || !host.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--coordinator-port-file: ", (port.ok() ? host.status() : port.status()).ToString()));
  }
  options->coordinator = absl::StrCat(host->first, ":", *port);
  spdlog::info("coordinator at {} (from {})", options->coordinator, port_file);
  return absl::OkStatus();
}

// Runs the loop until it ends on its own (--exit-when-idle, --max-tasks) or a
// shutdown signal stops it, then exits the process.
[[noreturn]] void RunUntilDone(const worker::WorkerOptions& options,
                               prometheus::Registry* registry) {
  worker::WorkerLoop loop(options, registry);
  // Detached: the process exits below with the watcher still in sigwait when
  // Run ends on its own; this frame never returns, so a late Stop is safe.
  std::thread([&loop] {
    const int signal = WaitForShutdownSignal();
    spdlog::info("signal {}: shutting down", signal);
    loop.Stop();
  }).detach();
  const absl::Status result = loop.Run();
  if (!result.ok()) spdlog::critical("{}", result.ToString());
  // Every task is released or reported and nothing is left to write, so the
  // exit skips the static destructors: LibTorch's alone (deregistering every
  // operator kernel) cost about 60 ms of CPU at each exit, for nothing.
  spdlog::shutdown();
  std::fflush(nullptr);
  std::_Exit(result.ok() ? 0 : 1);
}

}  // namespace

int main(int argc, char** argv) {
  // Before any thread: the engine's data-parallel CUDA ranks read it.
  engine::SetCollectiveEnvironmentDefaults();
  BlockShutdownSignals();
  CLI::App app{
      "memaudit worker: leases training tasks from a coordinator, trains them with "
      "LibTorch and streams per-example signals to the scorer."};
  WorkerFlags flags;
  AddWorkerFlags(&app, &flags);
  CLI11_PARSE(app, argc, argv);
  InitLogging("worker");
  // Found now, loaded as the first task starts (engine_access.h).
  if (absl::Status s = worker::SetEngineModule(worker::EngineModulePaths()); !s.ok()) {
    spdlog::critical("{}", s.ToString());
    return 1;
  }
  if (absl::Status s = ApplyFlags(&flags); !s.ok()) {
    spdlog::critical("{}", s.ToString());
    return 1;
  }
  // The worker serves no RPCs; Prometheus scrapes it like the servers.
  prometheus::Registry registry;
  auto metrics_server =
      StartMetricsServing(flags.metrics_listen, flags.metrics_port_file, &registry);
  if (!metrics_server.ok()) {
    spdlog::critical("{}", metrics_server.status().ToString());
    return 1;
  }
  spdlog::info("metrics on port {}", (*metrics_server)->port());
  absl::Status port = ResolveCoordinatorPort(flags.coordinator_port_file, &flags.options);
  if (port.code() == absl::StatusCode::kCancelled) {
    spdlog::info("signal before the coordinator was up: exiting");
    return 0;
  }
  if (!port.ok()) {
    spdlog::critical("{}", port.ToString());
    return 1;
  }
  RunUntilDone(flags.options, &registry);
}
