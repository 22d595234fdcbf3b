#include "common/rpc/serving.h"

#include <grpcpp/health_check_service_interface.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/base/process.h"
#include "common/base/status_macros.h"
#include "common/rpc/grpc_server_metrics.h"
#include "common/rpc/malformed_request.h"

namespace memaudit {

void AddServingFlags(CLI::App* app, ServingFlags* flags, const std::string& default_listen,
                     const std::string& default_metrics) {
  flags->listen = default_listen;
  app->add_option("--listen", flags->listen, "gRPC address host:port (port 0 = pick a free one)")
      ->capture_default_str();
  app->add_option("--port-file", flags->port_file, "write the bound gRPC port here once serving");
  AddMetricsFlags(app, &flags->metrics_listen, &flags->metrics_port_file, default_metrics);
  AddTlsFlags(app, &flags->tls);
  app->add_option("--metrics-token-file", flags->metrics_token_file,
                  "file holding the password Prometheus must send to /metrics (HTTP Basic, any "
                  "user name; docs/security.md)");
  app->add_option("--token-hashes", flags->token_hashes,
                  "file of callers' bearer tokens: \"SHA256HEX ROLE NAME\" per line, reloaded "
                  "on SIGHUP (docs/security.md)");
  app->add_flag("--require-client-cert", flags->require_client_cert,
                "refuse TLS clients without a certificate (no bearer tokens then)");
  app->add_option("--grpc-memory-mb", flags->grpc_memory_mb,
                  "memory gRPC may hold for connections and calls (MiB)")
      ->capture_default_str()
      ->check(CLI::Range(16, 1 << 20));
}

absl::StatusOr<std::unique_ptr<Authenticator>> MakeAuthenticator(const ServingFlags& flags) {
  if (flags.tls.insecure) {
    if (!flags.token_hashes.empty()) spdlog::warn("--insecure: --token-hashes is ignored");
    return Authenticator::AllowEveryone();
  }
  Authenticator::ReloadOnSighup();
  return Authenticator::Create(flags.token_hashes);
}

void AddMetricsFlags(CLI::App* app, std::string* metrics_listen, std::string* metrics_port_file,
                     const std::string& default_metrics) {
  *metrics_listen = default_metrics;
  app->add_option("--metrics-listen", *metrics_listen,
                  "Prometheus /metrics address host:port (port 0 = pick a free one)")
      ->capture_default_str();
  app->add_option("--metrics-port-file", *metrics_port_file,
                  "write the bound /metrics port here once serving");
}

absl::StatusOr<std::unique_ptr<MetricsEndpoint>> StartMetricsServing(
    const std::string& metrics_listen, const std::string& metrics_port_file,
    const prometheus::Registry* registry, const std::string& metrics_token_file) {
  MEMAUDIT_ASSIGN_OR_RETURN(auto address, SplitHostPort(metrics_listen));
  ClientCredentials password;  // the same file format as a client's token
  MEMAUDIT_RETURN_IF_ERROR(LoadClientToken(metrics_token_file, &password));
  MEMAUDIT_ASSIGN_OR_RETURN(
      auto http, MetricsEndpoint::Start(registry, address.first, address.second, password.token));
  if (!metrics_port_file.empty()) {
    MEMAUDIT_RETURN_IF_ERROR(WritePortFile(metrics_port_file, http->port()));
  }
  return http;
}

absl::StatusOr<std::pair<std::string, int>> SplitHostPort(const std::string& address) {
  const size_t colon = address.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port) ||
      port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("address \"", address, "\": expected host:port, e.g. 127.0.0.1:7400"));
  }
  return std::make_pair(address.substr(0, colon), port);
}

absl::StatusOr<Serving> StartServing(const ServingFlags& flags,
                                     const std::vector<grpc::Service*>& services,
                                     prometheus::Registry* registry,
                                     const std::shared_ptr<CallGate>& gate) {
  MEMAUDIT_RETURN_IF_ERROR(SplitHostPort(flags.listen).status());
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  Serving serving;
  MEMAUDIT_ASSIGN_OR_RETURN(auto credentials,
                            ServerCredentials(flags.tls, flags.require_client_cert));
  if (gate != nullptr && !flags.tls.insecure) credentials->SetAuthMetadataProcessor(gate);
  builder.AddListeningPort(flags.listen, credentials, &serving.port);
  // Observation batches for large pools exceed gRPC's 4 MiB default; the
  // coordinator takes less (kSmallReceiveBytes).
  builder.SetMaxReceiveMessageSize(flags.max_receive_bytes);
  builder.SetMaxSendMessageSize(kMaxGrpcMessageBytes);
  // What all connections and calls together may hold: past it gRPC stops
  // reading and refuses new calls rather than growing.
  grpc::ResourceQuota quota("memaudit-server");
  quota.Resize(static_cast<size_t>(flags.grpc_memory_mb) << 20);
  builder.SetResourceQuota(quota);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, kMaxStreamsPerConnection);
  for (grpc::Service* s : services) builder.RegisterService(s);
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  // First: the metrics count the code it rewrites a malformed request's to.
  interceptors.push_back(MalformedRequestInterceptor());
  interceptors.push_back(GrpcServerMetrics(registry));
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  serving.server = builder.BuildAndStart();
  if (serving.server == nullptr || serving.port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", flags.listen));
  }
  MEMAUDIT_ASSIGN_OR_RETURN(
      auto http, StartMetricsServing(flags.metrics_listen, flags.metrics_port_file, registry,
                                     flags.metrics_token_file));
  serving.metrics = std::move(http);
  // The gRPC port file goes last: once it exists, everything is up.
  if (!flags.port_file.empty()) {
    MEMAUDIT_RETURN_IF_ERROR(WritePortFile(flags.port_file, serving.port));
  }
  return serving;
}

void InitLogging(const std::string& process_name) {
  auto logger = spdlog::stderr_color_mt(process_name);
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ [%n] %v");
  spdlog::set_default_logger(logger);
  if (const char* level = std::getenv("MEMAUDIT_LOG_LEVEL")) {
    spdlog::set_level(spdlog::level::from_str(level));
  }
  // Debian's Abseil is built without NDEBUG, so by default every Mutex lock
  // also records lock-order edges for deadlock detection: about 3% of a busy
  // coordinator's CPU. The tests keep the checks; the servers skip them.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

void ExitServed(int code) {
  spdlog::shutdown();
  std::fflush(nullptr);
  std::_Exit(code);
}

}  // namespace memaudit
