#include "common/metrics/metrics_endpoint.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <prometheus/exposer.h>
#include <prometheus/registry.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "common/metrics/civetweb_thread_stacks.h"

namespace memaudit {
namespace {

// Enough for civetweb's threads next to LibTorch's static TLS (see
// civetweb_thread_stacks.h).
constexpr size_t kCivetwebStackBytes = size_t{1} << 20;

// The address to connect to in order to reach a listener bound to `host`.
std::string WakeHost(const std::string& host) {
  return host.empty() || host == "0.0.0.0" ? "127.0.0.1" : host;
}

// Opens and immediately closes a TCP connection; errors are irrelevant.
void Poke(const std::string& host, int port) {
  sockaddr_in address{};
  if (inet_pton(AF_INET, host.c_str(), &address.sin_addr) != 1) return;
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return;
  // Best effort: whether or not it connects, the accept loop wakes or is gone.
  static_cast<void>(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)));
  close(fd);
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(
    const prometheus::Registry* registry, const std::string& host, int port,
    const std::string& password) {
  if (registry == nullptr) return absl::InvalidArgumentError("metrics registry is null");
  if (port < 0 || port > 65535) {
    return absl::InvalidArgumentError("metrics port out of range: " + std::to_string(port));
  }
  if (host.find(':') != std::string::npos || host.find('[') != std::string::npos) {
    // Say so instead of civetweb's opaque "possible problem binding to port".
    return absl::InvalidArgumentError("metrics address " + host +
                                      ": this civetweb build has no IPv6 support");
  }
  // civetweb takes numeric addresses only; "localhost" is common in configs.
  const std::string bind_host = host == "localhost" ? "127.0.0.1" : host;
  const std::string listen =
      bind_host.empty() ? std::to_string(port) : bind_host + ":" + std::to_string(port);

  std::unique_ptr<MetricsEndpoint> endpoint(new MetricsEndpoint());
  // The Exposer holds registries by weak_ptr; the caller owns this one.
  endpoint->registry_ = std::shared_ptr<prometheus::Registry>(
      const_cast<prometheus::Registry*>(registry), [](prometheus::Registry*) {});
  endpoint->health_ = std::make_shared<prometheus::Registry>();
  // civetweb may set SIGCHLD to SIG_IGN when it starts, which makes the
  // kernel reap children and breaks waitpid() elsewhere in the process; keep
  // the caller's disposition. (Its SIGPIPE ignore is wanted for a server.)
  struct sigaction saved_sigchld;
  sigaction(SIGCHLD, nullptr, &saved_sigchld);
  try {
    ScopedThreadStackFloor stacks(kCivetwebStackBytes);
    endpoint->exposer_ = std::make_unique<prometheus::Exposer>(std::vector<std::string>{
        "listening_ports", listen,
        // Scrapes are rare and cheap; civetweb's default of 50 threads is waste.
        "num_threads", "4",
        // Bound how long a stuck client can hold one of those threads.
        "request_timeout_ms", "10000"});
  } catch (const std::exception& e) {
    sigaction(SIGCHLD, &saved_sigchld, nullptr);
    return absl::UnavailableError("cannot serve metrics on " + listen + ": " + e.what());
  }
  sigaction(SIGCHLD, &saved_sigchld, nullptr);
  endpoint->exposer_->RegisterCollectable(endpoint->registry_, "/metrics");
  if (!password.empty()) {
    // prometheus-cpp's Exposer offers HTTP Basic only (Prometheus:
    // basic_auth.password_file). Compared in constant time.
    endpoint->exposer_->RegisterAuth(
        [password](const std::string& /*user*/, const std::string& given) {
          return given.size() == password.size() &&
                 CRYPTO_memcmp(given.data(), password.data(), password.size()) == 0;
        },
        "memaudit", "/metrics");
  }
  endpoint->exposer_->RegisterCollectable(endpoint->health_, "/healthz");
  const std::vector<int> ports = endpoint->exposer_->GetListeningPorts();
  if (ports.empty() || ports.front() <= 0) {
    return absl::InternalError("civetweb did not report its listening port for " + listen);
  }
  endpoint->port_ = ports.front();
  endpoint->wake_host_ = WakeHost(bind_host);
  return endpoint;
}

MetricsEndpoint::~MetricsEndpoint() {
  if (exposer_ == nullptr) return;
  // civetweb's accept thread checks its stop flag only between poll() calls
  // of up to 2 s, so a bare stop stalls shutdown (and every test) that long
  // once a scrape has been served. Connecting to ourselves until the Exposer
  // is gone ends the wait early; a poke that lands before the flag is set is
  // just an empty connection.
  std::atomic<bool> stopped{false};
  std::thread waker([this, &stopped] {
    while (!stopped.load()) {
      Poke(wake_host_, port_);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  exposer_.reset();
  stopped.store(true);
  waker.join();
}

}  // namespace memaudit
