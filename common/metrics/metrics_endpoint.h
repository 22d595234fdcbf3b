// Serves a prometheus::Registry for Prometheus to scrape, with
// prometheus-cpp's Exposer (civetweb underneath):
//
//   GET /metrics  -> 200, the registry in the text exposition format
//   GET /healthz  -> 200 (for probes; the body is the Exposer's own counters)
//
// Each scrape serializes the registry afresh.
#ifndef MEMAUDIT_COMMON_METRICS_METRICS_ENDPOINT_H_
#define MEMAUDIT_COMMON_METRICS_METRICS_ENDPOINT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace prometheus {
class Exposer;
class Registry;
}  // namespace prometheus

namespace memaudit {

class MetricsEndpoint {
 public:
  // Listens on `host`:`port` and starts serving. `host` is a numeric address
  // ("127.0.0.1"; "" or "0.0.0.0" = all interfaces) or "localhost"; IPv6
  // literals are refused because Debian 12's civetweb is built without IPv6.
  // `port` 0 picks a free port; read it back with port(). `registry` must
  // outlive the endpoint.
  // A non-empty `password`: /metrics answers 401 unless the scrape sends
  // HTTP Basic authentication with it (any user name; /healthz stays open
  // for probes).
  // Errors: InvalidArgument for bad arguments, Unavailable when the address
  // cannot be bound.
  static absl::StatusOr<std::unique_ptr<MetricsEndpoint>> Start(
      const prometheus::Registry* registry, const std::string& host, int port,
      const std::string& password = "");

  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;
  // Stops accepting, waits for in-flight scrapes, joins civetweb's threads.
  ~MetricsEndpoint();

  // The port actually bound (resolved when Start was given 0).
  int port() const { return port_; }

 private:
  MetricsEndpoint() = default;

  std::unique_ptr<prometheus::Exposer> exposer_;
  std::shared_ptr<prometheus::Registry> registry_;  // Non-owning; see Start.
  std::shared_ptr<prometheus::Registry> health_;    // Empty: /healthz.
  int port_ = 0;
  std::string wake_host_;  // A local address that reaches the listener.
};

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_METRICS_METRICS_ENDPOINT_H_
