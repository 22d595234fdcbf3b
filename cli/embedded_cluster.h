// A whole memaudit deployment on loopback: a scorer, a coordinator and N
// workers as child processes on free ports, with their databases and logs in
// one directory. `memaudit run` uses it, and so do the integration tests.
#ifndef MEMAUDIT_CLI_EMBEDDED_CLUSTER_H_
#define MEMAUDIT_CLI_EMBEDDED_CLUSTER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/base/process.h"
#include "common/security/certificate_authority.h"
#include "common/security/tls.h"

namespace memaudit::cli {

struct ClusterOptions {
  std::string dir;  // created if missing
  uint32_t workers = 2;
  int64_t lease_ttl_ms = 10000;
  uint32_t heartbeat_ms = 1000;
  std::string device = "cpu";             // the workers' --device
  std::string matmul_precision = "fp32";  // the workers' --matmul-precision
  // The coordinator's and each worker's --data-root, one flag per entry;
  // empty = their defaults (common/messages/data_roots.h's kDefaultDataRoots).
  std::vector<std::string> data_roots;
  // Where memaudit-coordinator, -scorer and -worker live; empty = beside
  // the running executable.
  std::string bin_dir;
  // Plain text and no authentication (--insecure) instead of mutual TLS
  // with certificates minted for this cluster.
  bool insecure = false;
  // More flags for the coordinator (--quotas FILE, --token-hashes FILE, ...).
  std::vector<std::string> coordinator_args;
  // More flags for each worker (--lease-wait-ms N, ...).
  std::vector<std::string> worker_args;
};

class EmbeddedCluster {
 public:
  // Starts every process at once (their starts overlap: a worker's loading
  // of LibTorch is the longest): the coordinator waits for the scorer's port
  // file and the workers for the coordinator's (--scorer-port-file,
  // --coordinator-port-file). Returns once the scorer and the coordinator
  // serve; the workers register when they are up.
  static absl::StatusOr<std::unique_ptr<EmbeddedCluster>> Start(const ClusterOptions& options);
  ~EmbeddedCluster();

  std::string coordinator_address() const;
  std::string scorer_address() const;
  // What a client of this cluster presents: a certificate for team "local",
  // or the administrator "local-admin" (sees every team's audits, may call
  // the scorer). Under `insecure`, plain text.
  const ClientCredentials& client_credentials() const { return client_; }
  const ClientCredentials& admin_credentials() const { return admin_; }
  // A worker's ("worker in-process"), for workers a test runs in its own process.
  const ClientCredentials& worker_credentials() const { return worker_; }
  // A certificate the cluster's CA issues for `role` ("team", "worker", ...)
  // and `name`, under dir/tls; plain text under `insecure`.
  absl::StatusOr<ClientCredentials> IssueCredentials(const std::string& role,
                                                     const std::string& name);
  // The key the coordinator and the scorer share for capabilities
  // (--capability-key-file), made fresh for this cluster.
  const std::string& capability_key_file() const { return capability_key_file_; }
  int coordinator_metrics_port() const { return coordinator_metrics_port_; }
  int scorer_metrics_port() const { return scorer_metrics_port_; }

  // Starts one more worker; `env` ("NAME=value" entries) is added to its
  // environment (tests start workers that differ, e.g. in numeric class).
  absl::Status AddWorker(const std::vector<std::string>& env = {});
  size_t worker_count() const { return workers_.size(); }
  // Worker i's /metrics port; waits for the worker to start serving it.
  // 0 if it never does (see its log).
  int worker_metrics_port(size_t i);
  Subprocess* worker(size_t i) { return workers_[i].get(); }
  Subprocess* coordinator() { return coordinator_.get(); }
  Subprocess* scorer() { return scorer_.get(); }
  // Stops the scorer with `signal` (SIGKILL = a crash) and starts it again on
  // the same port and database.
  absl::Status RestartScorer(int signal);
  // The same for the coordinator, on its port and database.
  absl::Status RestartCoordinator(int signal);
  // Blocks until every worker has exited on its own — then no task can run
  // and an audit would wait for ever — and returns UNAVAILABLE naming each
  // worker's exit status and the last line of its log. Returns OK instead
  // once Stop() has stopped them. For a thread of its own, started after the
  // last AddWorker.
  absl::Status AwaitWorkersLost();
  // Stops the workers (SIGTERM to all, then one grace period for all: each
  // releases its task to the coordinator, still up to hear it), then the
  // coordinator and the scorer together. Each wait ends the moment its
  // processes exit. Safe to call again, and from another thread (a signal
  // handler's) while it runs: the second call returns once the first is done.
  void Stop();

 private:
  explicit EmbeddedCluster(ClusterOptions options) : options_(std::move(options)) {}
  struct Ports {
    int port = 0;
    int metrics_port = 0;
  };
  // Starts memaudit-<name> on `port` (0 = any) with its database, log and
  // port files under the run directory; does not wait for it.
  absl::StatusOr<std::unique_ptr<Subprocess>> SpawnService(
      const std::string& name, int port, const std::vector<std::string>& extra_args);
  // Waits until memaudit-<name> (`process`, from SpawnService) serves, and
  // returns the ports it bound.
  absl::StatusOr<Ports> AwaitService(const std::string& name, Subprocess* process);
  std::vector<std::string> ScorerArgs() const;
  // The coordinator's flags; `scorer_port_file` instead of the scorer's
  // address while the scorer is still starting.
  std::vector<std::string> CoordinatorArgs(bool scorer_port_file) const;
  // The port file of memaudit-<name>.
  std::string PortFile(const std::string& name) const;
  // Mints the cluster's CA and each party's certificate under dir/tls.
  absl::Status MintCertificates();
  // The TLS flags of the party named `name` (its certificate's file name).
  std::vector<std::string> TlsArgs(const std::string& name) const;
  absl::Status StartScorer(int port);
  // On `port` (0 = any).
  absl::Status StartCoordinator(int port);
  std::string Binary(const std::string& name) const;

  ClusterOptions options_;
  std::unique_ptr<CertificateAuthority> ca_;
  std::string tls_dir_;
  std::string capability_key_file_;
  ClientCredentials client_;
  ClientCredentials admin_;
  ClientCredentials worker_;
  std::unique_ptr<Subprocess> scorer_;
  std::unique_ptr<Subprocess> coordinator_;
  std::vector<std::unique_ptr<Subprocess>> workers_;
  std::vector<std::string> worker_metrics_files_;
  std::vector<int> worker_metrics_ports_;  // 0 until read
  absl::Mutex stop_mu_;                    // held by Stop() throughout
  bool stopped_ ABSL_GUARDED_BY(stop_mu_) = false;
  int scorer_port_ = 0;
  int coordinator_port_ = 0;
  int coordinator_metrics_port_ = 0;
  int scorer_metrics_port_ = 0;
};

}  // namespace memaudit::cli

#endif  // MEMAUDIT_CLI_EMBEDDED_CLUSTER_H_
