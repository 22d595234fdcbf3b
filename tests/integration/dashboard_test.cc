// Every query of deploy/grafana/memaudit.json runs against the live
// Prometheus of PrometheusTest: it must be valid PromQL, and every panel of a
// family that exists today must show data for the observed audit.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "tests/integration/observed_audit.h"

namespace memaudit::testing {
namespace {

// Panels fed by audit kinds other than the observed membership audit say so in
// their description; they must evaluate, but need not return data.
constexpr char kPlannedMarker[] = "Filled by ";

nlohmann::json LoadDashboard() {
  std::ifstream in(std::string(MEMAUDIT_SOURCE_DIR) + "/deploy/grafana/memaudit.json");
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
}

// Every panel, including those nested in collapsed rows.
void CollectPanels(const nlohmann::json& panels, std::vector<nlohmann::json>* out) {
  for (const nlohmann::json& p : panels) {
    if (p.value("type", "") == "row") {
      if (p.contains("panels")) CollectPanels(p["panels"], out);
      continue;
    }
    out->push_back(p);
  }
}

// What Grafana would send for the observed audit.
std::string Substitute(const std::string& expr, const std::string& audit_id) {
  return absl::StrReplaceAll(
      expr, {{"$__rate_interval", "1m"}, {"$audit", audit_id}, {"$kind", "membership"}});
}

TEST_F(PrometheusTest, EveryDashboardQueryEvaluates) {
  // A broken query must be reported as such, or this test proves nothing.
  auto broken = prometheus().Query("sum(memaudit_coordinator_tasks");
  ASSERT_TRUE(broken.ok()) << broken.status();
  ASSERT_EQ(broken->value("status", ""), "error");

  const nlohmann::json dashboard = LoadDashboard();
  ASSERT_FALSE(dashboard.is_discarded()) << "deploy/grafana/memaudit.json is not valid JSON";
  std::vector<nlohmann::json> panels;
  CollectPanels(dashboard["panels"], &panels);
  ASSERT_GT(panels.size(), 10u);

  std::string all_exprs;
  for (const nlohmann::json& panel : panels) {
    const std::string title = panel.value("title", "");
    const bool planned = panel.value("description", "").find(kPlannedMarker) != std::string::npos;
    ASSERT_TRUE(panel.contains("targets") && !panel["targets"].empty()) << title;
    for (const nlohmann::json& target : panel["targets"]) {
      const std::string expr = Substitute(target.value("expr", ""), audit_id());
      all_exprs += expr + "\n";
      ASSERT_FALSE(expr.empty()) << title;
      EXPECT_EQ(expr.find('$'), std::string::npos) << title << ": unknown variable in " << expr;
      auto answer = prometheus().Query(expr);
      ASSERT_TRUE(answer.ok()) << answer.status();
      EXPECT_EQ(answer->value("status", ""), "success") << title << ": " << expr << "\n"
                                                        << answer->dump();
      if (planned) continue;
      // Rates need two scrapes of a series, so give fresh series a moment.
      const nlohmann::json result =
          prometheus().WaitFor(expr, [](const nlohmann::json& r) { return !r.empty(); });
      EXPECT_FALSE(result.empty()) << title << ": no data for " << expr;
    }
  }
  // The planned kinds each have their panels, under the documented names.
  for (const char* family : {"memaudit_forgetting_", "memaudit_exposure_", "memaudit_unlearning_",
                             "memaudit_relational_rm_norm"}) {
    EXPECT_THAT(all_exprs, ::testing::HasSubstr(family));
  }
}

TEST_F(PrometheusTest, DashboardVariablesListTheObservedAudit) {
  const nlohmann::json dashboard = LoadDashboard();
  ASSERT_FALSE(dashboard.is_discarded());
  std::map<std::string, std::string> expected = {{"kind", "membership"}, {"audit", audit_id()}};
  const std::regex label_values(R"(^label_values\((.*),\s*(\w+)\)$)");
  int checked = 0;
  for (const nlohmann::json& variable : dashboard["templating"]["list"]) {
    if (variable.value("type", "") != "query") continue;
    const std::string name = variable.value("name", "");
    std::smatch match;
    const std::string definition = variable.value("definition", "");
    ASSERT_TRUE(std::regex_match(definition, match, label_values)) << name << ": " << definition;
    ASSERT_EQ(variable["query"].value("query", ""), definition) << name;
    ASSERT_TRUE(expected.count(name)) << "unexpected variable " << name;
    const std::string label = match[2];
    const std::string selector = Substitute(match[1], audit_id());
    std::vector<std::string> values;
    for (int attempt = 0; attempt < 40; ++attempt) {  // the first scrapes may still be due
      auto answer = prometheus().LabelValues(label, selector);
      ASSERT_TRUE(answer.ok()) << answer.status();
      ASSERT_EQ(answer->value("status", ""), "success") << answer->dump();
      values = (*answer)["data"].get<std::vector<std::string>>();
      if (std::find(values.begin(), values.end(), expected[name]) != values.end()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    EXPECT_THAT(values, ::testing::Contains(expected[name])) << name;
    ++checked;
  }
  EXPECT_EQ(checked, 2) << "the dashboard must offer the kind and audit variables";
}

}  // namespace
}  // namespace memaudit::testing
