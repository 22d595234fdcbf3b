// Serves a metrics::Registry over HTTP for Prometheus to scrape.
//
//   GET /metrics  -> 200, Registry::Serialize(), text/plain; version=0.0.4
//   GET /healthz  -> 200, "ok"
//   other paths   -> 404; methods other than GET/HEAD -> 405
//
// Backed by civetweb (Debian libcivetweb-dev) with a small thread pool; each
// scrape serializes the registry afresh, so no caching or staleness.

#ifndef MEMAUDIT_COMMON_METRICS_HTTP_SERVER_H_
#define MEMAUDIT_COMMON_METRICS_HTTP_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/metrics_registry.h"

struct mg_context;
struct mg_connection;

namespace memaudit::metrics {

class HttpServer {
 public:
  // Listens on `host`:`port` and starts serving. `host` is a numeric address
  // ("127.0.0.1"; "" or "0.0.0.0" = all interfaces) or "localhost"; IPv6
  // literals work only if civetweb was built with IPv6, which Debian 12's is
  // not. `port` 0 picks a free port; read it back with port(). `registry`
  // must outlive the server.
  // Errors: InvalidArgument for bad arguments (including unsupported IPv6),
  // Unavailable when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(const Registry* registry,
                                                           const std::string& host, int port);

  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;
  // Stops accepting, waits for in-flight requests, joins civetweb's threads.
  ~HttpServer();

  // The port actually bound (resolved when Start was given 0).
  int port() const { return port_; }

 private:
  explicit HttpServer(const Registry* registry) : registry_(registry) {}
  static int HandleRequest(mg_connection* conn, void* self);

  const Registry* const registry_;
  mg_context* context_ = nullptr;
  int port_ = 0;
  std::string wake_host_;  // A local address that reaches the listener.
};

}  // namespace memaudit::metrics

#endif  // MEMAUDIT_COMMON_METRICS_HTTP_SERVER_H_
