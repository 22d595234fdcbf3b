// Renders deploy/grafana/memaudit.json the way its panels would look, from a
// live Prometheus: time-series panels as lines over a time range, trend
// panels as curves over their numeric x field (after the panel's own
// transformations, with the interval bands its overrides ask for), stat and
// gauge panels as labelled bars of their current values, laid out on the
// dashboard's 24-column grid, with a repeated panel drawn once per value of
// its variable. Grafana is not packaged for Debian, so this is how the tests
// (and docs/images/dashboard.png) see the dashboard with data.
#ifndef MEMAUDIT_TESTS_INTEGRATION_DASHBOARD_PREVIEW_H_
#define MEMAUDIT_TESTS_INTEGRATION_DASHBOARD_PREVIEW_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "tests/integration/prometheus_server.h"

namespace memaudit::testing {

// Turns a query into what Grafana would send (variables filled in).
using Substitute = std::function<std::string(const std::string&)>;

struct PreviewStats {
  int panels = 0;            // panels drawn (rows excluded; a repeated panel once per value)
  int panels_with_data = 0;  // of those, panels with at least one series
  std::string empty;         // titles of the panels without data
};

// Time series cover [start, end] (Unix seconds).
std::string DashboardPreviewHtml(const nlohmann::json& dashboard, PrometheusServer& prometheus,
                                 const Substitute& substitute, double start, double end,
                                 PreviewStats* stats);

// The panels Grafana draws for `panel`: itself, or, when it repeats by a
// variable (a label_values query), one copy per value that variable lists,
// the value put in place of the variable in its title and queries.
std::vector<nlohmann::json> ExpandRepeats(const nlohmann::json& dashboard,
                                          const nlohmann::json& panel, PrometheusServer& prometheus,
                                          const Substitute& substitute);

// One data frame as Grafana's transformations see it: named fields, each a
// column of text or of numbers (NaN = null).
struct PreviewField {
  std::string name;
  bool numeric = false;
  std::vector<std::string> text;  // when !numeric
  std::vector<double> numbers;    // when numeric
};
using PreviewFrame = std::vector<PreviewField>;

// An instant query's data.result as the Prometheus data source's "table"
// format makes it: Time, a text field per label (sorted by name), Value.
PreviewFrame TableOf(const nlohmann::json& result);

// Applies `panel`'s transformations in order, as Grafana does, for those
// the dashboard uses (groupingToMatrix, convertFieldType to number, sortBy,
// organize's renames and exclusions); any other is an error.
absl::StatusOr<PreviewFrame> Transform(const nlohmann::json& panel, PreviewFrame frame);

// What a trend panel plots, or why Grafana would refuse to: its one query,
// transformed; options.xField names a numeric field whose values ascend;
// every other numeric field is a curve over it.
struct TrendData {
  std::string x_name;
  std::vector<double> x;
  std::vector<std::pair<std::string, std::vector<double>>> curves;
};
absl::StatusOr<TrendData> QueryTrend(const nlohmann::json& panel, PrometheusServer& prometheus,
                                     const Substitute& substitute);

// The bands a panel's overrides draw: (upper, lower) field names, from each
// byName override that sets custom.fillBelowTo.
std::vector<std::pair<std::string, std::string>> BandsOf(const nlohmann::json& panel);

}  // namespace memaudit::testing

#endif  // MEMAUDIT_TESTS_INTEGRATION_DASHBOARD_PREVIEW_H_
