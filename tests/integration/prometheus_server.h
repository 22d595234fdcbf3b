// A real Prometheus server (Debian's `prometheus` package) scraping given
// targets every second, and a small client for its HTTP API, for tests that
// check what memaudit exports the way an operator would see it.
#ifndef MEMAUDIT_TESTS_INTEGRATION_PROMETHEUS_SERVER_H_
#define MEMAUDIT_TESTS_INTEGRATION_PROMETHEUS_SERVER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/base/process.h"
#include "nlohmann/json.hpp"

namespace memaudit::testing {

inline constexpr char kPrometheusBinary[] = "/usr/bin/prometheus";
inline constexpr char kPromtoolBinary[] = "/usr/bin/promtool";

struct PromtoolLint {
  int exit_code = -1;
  std::string output;
};

// Runs `promtool check metrics` on `exposition`; the input and promtool's
// output are kept in `dir` as <name>.prom and <name>.promtool.
PromtoolLint RunPromtool(const std::string& dir, const std::string& name,
                         const std::string& exposition);

struct ScrapeJob {
  std::string job;
  std::vector<int> ports;  // on 127.0.0.1
};

class PrometheusServer {
 public:
  // Writes a config scraping `jobs` at a 1 s interval into `dir` (created),
  // starts Prometheus on a free port with its TSDB there, and waits until it
  // reports ready.
  static absl::StatusOr<std::unique_ptr<PrometheusServer>> Start(
      const std::string& dir, const std::vector<ScrapeJob>& jobs);

  int port() const { return port_; }

  // GET /api/v1/query?query=<promql> at the current time: the whole JSON
  // answer ({"status": "success", "data": {...}} or an "error").
  absl::StatusOr<nlohmann::json> Query(const std::string& promql);
  // GET /api/v1/query_range over [start, end] (Unix seconds) every `step_s`.
  absl::StatusOr<nlohmann::json> QueryRange(const std::string& promql, double start, double end,
                                            double step_s);
  // GET /api/v1/label/<label>/values?match[]=<selector>.
  absl::StatusOr<nlohmann::json> LabelValues(const std::string& label, const std::string& selector);
  // Polls Query(promql) every 250 ms until `done` accepts its data.result
  // or `timeout_ms` passes; returns the last data.result (an empty array
  // when nothing could be read).
  nlohmann::json WaitFor(const std::string& promql,
                         const std::function<bool(const nlohmann::json&)>& done,
                         int timeout_ms = 20000);
  // WaitFor for a query that yields one sample: polls until its value is
  // `expected` and returns the last value seen (NaN when none).
  double WaitForValue(const std::string& promql, double expected, int timeout_ms = 20000);

 private:
  PrometheusServer() = default;
  absl::StatusOr<nlohmann::json> Get(const std::string& path_and_query);

  std::unique_ptr<Subprocess> process_;
  int port_ = 0;
};

// Percent-encodes `text` for a URL query value.
std::string UrlEncode(const std::string& text);

// A free TCP port on 127.0.0.1 (bound, read back and released).
int FreePort();

// The value of a one-sample instant vector result, NaN if it has no sample.
double SingleValue(const nlohmann::json& result);

}  // namespace memaudit::testing

#endif  // MEMAUDIT_TESTS_INTEGRATION_PROMETHEUS_SERVER_H_
