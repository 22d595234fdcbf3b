// Every query of deploy/grafana/memaudit.json runs against a live Prometheus
// that scraped one small audit of each kind: it must be valid PromQL, and
// every panel must show data for the audit its family belongs to.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include "absl/strings/str_replace.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "tests/integration/cluster_fixture.h"
#include "tests/integration/dashboard_preview.h"
#include "tests/integration/observed_audit.h"

namespace memaudit::testing {
namespace {

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

// The audit kind whose results a query shows; cluster-health queries belong
// to no kind and are checked against the membership audit's selection.
std::string KindOf(const std::string& expr) {
  for (const char* kind : {"exposure", "forgetting", "unlearning", "relational", "membership"}) {
    if (expr.find(std::string("memaudit_") + kind + "_") != std::string::npos) return kind;
  }
  return "membership";
}

// What Grafana would send with `kind` and its observed audit selected.
std::string Substitute(const std::string& expr, const std::string& kind,
                       const std::string& audit_id) {
  return absl::StrReplaceAll(expr,
                             {{"$__rate_interval", "1m"}, {"$audit", audit_id}, {"$kind", kind}});
}

TEST_F(EveryKindObservedTest, EveryDashboardPanelShowsData) {
  // A broken query must be reported as such, or this test proves nothing.
  auto broken = prometheus().Query("sum(memaudit_coordinator_tasks");
  MEMAUDIT_ASSERT_OK(broken);
  ASSERT_EQ(broken->value("status", ""), "error");

  const nlohmann::json dashboard = LoadDashboard();
  ASSERT_FALSE(dashboard.is_discarded()) << "deploy/grafana/memaudit.json is not valid JSON";
  std::vector<nlohmann::json> panels;
  CollectPanels(dashboard["panels"], &panels);
  ASSERT_GT(panels.size(), 10u);

  std::string all_exprs;
  for (const nlohmann::json& panel : panels) {
    const std::string title = panel.value("title", "");
    ASSERT_TRUE(panel.contains("targets") && !panel["targets"].empty()) << title;
    for (const nlohmann::json& target : panel["targets"]) {
      const std::string raw = target.value("expr", "");
      const std::string kind = KindOf(raw);
      ASSERT_TRUE(observed_->ids.count(kind)) << kind << " was not observed";
      const std::string expr = Substitute(raw, kind, observed_->ids.at(kind));
      all_exprs += expr + "\n";
      ASSERT_FALSE(expr.empty()) << title;
      EXPECT_EQ(expr.find('$'), std::string::npos) << title << ": unknown variable in " << expr;
      auto answer = prometheus().Query(expr);
      MEMAUDIT_ASSERT_OK(answer);
      EXPECT_EQ(answer->value("status", ""), "success") << title << ": " << expr << "\n"
                                                        << answer->dump();
      // Rates need two scrapes of a series, so give fresh series a moment.
      const nlohmann::json result =
          prometheus().WaitFor(expr, [](const nlohmann::json& r) { return !r.empty(); });
      EXPECT_FALSE(result.empty()) << title << ": no data for " << expr;
    }
  }
  // Every kind has its panels, under the documented names.
  for (const char* family : {"memaudit_forgetting_", "memaudit_exposure_", "memaudit_unlearning_",
                             "memaudit_relational_rm_norm"}) {
    EXPECT_THAT(all_exprs, ::testing::HasSubstr(family));
  }
}

// The dashboard drawn from the live Prometheus: every panel has data, and
// the page renders in headless Chromium. MEMAUDIT_DASHBOARD_PNG=FILE keeps the
// screenshot (docs/images/dashboard.png is made this way).
TEST_F(EveryKindObservedTest, DashboardRendersWithDataInChromium) {
  const nlohmann::json dashboard = LoadDashboard();
  ASSERT_FALSE(dashboard.is_discarded());
  const auto substitute = [&](const std::string& expr) {
    const std::string kind = KindOf(expr);
    return Substitute(expr, kind, observed_->ids.at(kind));
  };
  // A busy machine makes scrapes time out while training runs (the interval,
  // and so the timeout, is 1 s); a line needs a few samples, and a rate two
  // scrapes of its series, so wait until every query answers before drawing.
  prometheus().WaitFor("count_over_time(memaudit_coordinator_queue_depth[1m]) >= 3",
                       [](const nlohmann::json& r) { return !r.empty(); });
  std::vector<nlohmann::json> panels;
  CollectPanels(dashboard["panels"], &panels);
  for (const nlohmann::json& panel : panels) {
    for (const nlohmann::json& target : panel["targets"]) {
      prometheus().WaitFor(substitute(target.value("expr", "")),
                           [](const nlohmann::json& r) { return !r.empty(); });
    }
  }
  // Range points fall on whole steps (1 s) before `end`: let one pass, so the
  // last point sees what the instant queries above saw.
  std::this_thread::sleep_for(std::chrono::milliseconds(2000));
  const double end =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  PreviewStats stats;
  const std::string html = DashboardPreviewHtml(dashboard, prometheus(), substitute,
                                                observed_->started_unix_s - 5, end, &stats);
  EXPECT_GT(stats.panels, 10);
  EXPECT_EQ(stats.panels_with_data, stats.panels) << "panels without data: " << stats.empty;
  const std::string page = observed_->dir + "/dashboard.html";
  std::ofstream(page) << html;

  if (access(kChromium, X_OK) != 0) GTEST_SKIP() << "chromium not installed";
  const std::string png = observed_->dir + "/dashboard.png";
  const std::string shot = RunCapture(absl::StrCat(Chromium(observed_->dir + "/profile"),
                                                   " --window-size=1480,3500 --hide-scrollbars "
                                                   "--screenshot=",
                                                   png, " file://", page));
  EXPECT_THAT(shot, ::testing::Not(::testing::HasSubstr("CONSOLE"))) << shot;
  const std::string screenshot = Slurp(png);
  EXPECT_GT(screenshot.size(), 20000u) << "the screenshot should hold a rendered dashboard";
  if (const char* keep = std::getenv("MEMAUDIT_DASHBOARD_PNG"); keep != nullptr) {
    std::ofstream(keep, std::ios::binary) << screenshot;
  }
}

TEST_F(EveryKindObservedTest, DashboardVariablesListEveryKindAndItsAudit) {
  const nlohmann::json dashboard = LoadDashboard();
  ASSERT_FALSE(dashboard.is_discarded());
  const std::regex label_values(R"(^label_values\((.*),\s*(\w+)\)$)");
  int checked = 0;
  for (const auto& [kind, audit_id] : observed_->ids) {
    SCOPED_TRACE(kind);
    std::map<std::string, std::string> expected = {{"kind", kind}, {"audit", audit_id}};
    for (const nlohmann::json& variable : dashboard["templating"]["list"]) {
      if (variable.value("type", "") != "query") continue;
      const std::string name = variable.value("name", "");
      std::smatch match;
      const std::string definition = variable.value("definition", "");
      ASSERT_TRUE(std::regex_match(definition, match, label_values)) << name << ": " << definition;
      ASSERT_EQ(variable["query"].value("query", ""), definition) << name;
      ASSERT_TRUE(expected.count(name)) << "unexpected variable " << name;
      const std::string label = match[2];
      const std::string selector = Substitute(match[1], kind, audit_id);
      std::vector<std::string> values;
      for (int attempt = 0; attempt < 40; ++attempt) {  // the first scrapes may still be due
        auto answer = prometheus().LabelValues(label, selector);
        MEMAUDIT_ASSERT_OK(answer);
        ASSERT_EQ(answer->value("status", ""), "success") << answer->dump();
        values = (*answer)["data"].get<std::vector<std::string>>();
        if (std::find(values.begin(), values.end(), expected[name]) != values.end()) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
      }
      EXPECT_THAT(values, ::testing::Contains(expected[name])) << name;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 2 * 5) << "the kind and audit variables, for each of the five kinds";
}

}  // namespace
}  // namespace memaudit::testing
