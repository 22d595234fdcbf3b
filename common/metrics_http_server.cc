#include "common/metrics_http_server.h"

#include <arpa/inet.h>
#include <civetweb.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/status.h"

namespace memaudit::metrics {
namespace {

// What Prometheus expects for text format 0.0.4.
constexpr char kMetricsContentType[] = "text/plain; version=0.0.4; charset=utf-8";
constexpr char kPlainContentType[] = "text/plain; charset=utf-8";

const char* ReasonPhrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
  }
  return "Error";
}

// Writes a complete response. Headers are written by hand rather than with
// mg_response_header_*: those add a Date header via gmtime(), whose static
// buffer races between civetweb's worker threads (found by TSan).
// Content-Length is always sent so a scraper never waits for the close.
int Respond(mg_connection* conn, int status, const char* content_type, const std::string& body,
            bool head_only, const char* allow = nullptr) {
  std::string head = "HTTP/1.1 " + std::to_string(status) + " " + ReasonPhrase(status) +
                     "\r\nContent-Type: " + content_type +
                     "\r\nContent-Length: " + std::to_string(body.size()) +
                     "\r\nCache-Control: no-store\r\nConnection: close\r\n";
  if (allow != nullptr) head.append("Allow: ").append(allow).append("\r\n");
  head.append("\r\n");
  if (!head_only) head.append(body);
  mg_write(conn, head.data(), head.size());
  return status;
}

// Turns "::1" into "[::1]" as civetweb's listening_ports syntax requires.
std::string ListenSpec(const std::string& host, int port) {
  if (host.empty()) return std::to_string(port);
  if (host.find(':') != std::string::npos && host.front() != '[') {
    return "[" + host + "]:" + std::to_string(port);
  }
  return host + ":" + std::to_string(port);
}

// The address to connect to in order to reach a listener bound to `host`.
std::string WakeHost(std::string host) {
  if (host.size() > 1 && host.front() == '[') host = host.substr(1, host.size() - 2);
  if (host.empty() || host == "0.0.0.0") return "127.0.0.1";
  if (host == "::") return "::1";
  return host;
}

// Opens and immediately closes a TCP connection; errors are irrelevant.
void Poke(const std::string& host, int port) {
  sockaddr_in v4{};
  sockaddr_in6 v6{};
  int fd = -1;
  if (inet_pton(AF_INET, host.c_str(), &v4.sin_addr) == 1) {
    v4.sin_family = AF_INET;
    v4.sin_port = htons(static_cast<uint16_t>(port));
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd >= 0) connect(fd, reinterpret_cast<sockaddr*>(&v4), sizeof(v4));
  } else if (inet_pton(AF_INET6, host.c_str(), &v6.sin6_addr) == 1) {
    v6.sin6_family = AF_INET6;
    v6.sin6_port = htons(static_cast<uint16_t>(port));
    fd = socket(AF_INET6, SOCK_STREAM, 0);
    if (fd >= 0) connect(fd, reinterpret_cast<sockaddr*>(&v6), sizeof(v6));
  }
  if (fd >= 0) close(fd);
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const Registry* registry,
                                                              const std::string& host, int port) {
  if (registry == nullptr) return absl::InvalidArgumentError("metrics registry is null");
  if (port < 0 || port > 65535) {
    return absl::InvalidArgumentError("metrics port out of range: " + std::to_string(port));
  }
  // civetweb asks for one mg_init_library before any mg_start; the call is
  // not thread-safe itself, hence call_once. Never undone: servers may start
  // and stop many times per process.
  static std::once_flag init_once;
  std::call_once(init_once, [] { mg_init_library(0); });

  // civetweb takes numeric addresses only; "localhost" is common in configs.
  const std::string bind_host = host == "localhost" ? "127.0.0.1" : host;
  if (bind_host.find(':') != std::string::npos && mg_check_feature(MG_FEATURES_IPV6) == 0) {
    // Debian 12's civetweb is built without IPv6; say so instead of civetweb's
    // opaque "Failed to setup server ports".
    return absl::InvalidArgumentError("this civetweb build has no IPv6 support: " + host);
  }
  std::unique_ptr<HttpServer> server(new HttpServer(registry));
  const std::string listen = ListenSpec(bind_host, port);
  const char* options[] = {
      "listening_ports",
      listen.c_str(),
      // Scrapes are rare and cheap; civetweb's default of 50 threads is waste.
      "num_threads",
      "4",
      // Bound how long a stuck client can hold one of those threads.
      "request_timeout_ms",
      "10000",
      nullptr,
  };
  mg_callbacks callbacks;
  std::memset(&callbacks, 0, sizeof(callbacks));
  // Without this civetweb prints its errors to stderr; they are returned
  // through mg_error_data below instead.
  callbacks.log_message = [](const mg_connection*, const char*) { return 1; };
  mg_init_data init{&callbacks, server.get(), options};
  unsigned error_code = 0;
  char error_text[256] = "";
  mg_error_data error{&error_code, error_text, sizeof(error_text)};
  // civetweb's docs say mg_start may set SIGCHLD to SIG_IGN, which makes the
  // kernel reap children and breaks waitpid() elsewhere in the process; keep
  // the caller's disposition. (Its SIGPIPE ignore is wanted for a server.)
  struct sigaction saved_sigchld;
  sigaction(SIGCHLD, nullptr, &saved_sigchld);
  server->context_ = mg_start2(&init, &error);
  sigaction(SIGCHLD, &saved_sigchld, nullptr);
  if (server->context_ == nullptr) {
    return absl::UnavailableError("cannot serve metrics on " + listen + ": " + error_text);
  }
  // One handler for every path, so unknown paths and methods get our 404/405
  // rather than civetweb's file-serving behaviour.
  mg_set_request_handler(server->context_, "/", &HttpServer::HandleRequest, server.get());

  mg_server_port ports[4];
  const int count = mg_get_server_ports(server->context_, 4, ports);
  if (count < 1 || ports[0].port <= 0) {
    return absl::InternalError("civetweb did not report its listening port for " + listen);
  }
  server->port_ = ports[0].port;
  server->wake_host_ = WakeHost(bind_host);
  return server;
}

HttpServer::~HttpServer() {
  if (context_ == nullptr) return;
  // civetweb's accept thread checks its stop flag only between poll() calls
  // of up to 2 s, so a bare mg_stop() stalls shutdown (and every test) that
  // long. Connecting to ourselves until mg_stop returns ends the wait early;
  // a poke that lands before the flag is set is just an empty connection.
  std::atomic<bool> stopped{false};
  std::thread waker;
  if (port_ > 0) {
    waker = std::thread([this, &stopped] {
      while (!stopped.load()) {
        Poke(wake_host_, port_);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
  }
  mg_stop(context_);
  stopped.store(true);
  if (waker.joinable()) waker.join();
}

int HttpServer::HandleRequest(mg_connection* conn, void* self) {
  const mg_request_info* request = mg_get_request_info(conn);
  const std::string method = request->request_method != nullptr ? request->request_method : "";
  const std::string path = request->local_uri != nullptr ? request->local_uri : "";
  const bool head_only = method == "HEAD";
  if (path != "/metrics" && path != "/healthz") {
    return Respond(conn, 404, kPlainContentType, "not found\n", head_only);
  }
  if (method != "GET" && !head_only) {
    return Respond(conn, 405, kPlainContentType, "method not allowed\n", false, "GET, HEAD");
  }
  if (path == "/healthz") return Respond(conn, 200, kPlainContentType, "ok\n", head_only);
  const Registry* registry = static_cast<HttpServer*>(self)->registry_;
  return Respond(conn, 200, kMetricsContentType, registry->Serialize(), head_only);
}

}  // namespace memaudit::metrics
