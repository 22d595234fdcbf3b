// memaudit-coordinator: plans audits, leases tasks to workers, streams progress.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "common/base/clock.h"
#include "common/base/process.h"
#include "common/base/status_macros.h"
#include "common/messages/data_roots.h"
#include "common/rpc/serving.h"
#include "common/security/capability.h"
#include "services/coordinator/audit_service.h"
#include "services/coordinator/quotas.h"
#include "services/coordinator/scheduler.h"
#include "services/coordinator/sqlite_store.h"
#include "services/coordinator/worker_service.h"

namespace {

// --quotas: the per-team limits Submit enforces (services/coordinator/quotas.h).
void AddQuotasFlag(CLI::App* app, std::string* path) {
  app->add_option("--quotas", *path,
                  "YAML file of per-team limits (max_concurrent_audits, max_queued_tasks, "
                  "max_models_per_audit, max_spec_bytes) under `default:` and `teams:`; "
                  "Submit refuses past them with RESOURCE_EXHAUSTED (default: no limits)");
}

// Reads --quotas into `options` (nothing to read: no limits); false, with the
// file's problem logged, when it cannot be used.
bool LoadQuotas(const std::string& path, memaudit::coordinator::SchedulerOptions* options) {
  if (path.empty()) return true;
  absl::StatusOr<memaudit::coordinator::QuotaConfig> quotas =
      memaudit::coordinator::LoadQuotaFile(path);
  if (!quotas.ok()) {
    spdlog::critical("--quotas: {}", std::string(quotas.status().message()));
    return false;
  }
  spdlog::info("quotas from {}: defaults and {} team(s)", path, quotas->teams.size());
  options->quotas = *std::move(quotas);
  return true;
}

// --scorer's host with the port `port_file` holds once the scorer writes it
// (its start overlapped ours); CANCELLED on a shutdown signal meanwhile.
absl::StatusOr<std::string> ScorerFromPortFile(const std::string& scorer,
                                               const std::string& port_file) {
  constexpr int kWaitMs = 120000;
  MEMAUDIT_ASSIGN_OR_RETURN(const auto host, memaudit::SplitHostPort(scorer));
  const int signals = memaudit::ShutdownSignalFd();
  absl::StatusOr<int> port = memaudit::WaitForPortFile(port_file, kWaitMs, nullptr, signals);
  if (signals >= 0) close(signals);
  if (!port.ok()) return port.status();
  return absl::StrCat(host.first, ":", *port);
}

// Takes back expired leases every 200 ms until SIGTERM or SIGINT, then stops
// the scheduler's long-polls and watches (each answered or ended at once)
// and the server. Nothing here waits out an interval: the reaper's pause
// ends with the signal, and a server with no call left shuts down at once
// (the 2 s deadline only bounds calls that are still running then).
void ServeUntilSignal(memaudit::coordinator::Scheduler* scheduler,
                      memaudit::coordinator::WorkerPresence* presence, memaudit::Serving* serving) {
  absl::Notification stopping;
  std::thread reaper([&] {
    do {
      if (absl::Status s = scheduler->ExpireLeases(); !s.ok()) {
        spdlog::error("expiring leases: {}", s.ToString());
      }
      presence->Refresh();
    } while (!stopping.WaitForNotificationWithTimeout(absl::Milliseconds(200)));
  });
  const int signal = memaudit::WaitForShutdownSignal();
  spdlog::info("signal {}: shutting down", signal);
  stopping.Notify();
  scheduler->Shutdown();
  serving->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  reaper.join();
}

// The coordinator's own flags (AddServingFlags adds the serving ones).
struct CoordinatorFlags {
  memaudit::ServingFlags serving;
  std::string db_path = "memaudit-coordinator.db";
  memaudit::sql::OpenOptions db_options;
  std::string scorer = "127.0.0.1:7401";
  std::string scorer_port_file;
  int64_t lease_ttl_ms = 10000;
  int64_t waiting_warning_ms = 30000;
  uint32_t heartbeat_ms = 1000;
  std::vector<std::string> data_roots;
  std::string quotas_path;
  std::string capability_key_file;
};

void AddCoordinatorFlags(CLI::App* app, CoordinatorFlags* f) {
  using namespace memaudit;
  // Teams and workers send small messages only: a large one is refused as
  // it arrives, and gRPC holds little for the coordinator's calls.
  f->serving.max_receive_bytes = kSmallReceiveBytes;
  f->serving.grpc_memory_mb = 256;
  AddServingFlags(app, &f->serving, "127.0.0.1:7400", "127.0.0.1:9400");
  app->add_option("--db", f->db_path,
                  "SQLite database file: created if missing; checked (PRAGMA quick_check) at "
                  "start, and a damaged one is refused")
      ->capture_default_str();
  app->add_flag("--init", f->db_options.init_empty_file,
                "accept an existing empty (0-byte) --db file and create the database in it; "
                "without it an empty file is refused, as a truncated database looks the same");
  app->add_option("--scorer", f->scorer, "scorer gRPC address")->capture_default_str();
  app->add_option("--scorer-port-file", f->scorer_port_file,
                  "wait for this file (the scorer's --port-file) before serving and call the "
                  "port it holds on --scorer's host: how `memaudit run` starts the coordinator "
                  "while the scorer is still starting");
  app->add_option("--lease-ttl-ms", f->lease_ttl_ms,
                  "a lease not renewed for this long is taken back")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{100}, int64_t{3600000}));
  app->add_option("--waiting-warning-ms", f->waiting_warning_ms,
                  "an audit no worker has taken a task of this long after its submission gets "
                  "an audit_waiting event saying so")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{100}, int64_t{86400000}));
  app->add_option("--heartbeat-ms", f->heartbeat_ms, "heartbeat interval workers are told to use")
      ->capture_default_str()
      ->check(CLI::Range(10u, 600000u));
  app->add_option(
      "--data-root", f->data_roots,
      absl::StrCat(kDataRootFlagHelp, "; Submit refuses a spec naming a file elsewhere (default: ",
                   absl::StrJoin(kDefaultDataRoots, ", "), ", those present)"));
  AddQuotasFlag(app, &f->quotas_path);
  AddCapabilityKeyFlag(app, &f->capability_key_file);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace memaudit;
  BlockShutdownSignals();
  CLI::App app{
      "memaudit coordinator: plans audits into tasks, leases them to workers, "
      "re-queues tasks whose lease expires, and streams progress to clients."};
  CoordinatorFlags flags;
  AddCoordinatorFlags(&app, &flags);
  CLI11_PARSE(app, argc, argv);
  InitLogging("coordinator");
  coordinator::SchedulerOptions options;
  if (!LoadQuotas(flags.quotas_path, &options)) return 1;
  absl::StatusOr<DataRoots> data_roots = DataRoots::FromFlag(flags.data_roots);
  if (!data_roots.ok()) {
    spdlog::critical("--data-root: {}", std::string(data_roots.status().message()));
    return 1;
  }
  spdlog::info("data roots: {}", DescribeDataRoots(*data_roots));

  auto store = coordinator::SqliteStore::Open(flags.db_path, flags.db_options);
  if (!store.ok()) {
    spdlog::critical("{}", store.status().ToString());
    return 1;
  }
  prometheus::Registry registry;
  options.lease_ttl_ms = flags.lease_ttl_ms;
  options.waiting_warning_ms = flags.waiting_warning_ms;
  auto scheduler =
      coordinator::Scheduler::Create(store->get(), RealClock::Get(), options, &registry);
  if (!scheduler.ok()) {
    spdlog::critical("{}", scheduler.status().ToString());
    return 1;
  }
  auto auth = MakeAuthenticator(flags.serving);
  if (!auth.ok()) {
    spdlog::critical("{}", auth.status().ToString());
    return 1;
  }
  auto capability_key = LoadCapabilityKey(flags.capability_key_file, flags.serving.tls);
  if (!capability_key.ok()) {
    spdlog::critical("{}", capability_key.status().ToString());
    return 1;
  }
  if (!flags.scorer_port_file.empty()) {
    absl::StatusOr<std::string> address = ScorerFromPortFile(flags.scorer, flags.scorer_port_file);
    if (!address.ok()) {
      if (address.status().code() == absl::StatusCode::kCancelled) {
        spdlog::info("signal before the scorer was up: exiting");
        return 0;
      }
      spdlog::critical("--scorer-port-file: {}", address.status().ToString());
      return 1;
    }
    flags.scorer = *std::move(address);
  }
  // The coordinator's own certificate is its identity at the scorer.
  auto channel = MakeChannel(flags.scorer, ClientCredentials{flags.serving.tls, ""});
  if (!channel.ok()) {
    spdlog::critical("{}", channel.status().ToString());
    return 1;
  }
  auto revoked = coordinator::RevokedWorkers::Load(store->get());
  if (!revoked.ok()) {
    spdlog::critical("{}", revoked.status().ToString());
    return 1;
  }
  coordinator::AuditServiceImpl audit_service(
      auth->get(), scheduler->get(), v1::ScorerService::NewStub(*channel), *std::move(data_roots),
      *capability_key, revoked->get());
  // A worker silent for a lease TTL has lost its lease: count it gone too.
  coordinator::WorkerPresence presence(RealClock::Get(), flags.lease_ttl_ms, &registry);
  coordinator::WorkerServiceImpl worker_service(
      auth->get(), scheduler->get(), flags.scorer, flags.heartbeat_ms,
      static_cast<uint32_t>(flags.lease_ttl_ms), *std::move(capability_key),
      v1::ScorerService::NewStub(*channel), &presence, revoked->get());
  auto serving = StartServing(
      flags.serving, {&audit_service, &worker_service}, &registry,
      std::make_shared<CallGate>(auth->get(), coordinator::CoordinatorCallPolicy(), &registry));
  if (!serving.ok()) {
    spdlog::critical("{}", serving.status().ToString());
    return 1;
  }
  spdlog::info("serving on port {} (metrics on {}), database {}, scorer {}", serving->port,
               serving->metrics->port(), flags.db_path, flags.scorer);

  ServeUntilSignal(scheduler->get(), &presence, &*serving);
  // No call is left: close the scheduler and its database, then exit.
  *scheduler = nullptr;
  *store = nullptr;
  ExitServed(0);
}
