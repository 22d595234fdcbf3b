#include "cli/embedded_cluster.h"

#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/base/status_macros.h"
#include "common/security/capability.h"

namespace memaudit::cli {
namespace {

constexpr int kStartTimeoutMs = 30000;
// How long a process may take to exit after SIGTERM before it gets SIGKILL.
constexpr int kStopGraceMs = 5000;

absl::Status MakeDirs(const std::string& dir) {
  std::string path;
  for (size_t i = 0; i <= dir.size(); ++i) {
    if (i == dir.size() || dir[i] == '/') {
      if (!path.empty() && mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
        return absl::PermissionDeniedError(absl::StrCat("cannot create directory ", path));
      }
    }
    if (i < dir.size()) path += dir[i];
  }
  return absl::OkStatus();
}

// `--data-root ROOT` for each of `roots`.
std::vector<std::string> DataRootArgs(const std::vector<std::string>& roots) {
  std::vector<std::string> args;
  for (const std::string& root : roots) {
    args.push_back("--data-root");
    args.push_back(root);
  }
  return args;
}

}  // namespace

std::string EmbeddedCluster::Binary(const std::string& name) const {
  return absl::StrCat(options_.bin_dir.empty() ? ExecutableDir() : options_.bin_dir, "/", name);
}

absl::StatusOr<std::unique_ptr<EmbeddedCluster>> EmbeddedCluster::Start(
    const ClusterOptions& options) {
  MEMAUDIT_RETURN_IF_ERROR(MakeDirs(options.dir));
  std::unique_ptr<EmbeddedCluster> cluster(new EmbeddedCluster(options));
  for (const char* name : {"memaudit-scorer", "memaudit-coordinator", "memaudit-worker"}) {
    if (access(cluster->Binary(name).c_str(), X_OK) != 0) {
      return absl::NotFoundError(
          absl::StrCat(cluster->Binary(name), " not found; build the project first (see README)"));
    }
  }
  MEMAUDIT_RETURN_IF_ERROR(cluster->MintCertificates());
  cluster->capability_key_file_ = options.dir + "/capability.key";
  MEMAUDIT_RETURN_IF_ERROR(CapabilityKey::WriteNew(cluster->capability_key_file_));
  // Everything at once; each process waits for the port file of the one it
  // calls. On an error the destructor stops whatever started.
  MEMAUDIT_ASSIGN_OR_RETURN(cluster->scorer_,
                            cluster->SpawnService("scorer", 0, cluster->ScorerArgs()));
  MEMAUDIT_ASSIGN_OR_RETURN(
      cluster->coordinator_,
      cluster->SpawnService("coordinator", 0, cluster->CoordinatorArgs(/*scorer_port_file=*/true)));
  for (uint32_t i = 0; i < options.workers; ++i) {
    MEMAUDIT_RETURN_IF_ERROR(cluster->AddWorker());
  }
  MEMAUDIT_ASSIGN_OR_RETURN(const Ports scorer,
                            cluster->AwaitService("scorer", cluster->scorer_.get()));
  cluster->scorer_port_ = scorer.port;
  cluster->scorer_metrics_port_ = scorer.metrics_port;
  MEMAUDIT_ASSIGN_OR_RETURN(const Ports coordinator,
                            cluster->AwaitService("coordinator", cluster->coordinator_.get()));
  cluster->coordinator_port_ = coordinator.port;
  cluster->coordinator_metrics_port_ = coordinator.metrics_port;
  return cluster;
}

EmbeddedCluster::~EmbeddedCluster() { Stop(); }

absl::Status EmbeddedCluster::MintCertificates() {
  if (options_.insecure) {
    for (ClientCredentials* c : {&client_, &admin_, &worker_}) c->tls.insecure = true;
    return absl::OkStatus();
  }
  tls_dir_ = options_.dir + "/tls";
  MEMAUDIT_RETURN_IF_ERROR(MakeDirs(tls_dir_));
  MEMAUDIT_ASSIGN_OR_RETURN(ca_, CertificateAuthority::Create("memaudit run"));
  const std::string ca_path = tls_dir_ + "/ca.crt";
  {
    std::ofstream out(ca_path);
    out << ca_->cert_pem();
    if (!out.good()) return absl::UnavailableError(absl::StrCat("cannot write ", ca_path));
  }
  // Each party's certificate: its file name, role and name.
  for (const auto& [file, role, name] :
       std::vector<std::array<std::string, 3>>{{"scorer", "scorer", "scorer"},
                                               {"coordinator", "coordinator", "coordinator"},
                                               {"client", "team", "local"},
                                               {"admin", "admin", "local-admin"},
                                               {"worker", "worker", "in-process"}}) {
    MEMAUDIT_ASSIGN_OR_RETURN(PemPair pem, ca_->Issue({role, name}));
    MEMAUDIT_RETURN_IF_ERROR(WritePemPair(tls_dir_, file, pem).status());
  }
  for (auto [credentials, file] : {std::pair{&client_, "client"}, std::pair{&admin_, "admin"},
                                   std::pair{&worker_, "worker"}}) {
    credentials->tls = TlsFlags{absl::StrCat(tls_dir_, "/", file, ".crt"),
                                absl::StrCat(tls_dir_, "/", file, ".key"), ca_path, false};
  }
  return absl::OkStatus();
}

std::vector<std::string> EmbeddedCluster::TlsArgs(const std::string& name) const {
  if (options_.insecure) return {"--insecure"};
  const std::string base = absl::StrCat(tls_dir_, "/", name);
  return {"--tls-cert",  base + ".crt", "--tls-key",
          base + ".key", "--tls-ca",    tls_dir_ + "/ca.crt"};
}

std::string EmbeddedCluster::PortFile(const std::string& name) const {
  return absl::StrCat(options_.dir, "/", name, ".port");
}

absl::StatusOr<std::unique_ptr<Subprocess>> EmbeddedCluster::SpawnService(
    const std::string& name, int port, const std::vector<std::string>& extra_args) {
  const std::string base = absl::StrCat(options_.dir, "/", name);
  const std::string port_file = PortFile(name);
  const std::string metrics_file = base + ".metrics-port";
  // A restart must not read the previous process's ports, nor may a process
  // started with a --*-port-file of this one.
  std::remove(port_file.c_str());
  std::remove(metrics_file.c_str());
  std::vector<std::string> argv = {Binary("memaudit-" + name),
                                   "--listen",
                                   absl::StrCat("127.0.0.1:", port),
                                   "--port-file",
                                   port_file,
                                   "--metrics-listen",
                                   "127.0.0.1:0",
                                   "--metrics-port-file",
                                   metrics_file,
                                   "--db",
                                   base + ".db"};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  for (std::string& arg : TlsArgs(name)) argv.push_back(std::move(arg));
  return Subprocess::Spawn(argv, base + ".log");
}

absl::StatusOr<EmbeddedCluster::Ports> EmbeddedCluster::AwaitService(const std::string& name,
                                                                     Subprocess* process) {
  const std::string base = absl::StrCat(options_.dir, "/", name);
  // The metrics port file is written first, the gRPC one once all is up.
  Ports ports;
  for (auto [file, out] : {std::pair{base + ".metrics-port", &ports.metrics_port},
                           std::pair{PortFile(name), &ports.port}}) {
    auto bound = WaitForPortFile(file, kStartTimeoutMs, process);
    if (!bound.ok()) {
      return absl::UnavailableError(
          absl::StrCat(name, " did not start: ", bound.status().message(), "; see ", base, ".log"));
    }
    *out = *bound;
  }
  return ports;
}

absl::StatusOr<ClientCredentials> EmbeddedCluster::IssueCredentials(const std::string& role,
                                                                    const std::string& name) {
  ClientCredentials credentials;
  if (options_.insecure) {
    credentials.tls.insecure = true;
    return credentials;
  }
  MEMAUDIT_ASSIGN_OR_RETURN(PemPair pem, ca_->Issue({role, name}));
  MEMAUDIT_ASSIGN_OR_RETURN(auto paths, WritePemPair(tls_dir_, absl::StrCat(role, "-", name), pem));
  credentials.tls = TlsFlags{paths.first, paths.second, tls_dir_ + "/ca.crt", false};
  return credentials;
}

std::vector<std::string> EmbeddedCluster::ScorerArgs() const {
  return {"--capability-key-file", capability_key_file_};
}

std::vector<std::string> EmbeddedCluster::CoordinatorArgs(bool scorer_port_file) const {
  std::vector<std::string> args = {"--lease-ttl-ms", absl::StrCat(options_.lease_ttl_ms),
                                   "--heartbeat-ms", absl::StrCat(options_.heartbeat_ms)};
  if (scorer_port_file) {
    for (const char* arg : {"--scorer", "127.0.0.1:0", "--scorer-port-file"}) args.push_back(arg);
    args.push_back(PortFile("scorer"));
  } else {
    args.push_back("--scorer");
    args.push_back(scorer_address());
  }
  args.push_back("--capability-key-file");
  args.push_back(capability_key_file_);
  for (std::string& arg : DataRootArgs(options_.data_roots)) args.push_back(std::move(arg));
  args.insert(args.end(), options_.coordinator_args.begin(), options_.coordinator_args.end());
  return args;
}

absl::Status EmbeddedCluster::StartScorer(int port) {
  MEMAUDIT_ASSIGN_OR_RETURN(scorer_, SpawnService("scorer", port, ScorerArgs()));
  MEMAUDIT_ASSIGN_OR_RETURN(const Ports ports, AwaitService("scorer", scorer_.get()));
  scorer_port_ = ports.port;
  scorer_metrics_port_ = ports.metrics_port;
  return absl::OkStatus();
}

absl::Status EmbeddedCluster::StartCoordinator(int port) {
  MEMAUDIT_ASSIGN_OR_RETURN(
      coordinator_, SpawnService("coordinator", port, CoordinatorArgs(/*scorer_port_file=*/false)));
  MEMAUDIT_ASSIGN_OR_RETURN(const Ports ports, AwaitService("coordinator", coordinator_.get()));
  coordinator_port_ = ports.port;
  coordinator_metrics_port_ = ports.metrics_port;
  return absl::OkStatus();
}

absl::Status EmbeddedCluster::AddWorker(const std::vector<std::string>& env) {
  const std::string name = absl::StrCat("worker-", workers_.size());
  if (!options_.insecure) {
    MEMAUDIT_ASSIGN_OR_RETURN(PemPair pem, ca_->Issue({"worker", name}));
    MEMAUDIT_RETURN_IF_ERROR(WritePemPair(tls_dir_, name, pem).status());
  }
  const std::string metrics_file = absl::StrCat(options_.dir, "/", name, ".metrics-port");
  std::remove(metrics_file.c_str());
  std::vector<std::string> argv = {Binary("memaudit-worker"),
                                   "--coordinator",
                                   coordinator_address(),
                                   "--device",
                                   options_.device,
                                   "--matmul-precision",
                                   options_.matmul_precision,
                                   "--metrics-listen",
                                   "127.0.0.1:0",
                                   "--metrics-port-file",
                                   metrics_file};
  if (options_.device == "cuda" || options_.device == "auto") {
    // Each worker offers every GPU; starting each on its own spreads the
    // first tasks over a machine's GPUs (on one GPU they share it).
    argv.push_back("--first-device");
    argv.push_back(absl::StrCat(workers_.size()));
  }
  if (coordinator_port_ == 0) {
    // Start() spawns the workers while the coordinator is still starting.
    argv.push_back("--coordinator-port-file");
    argv.push_back(PortFile("coordinator"));
  }
  for (std::string& arg : DataRootArgs(options_.data_roots)) argv.push_back(std::move(arg));
  argv.insert(argv.end(), options_.worker_args.begin(), options_.worker_args.end());
  for (std::string& arg : TlsArgs(name)) argv.push_back(std::move(arg));
  if (!env.empty()) {
    std::vector<std::string> with_env = {"/usr/bin/env"};
    with_env.insert(with_env.end(), env.begin(), env.end());
    argv.insert(argv.begin(), with_env.begin(), with_env.end());
  }
  MEMAUDIT_ASSIGN_OR_RETURN(auto process,
                            Subprocess::Spawn(argv, absl::StrCat(options_.dir, "/", name, ".log")));
  workers_.push_back(std::move(process));
  worker_metrics_files_.push_back(metrics_file);
  worker_metrics_ports_.push_back(0);
  return absl::OkStatus();
}

int EmbeddedCluster::worker_metrics_port(size_t i) {
  // Read on first use rather than in AddWorker, so adding a worker does not
  // wait for it to start (tests depend on that timing).
  if (worker_metrics_ports_[i] == 0) {
    auto bound = WaitForPortFile(worker_metrics_files_[i], kStartTimeoutMs, workers_[i].get());
    if (bound.ok()) worker_metrics_ports_[i] = *bound;
  }
  return worker_metrics_ports_[i];
}

absl::Status EmbeddedCluster::RestartScorer(int signal) {
  scorer_->Signal(signal);
  scorer_->Stop();
  return StartScorer(scorer_port_);
}

absl::Status EmbeddedCluster::RestartCoordinator(int signal) {
  coordinator_->Signal(signal);
  coordinator_->Stop();
  return StartCoordinator(coordinator_port_);
}

std::string EmbeddedCluster::coordinator_address() const {
  return absl::StrCat("127.0.0.1:", coordinator_port_);
}

std::string EmbeddedCluster::scorer_address() const {
  return absl::StrCat("127.0.0.1:", scorer_port_);
}

namespace {

// The last non-empty line of the file at `path` (its last 4 KiB), or "".
std::string LastLogLine(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  const std::streamoff size = in.tellg();
  const std::streamoff from = std::max<std::streamoff>(0, size - 4096);
  in.seekg(from);
  std::string tail(static_cast<size_t>(size - from), '\0');
  in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r')) tail.pop_back();
  const size_t start = tail.rfind('\n');
  return start == std::string::npos ? tail : tail.substr(start + 1);
}

// Blocks until `fd` (a pidfd) polls readable: its process has exited.
void AwaitExit(int fd) {
  pollfd p{fd, POLLIN, 0};
  while (poll(&p, 1, -1) < 0 && errno == EINTR) {
  }
}

}  // namespace

absl::Status EmbeddedCluster::AwaitWorkersLost() {
  std::vector<Subprocess*> workers;
  for (auto& w : workers_) workers.push_back(w.get());
  const bool pollable =
      std::all_of(workers.begin(), workers.end(), [](Subprocess* w) { return w->exit_fd() >= 0; });
  while (true) {
    if (pollable) {
      // Every worker must go for the cluster to be lost: wait for each in turn.
      for (Subprocess* w : workers) AwaitExit(w->exit_fd());
    } else {
      absl::SleepFor(absl::Milliseconds(100));  // no pidfds: look now and then
    }
    // Holding Stop()'s lock: a Stop() under way finishes first, and nothing
    // reaps the workers while they are looked at here.
    absl::MutexLock lock(&stop_mu_);
    if (stopped_) return absl::OkStatus();
    if (!std::all_of(workers.begin(), workers.end(), [](Subprocess* w) { return w->Exited(); })) {
      continue;
    }
    std::vector<std::string> why;
    for (size_t i = 0; i < workers.size(); ++i) {
      const std::string name = absl::StrCat("worker-", i);
      const std::string log = absl::StrCat(options_.dir, "/", name, ".log");
      why.push_back(absl::StrCat(name, " exited with status ", workers[i]->Wait(), " (", log, ": ",
                                 LastLogLine(log), ")"));
    }
    return absl::UnavailableError(
        absl::StrCat("every worker exited, so no task can run: ", absl::StrJoin(why, "; ")));
  }
}

void EmbeddedCluster::Stop() {
  absl::MutexLock lock(&stop_mu_);
  stopped_ = true;
  std::vector<Subprocess*> workers;
  workers.reserve(workers_.size());
  for (auto& w : workers_) workers.push_back(w.get());
  // Workers first: a worker stopped mid-task releases it to the coordinator.
  Subprocess::StopAll(workers, kStopGraceMs);
  // Then both services at once: with no worker left, nothing the
  // coordinator does at its end needs the scorer.
  Subprocess::StopAll({coordinator_.get(), scorer_.get()}, kStopGraceMs);
}

}  // namespace memaudit::cli
