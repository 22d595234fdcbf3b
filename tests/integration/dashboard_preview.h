// Renders deploy/grafana/memaudit.json the way its panels would look, from a
// live Prometheus: time-series panels as lines over a time range, bar, stat
// and gauge panels as labelled bars of their current values, laid out on the
// dashboard's 24-column grid. Grafana is not packaged for Debian, so this is
// how the tests (and docs/images/dashboard.png) see the dashboard with data.
#ifndef MEMAUDIT_TESTS_INTEGRATION_DASHBOARD_PREVIEW_H_
#define MEMAUDIT_TESTS_INTEGRATION_DASHBOARD_PREVIEW_H_

#include <functional>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "tests/integration/prometheus_server.h"

namespace memaudit::testing {

struct PreviewStats {
  int panels = 0;            // panels drawn (rows excluded)
  int panels_with_data = 0;  // of those, panels with at least one series
  std::string empty;         // titles of the panels without data
};

// `substitute` turns a panel's query into what Grafana would send (variables
// filled in); time series cover [start, end] (Unix seconds).
std::string DashboardPreviewHtml(const nlohmann::json& dashboard, PrometheusServer& prometheus,
                                 const std::function<std::string(const std::string&)>& substitute,
                                 double start, double end, PreviewStats* stats);

}  // namespace memaudit::testing

#endif  // MEMAUDIT_TESTS_INTEGRATION_DASHBOARD_PREVIEW_H_
