#include "tests/integration/prometheus_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/base/status_macros.h"
#include "tests/integration/cluster_fixture.h"

namespace memaudit::testing {
namespace {

constexpr int kReadyTimeoutMs = 30000;

}  // namespace

std::string UrlEncode(const std::string& text) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

double SingleValue(const nlohmann::json& result) {
  if (!result.is_array() || result.size() != 1) return std::numeric_limits<double>::quiet_NaN();
  // An instant vector sample is {"metric": {...}, "value": [time, "value"]}.
  return std::stod(result[0]["value"][1].get<std::string>());
}

absl::StatusOr<std::unique_ptr<PrometheusServer>> PrometheusServer::Start(
    const std::string& dir, const std::vector<ScrapeJob>& jobs) {
  std::system(absl::StrCat("mkdir -p '", dir, "/tsdb'").c_str());
  const std::string config_path = dir + "/prometheus.yml";
  {
    std::ofstream config(config_path);
    // A timeout may not exceed the interval; 1 s keeps tests short.
    config << "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
              "  evaluation_interval: 1s\nscrape_configs:\n";
    for (const ScrapeJob& job : jobs) {
      std::vector<std::string> targets;
      for (int port : job.ports) targets.push_back(absl::StrCat("'127.0.0.1:", port, "'"));
      config << "  - job_name: " << job.job << "\n    static_configs:\n      - targets: ["
             << absl::StrJoin(targets, ", ") << "]\n";
    }
    if (!config) return absl::InternalError(absl::StrCat("cannot write ", config_path));
  }
  std::unique_ptr<PrometheusServer> server(new PrometheusServer());
  server->port_ = FreePort();
  MEMAUDIT_ASSIGN_OR_RETURN(
      auto process,
      Subprocess::Spawn(
          {kPrometheusBinary, absl::StrCat("--config.file=", config_path),
           absl::StrCat("--storage.tsdb.path=", dir, "/tsdb"),
           absl::StrCat("--web.listen-address=127.0.0.1:", server->port_), "--log.level=warn"},
          dir + "/prometheus.log"));
  server->process_ = std::move(process);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(kReadyTimeoutMs);
  while (HttpGet(server->port_, "/-/ready").find("Ready") == std::string::npos) {
    if (server->process_->Exited() || std::chrono::steady_clock::now() > deadline) {
      return absl::UnavailableError(
          absl::StrCat("prometheus did not become ready; see ", dir, "/prometheus.log"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return server;
}

absl::StatusOr<nlohmann::json> PrometheusServer::Get(const std::string& path_and_query) {
  const std::string body = HttpGet(port_, path_and_query);
  nlohmann::json parsed = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    return absl::UnavailableError(
        absl::StrCat("GET ", path_and_query, ": not JSON: \"", body.substr(0, 200), "\""));
  }
  return parsed;
}

absl::StatusOr<nlohmann::json> PrometheusServer::Query(const std::string& promql) {
  return Get(absl::StrCat("/api/v1/query?query=", UrlEncode(promql)));
}

absl::StatusOr<nlohmann::json> PrometheusServer::QueryRange(const std::string& promql, double start,
                                                            double end, double step_s) {
  return Get(absl::StrFormat("/api/v1/query_range?query=%s&start=%.3f&end=%.3f&step=%g",
                             UrlEncode(promql), start, end, step_s));
}

absl::StatusOr<nlohmann::json> PrometheusServer::LabelValues(const std::string& label,
                                                             const std::string& selector) {
  return Get(absl::StrCat("/api/v1/label/", label, "/values?match%5B%5D=", UrlEncode(selector)));
}

nlohmann::json PrometheusServer::WaitFor(const std::string& promql,
                                         const std::function<bool(const nlohmann::json&)>& done,
                                         int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  nlohmann::json result = nlohmann::json::array();
  while (true) {
    auto answer = Query(promql);
    if (answer.ok() && (*answer)["status"] == "success") {
      result = (*answer)["data"]["result"];
      if (done(result)) return result;
    }
    if (std::chrono::steady_clock::now() > deadline) return result;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

double PrometheusServer::WaitForValue(const std::string& promql, double expected, int timeout_ms) {
  return SingleValue(WaitFor(
      promql, [&](const nlohmann::json& r) { return SingleValue(r) == expected; }, timeout_ms));
}

PromtoolLint RunPromtool(const std::string& dir, const std::string& name,
                         const std::string& exposition) {
  const std::string in = absl::StrCat(dir, "/", name, ".prom");
  const std::string out = absl::StrCat(dir, "/", name, ".promtool");
  std::ofstream(in) << exposition;
  PromtoolLint lint;
  const int status = std::system(
      absl::StrCat(kPromtoolBinary, " check metrics < '", in, "' > '", out, "' 2>&1").c_str());
  lint.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  lint.output = Slurp(out);
  return lint;
}

}  // namespace memaudit::testing
