// What every memaudit server process does the same way: flags for its
// addresses, a gRPC server with the health service, a /metrics endpoint, port
// files for callers that started it on port 0, and shutdown on SIGTERM.
#ifndef MEMAUDIT_COMMON_RPC_SERVING_H_
#define MEMAUDIT_COMMON_RPC_SERVING_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "common/metrics/metrics.h"
#include "common/metrics/metrics_endpoint.h"
#include "common/rpc/call_gate.h"
#include "common/security/identity.h"
#include "common/security/tls.h"

namespace memaudit {

// What the coordinator receives at most: a spec is at most 1 MiB
// (spec_yaml.h), a heartbeat for 4,096 leases well under 4 MiB.
inline constexpr int kSmallReceiveBytes = 4 << 20;
// Concurrent calls on one connection (HTTP/2 streams): with the receive
// limit, what one connection can make the server buffer.
inline constexpr int kMaxStreamsPerConnection = 64;

struct ServingFlags {
  std::string listen = "127.0.0.1:0";
  std::string port_file;
  std::string metrics_listen = "127.0.0.1:0";
  std::string metrics_port_file;
  // The gRPC port's TLS; the certificate is also what this service presents
  // when it calls another (the coordinator calling the scorer).
  TlsFlags tls;
  // SHA-256 hashes of the bearer tokens callers may present (identity.h).
  std::string token_hashes;
  // A file holding the password scrapers of /metrics must present (HTTP
  // Basic, any user name); empty = /metrics is open.
  std::string metrics_token_file;
  // Refuse the TLS handshake of a client without a certificate (then no
  // caller can use a bearer token).
  bool require_client_cert = false;
  // The largest message a call may send this server.
  int max_receive_bytes = kMaxGrpcMessageBytes;
  // Memory gRPC may hold for this server's connections and calls (a gRPC
  // resource quota), in MiB.
  int grpc_memory_mb = 1024;
};

// Who may call what, checked before any message is read (call_gate.h).
struct ServingGate {
  Authenticator* auth = nullptr;
  CallPolicy policy;
};

// Adds --listen, --port-file, --metrics-listen, --metrics-port-file, the TLS
// flags (tls.h), --token-hashes, --require-client-cert and --grpc-memory-mb
// (defaulting to `flags->grpc_memory_mb`).
void AddServingFlags(CLI::App* app, ServingFlags* flags, const std::string& default_listen,
                     const std::string& default_metrics);

// Adds only --metrics-listen and --metrics-port-file, for processes (the
// worker) that serve /metrics but no gRPC.
void AddMetricsFlags(CLI::App* app, std::string* metrics_listen, std::string* metrics_port_file,
                     const std::string& default_metrics);

// Starts /metrics on `metrics_listen`, behind the password in
// `metrics_token_file` if one is named, then writes the bound port to
// `metrics_port_file` (if not empty).
absl::StatusOr<std::unique_ptr<MetricsEndpoint>> StartMetricsServing(
    const std::string& metrics_listen, const std::string& metrics_port_file,
    const prometheus::Registry* registry, const std::string& metrics_token_file = "");

struct Serving {
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  std::unique_ptr<MetricsEndpoint> metrics;
};

// Starts gRPC (with health) and /metrics, then writes the port files. Every
// RPC is counted and timed into `registry` (common/rpc/grpc_server_metrics.h).
// With TLS, `gate` refuses callers before their message is read; it must
// outlive the server (the authenticator included).
absl::StatusOr<Serving> StartServing(const ServingFlags& flags,
                                     const std::vector<grpc::Service*>& services,
                                     prometheus::Registry* registry,
                                     const std::shared_ptr<CallGate>& gate = nullptr);

// Who may call: everyone as admin under --insecure (logged), else the
// callers of --token-hashes and of certificates the CA signed; SIGHUP
// reloads the token hashes.
absl::StatusOr<std::unique_ptr<Authenticator>> MakeAuthenticator(const ServingFlags& flags);

// "host:port" split; port may be 0.
absl::StatusOr<std::pair<std::string, int>> SplitHostPort(const std::string& address);

// Logs to stderr with the process name; level from MEMAUDIT_LOG_LEVEL.
void InitLogging(const std::string& process_name);

// Ends a service once its server has shut down and what it stores is closed:
// flushes the logs and exits without static destructors. ~grpc::Server runs
// gRPC's library shutdown, which (gRPC 1.51) joins an executor thread that can
// sit out an idle poll of up to ~10 s first: `memaudit run` saw its scorer
// take 5 s to exit, one run in a few.
[[noreturn]] void ExitServed(int code);

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_RPC_SERVING_H_
