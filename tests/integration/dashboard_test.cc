// Every query of deploy/grafana/memaudit.json runs against a live Prometheus
// that scraped one small audit of each kind (and a forgetting audit with LM
// canaries): it must be valid PromQL, and every panel must show data for the
// audit its family belongs to. Curves over steps must be what Grafana's trend
// panel accepts (a numeric x that ascends) with their bands around the mean,
// and the audit variable must show each audit's name and team.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/messages/audit_kinds.h"
#include "common/testing/random_text.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "tests/integration/cluster_fixture.h"
#include "tests/integration/dashboard_preview.h"
#include "tests/integration/observed_audit.h"

namespace memaudit::testing {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

// The key of the LM-canary forgetting audit in Observed::ids (its kind is
// "forgetting"; the MI-curve audit holds that key).
constexpr char kCanaries[] = "forgetting-canaries";

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

// The observed audit whose results a query shows (a key of Observed::ids);
// cluster-health and per-audit queries belong to no kind and are checked
// against the membership audit's selection.
std::string KeyOf(const std::string& expr) {
  if (expr.find("memaudit_forgetting_canary_") != std::string::npos ||
      expr.find("memaudit_forgetting_extractable_") != std::string::npos) {
    return kCanaries;
  }
  // The observed dp_audit is the audit with a gate (TinyDpAuditSpec).
  if (expr.find("memaudit_gate_") != std::string::npos) return "dp_audit";
  for (AuditKind kind : AllAuditKinds()) {
    const std::string name = AuditKindName(kind);
    if (expr.find("memaudit_" + name + "_") != std::string::npos) return name;
  }
  return "membership";
}

std::string KindOfKey(const std::string& key) { return key == kCanaries ? "forgetting" : key; }

// What Grafana would send with the audit of `key` (and its kind) selected.
std::string Fill(const std::string& expr, const std::string& key, const std::string& id) {
  return absl::StrReplaceAll(
      expr, {{"$__rate_interval", "1m"}, {"$audit", id}, {"$kind", KindOfKey(key)}});
}

// Hostile input is normal: quotes, a backslash, non-ASCII text, and more
// characters than audit_info keeps (64). Within the spec's rules: at most
// 128 bytes, no control characters.
const char kCanaryName[] =
    "canaries \"quoted\" back\\slash ünïcödé 🐦 – a name longer than any dashboard shows";

// The first `n` characters of valid UTF-8 `text`.
std::string FirstChars(const std::string& text, size_t n) {
  size_t chars = 0, i = 0;
  for (; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80 && chars++ == n) break;
  }
  return text.substr(0, i);
}

size_t Chars(const std::string& text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

// memaudit_coordinator_audit_info's name label for a (printable) name.
std::string NameLabel(const std::string& name) {
  return Chars(name) <= 64 ? name : FirstChars(name, 63) + "…";
}

// A forgetting audit with LM canaries in a character LM, small enough to
// train in seconds: canaries injected once or 16 times, and controls; and
// held-out sequences inserted 16 times (extractable memorization).
v1::AuditSpec TinyCanarySpec() {
  v1::AuditSpec spec;
  spec.set_name(kCanaryName);
  spec.set_seed(21);
  v1::ForgettingAudit* f = spec.mutable_forgetting();
  v1::ForgettingCanaries* c = f->mutable_canaries();
  c->mutable_corpus()->set_text(RandomLetterLines(20000));
  c->mutable_model()->set_units(16);
  c->mutable_model()->set_embedding(8);
  c->mutable_canary()->set_prefix("pin ");
  c->mutable_canary()->set_digits(3);
  c->add_repeats(1);
  c->add_repeats(16);
  c->set_per_group(2);
  c->set_controls(2);
  c->set_window(24);
  v1::ExtractableSpec* x = c->mutable_extractable();
  x->set_prefix_chars(8);
  x->set_suffix_chars(8);
  x->add_duplicates(16);
  x->set_sequences(2);
  f->mutable_training()->set_learning_rate(0.01);
  f->mutable_training()->set_batch_size(16);
  f->mutable_training()->set_steps_before_injection(50);
  f->mutable_training()->set_steps_after_injection(200);
  f->set_trials(2);
  for (uint64_t p : {0, 25, 100, 200}) f->add_eval_points(p);
  return spec;
}

struct CanaryAudit {
  v1::Audit audit;
  v1::AuditResults results;
  std::string error;
};

// The observed suite's cluster runs one more audit: a forgetting audit with
// LM canaries, whose families the canary panels show. Run once, by the first
// test that needs it, and recorded under kCanaries in `observed`'s ids.
const CanaryAudit& EnsureCanaries(Observed* observed) {
  static CanaryAudit* canaries = nullptr;
  if (canaries != nullptr) return *canaries;
  canaries = new CanaryAudit();
  auto submitted = observed->client->Submit(TinyCanarySpec());
  if (!submitted.ok()) {
    canaries->error = submitted.status().ToString();
    return *canaries;
  }
  const std::string id = submitted->audit_id();
  absl::Status watched = observed->client->Watch(id, [](const v1::AuditEvent&) { return true; });
  auto audit = observed->client->Get(id);
  auto results = observed->client->Report(id);
  if (!watched.ok() || !audit.ok() || !results.ok()) {
    canaries->error = absl::StrCat("audit ", id, " did not finish: ", watched.ToString());
    return *canaries;
  }
  canaries->audit = *audit;
  canaries->results = *results;
  observed->ids[kCanaries] = id;
  const std::string settled = absl::StrCat(
      "count(memaudit_forgetting_canary_exposure_high_log2{audit=\"", id,
      "\"}) > 0 and on() memaudit_coordinator_audit_progress_ratio{audit=\"", id, "\"} == 1");
  if (observed->prometheus
          ->WaitFor(
              settled, [](const nlohmann::json& r) { return !r.empty(); }, 30000)
          .empty()) {
    canaries->error = absl::StrCat("Prometheus never scraped the finished audit: ", settled);
  }
  return *canaries;
}

// Loads the dashboard and runs the canary audit once: what every test below
// starts from.
void Prepare(Observed* observed, nlohmann::json* dashboard) {
  const CanaryAudit& canaries = EnsureCanaries(observed);
  ASSERT_EQ(canaries.error, "");
  ASSERT_EQ(canaries.audit.state(), v1::SUCCEEDED) << canaries.audit.error();
  *dashboard = LoadDashboard();
  ASSERT_FALSE(dashboard->is_discarded()) << "deploy/grafana/memaudit.json is not valid JSON";
}

// A query as Grafana sends it with the audit its family belongs to selected.
Substitute SubstituteFor(const Observed* observed) {
  return [observed](const std::string& expr) {
    const std::string key = KeyOf(expr);
    return Fill(expr, key, observed->ids.at(key));
  };
}

// Every panel Grafana draws, a repeated one once per value.
std::vector<nlohmann::json> DrawnPanels(const nlohmann::json& dashboard, Observed* observed) {
  std::vector<nlohmann::json> panels, drawn;
  CollectPanels(dashboard["panels"], &panels);
  for (const nlohmann::json& p : panels) {
    for (nlohmann::json& d :
         ExpandRepeats(dashboard, p, *observed->prometheus, SubstituteFor(observed))) {
      drawn.push_back(std::move(d));
    }
  }
  return drawn;
}

// Every audit of the suite with its key, and what its report says.
struct KeyedAudit {
  std::string key;
  v1::Audit audit;
  v1::AuditResults results;
};
std::vector<KeyedAudit> Audits(Observed* observed) {
  const CanaryAudit& canaries = EnsureCanaries(observed);
  std::vector<KeyedAudit> out;
  for (const auto& [key, id] : observed->ids) {
    if (key == kCanaries) {
      out.push_back({key, canaries.audit, canaries.results});
      continue;
    }
    for (size_t i = 0; i < observed->audits.size(); ++i) {
      if (observed->audits[i].audit_id() == id) {
        out.push_back({key, observed->audits[i], observed->results[i]});
      }
    }
  }
  return out;
}

// A trend panel's data once it has `points` steps (or after 30 s): a curve is
// published point by point, and Prometheus may not have scraped the last yet.
absl::StatusOr<TrendData> QueryTrendOf(const nlohmann::json& panel, PrometheusServer& prometheus,
                                       const Substitute& substitute, size_t points) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (true) {
    absl::StatusOr<TrendData> data = QueryTrend(panel, prometheus, substitute);
    if (!data.ok() || data->x.size() >= points || std::chrono::steady_clock::now() > deadline) {
      return data;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

// Grafana keys a panel's links, edits and repeats by its id: one each.
TEST(DashboardJsonTest, EveryPanelHasItsOwnId) {
  const nlohmann::json dashboard = LoadDashboard();
  ASSERT_FALSE(dashboard.is_discarded());
  std::set<int> ids;
  std::function<void(const nlohmann::json&)> walk = [&](const nlohmann::json& panels) {
    for (const nlohmann::json& p : panels) {
      EXPECT_TRUE(ids.insert(p.value("id", -1)).second)
          << "id " << p.value("id", -1) << " again: " << p.value("title", "");
      if (p.contains("panels")) walk(p["panels"]);
    }
  };
  walk(dashboard["panels"]);
}

TEST_F(EveryKindObservedTest, EveryDashboardPanelShowsData) {
  nlohmann::json dashboard;
  ASSERT_NO_FATAL_FAILURE(Prepare(observed_, &dashboard));
  const Substitute sub = SubstituteFor(observed_);
  // A broken query must be reported as such, or this test proves nothing.
  auto broken = prometheus().Query("sum(memaudit_coordinator_tasks");
  MEMAUDIT_ASSERT_OK(broken);
  ASSERT_EQ(broken->value("status", ""), "error");

  const std::vector<nlohmann::json> panels = DrawnPanels(dashboard, observed_);
  ASSERT_GT(panels.size(), 10u);
  std::string all_exprs;
  // A Grafana variable ($audit, ${kind}) left in a query; $1 in a
  // label_replace is the regex's group, not a variable.
  static const std::regex variable(R"(\$\{?[A-Za-z_])");
  for (const nlohmann::json& panel : panels) {
    const std::string title = panel.value("title", "");
    ASSERT_TRUE(panel.contains("targets") && !panel["targets"].empty()) << title;
    for (const nlohmann::json& target : panel["targets"]) {
      const std::string expr = sub(target.value("expr", ""));
      all_exprs += expr + "\n";
      ASSERT_FALSE(expr.empty()) << title;
      EXPECT_FALSE(std::regex_search(expr, variable)) << title << ": unknown variable in " << expr;
      auto answer = prometheus().Query(expr);
      MEMAUDIT_ASSERT_OK(answer);
      EXPECT_EQ(answer->value("status", ""), "success") << title << ": " << expr << "\n"
                                                        << answer->dump();
      // Rates need two scrapes of a series, so give fresh series a moment.
      const nlohmann::json result =
          prometheus().WaitFor(expr, [](const nlohmann::json& r) { return !r.empty(); });
      EXPECT_FALSE(result.empty()) << title << ": no data for " << expr;
    }
    if (panel.value("type", "") != "trend") continue;
    // What Grafana's trend panel would draw: a numeric x that ascends (it
    // refuses anything else), each curve with a point at every x.
    auto data = QueryTrend(panel, prometheus(), sub);
    MEMAUDIT_ASSERT_OK(data) << title;
    EXPECT_GE(data->x.size(), 2u) << title;
    EXPECT_FALSE(data->curves.empty()) << title;
    for (const auto& [upper, lower] : BandsOf(panel)) {
      std::map<std::string, std::vector<double>> curves(data->curves.begin(), data->curves.end());
      ASSERT_TRUE(curves.count(upper) && curves.count(lower)) << title << ": " << upper << lower;
      for (size_t i = 0; i < data->x.size(); ++i) {
        EXPECT_LE(curves[lower][i], curves[upper][i]) << title << " at " << data->x[i];
      }
    }
  }
  // Every kind has its panels, under the documented names.
  for (const char* family :
       {"memaudit_forgetting_mi_accuracy_low_ratio", "memaudit_forgetting_canary_exposure_low_log2",
        "memaudit_exposure_", "memaudit_unlearning_", "memaudit_relational_rm_norm",
        "memaudit_coordinator_audit_progress_ratio", "memaudit_scorer_audit_warnings"}) {
    EXPECT_THAT(all_exprs, HasSubstr(family));
  }
}

// The forgetting curve is an XY curve over steps since injection, in
// numeric order, with the 95% interval around the mean at every point: the
// audit's own evaluation points and the numbers in its report.
TEST_F(EveryKindObservedTest, ForgettingCurveIsBandedAndOrderedByStepsNumerically) {
  nlohmann::json dashboard;
  ASSERT_NO_FATAL_FAILURE(Prepare(observed_, &dashboard));
  const Substitute sub = SubstituteFor(observed_);
  const v1::AuditResults* forgetting = nullptr;
  for (const v1::AuditResults& r : observed_->results) {
    if (r.audit_id() == observed_->ids.at("forgetting")) forgetting = &r;
  }
  ASSERT_NE(forgetting, nullptr);
  const auto& curve = forgetting->forgetting().curve();
  ASSERT_GE(curve.size(), 3);
  std::vector<nlohmann::json> panels;
  CollectPanels(dashboard["panels"], &panels);
  const auto mi = std::find_if(panels.begin(), panels.end(), [](const nlohmann::json& p) {
    return p.value("title", "") == "MI accuracy by steps since injection";
  });
  ASSERT_NE(mi, panels.end());
  EXPECT_EQ(mi->value("type", ""), "trend") << "a bar chart orders steps as text";
  EXPECT_THAT(BandsOf(*mi), Contains(std::pair<std::string, std::string>("high", "low")));
  auto data = QueryTrendOf(*mi, prometheus(), sub, curve.size());
  MEMAUDIT_ASSERT_OK(data);
  ASSERT_EQ(data->x.size(), static_cast<size_t>(curve.size()));
  std::map<std::string, std::vector<double>> curves(data->curves.begin(), data->curves.end());
  for (int i = 0; i < curve.size(); ++i) {
    SCOPED_TRACE(curve[i].steps_since_injection());
    // The report lists points in step order; so must the panel.
    EXPECT_EQ(data->x[i], static_cast<double>(curve[i].steps_since_injection()));
    EXPECT_NEAR(curves["MI accuracy"][i], curve[i].accuracy().mean(), 1e-9);
    EXPECT_NEAR(curves["low"][i], curve[i].accuracy().low(), 1e-9);
    EXPECT_NEAR(curves["high"][i], curve[i].accuracy().high(), 1e-9);
    EXPECT_LE(curves["low"][i], curves["MI accuracy"][i]);
    EXPECT_GE(curves["high"][i], curves["MI accuracy"][i]);
  }

  // LM canaries: one banded panel per repeat count, ×0 the controls.
  const v1::ForgettingResults& lm = EnsureCanaries(observed_).results.forgetting();
  const auto band = std::find_if(panels.begin(), panels.end(), [](const nlohmann::json& p) {
    return p.value("repeat", "") == "repeats";
  });
  ASSERT_NE(band, panels.end());
  const std::vector<nlohmann::json> repeated = ExpandRepeats(dashboard, *band, prometheus(), sub);
  ASSERT_EQ(repeated.size(), static_cast<size_t>(lm.exposure_curves_size()));
  for (const nlohmann::json& panel : repeated) {
    SCOPED_TRACE(panel.value("title", ""));
    const v1::ForgettingExposureCurve* group = nullptr;
    for (const v1::ForgettingExposureCurve& c : lm.exposure_curves()) {
      if (panel.value("title", "").find(absl::StrCat("×", c.repeats(), ":")) != std::string::npos) {
        group = &c;
      }
    }
    ASSERT_NE(group, nullptr);
    auto canary = QueryTrendOf(panel, prometheus(), sub, group->points_size());
    MEMAUDIT_ASSERT_OK(canary);
    ASSERT_EQ(canary->x.size(), static_cast<size_t>(group->points_size()));
    std::map<std::string, std::vector<double>> c(canary->curves.begin(), canary->curves.end());
    for (int i = 0; i < group->points_size(); ++i) {
      const v1::ForgettingExposurePoint& p = group->points(i);
      EXPECT_EQ(canary->x[i], static_cast<double>(p.steps_since_injection()));
      EXPECT_NEAR(c["injected"][i], p.exposure().mean(), 1e-9);
      EXPECT_NEAR(c["low"][i], p.exposure().low(), 1e-9);
      EXPECT_NEAR(c["high"][i], p.exposure().high(), 1e-9);
      EXPECT_NEAR(c["baseline arm"][i], p.baseline_exposure().mean(), 1e-9);
    }
  }
}

// memaudit_coordinator_audit_info names each audit's name and team, the
// progress gauge reads 1 once it succeeded, and the warnings gauge counts
// its results' warnings.
TEST_F(EveryKindObservedTest, PerAuditGaugesCarryNameTeamProgressAndWarnings) {
  nlohmann::json dashboard;
  ASSERT_NO_FATAL_FAILURE(Prepare(observed_, &dashboard));
  ASSERT_GT(Chars(kCanaryName), 64u) << "the canary audit's name must be cut";
  for (const KeyedAudit& a : Audits(observed_)) {
    SCOPED_TRACE(a.key);
    const std::string selector = absl::StrCat("{audit=\"", a.audit.audit_id(), "\"}");
    const nlohmann::json info =
        prometheus().WaitFor("memaudit_coordinator_audit_info" + selector,
                             [](const nlohmann::json& r) { return r.size() == 1; });
    ASSERT_EQ(info.size(), 1u);
    const nlohmann::json& labels = info[0]["metric"];
    EXPECT_EQ(labels.value("kind", ""), KindOfKey(a.key));
    EXPECT_EQ(labels.value("name", ""), NameLabel(a.audit.name()));
    EXPECT_EQ(labels.value("team", ""), a.audit.team());
    EXPECT_EQ(prometheus().WaitForValue("memaudit_coordinator_audit_progress_ratio" + selector, 1),
              1);
    const double warnings = a.results.warnings_size();
    EXPECT_EQ(prometheus().WaitForValue("memaudit_scorer_audit_warnings" + selector, warnings),
              warnings);
  }
}

// The dashboard drawn from the live Prometheus: every panel has data, and
// the page renders in headless Chromium. MEMAUDIT_DASHBOARD_PNG=FILE keeps the
// screenshot (docs/images/dashboard.png is made this way).
TEST_F(EveryKindObservedTest, DashboardRendersWithDataInChromium) {
  nlohmann::json dashboard;
  ASSERT_NO_FATAL_FAILURE(Prepare(observed_, &dashboard));
  const Substitute substitute = SubstituteFor(observed_);
  // A busy machine makes scrapes time out while training runs (the interval,
  // and so the timeout, is 1 s); a line needs a few samples, and a rate two
  // scrapes of its series, so wait until every query answers before drawing.
  prometheus().WaitFor("count_over_time(memaudit_coordinator_queue_depth[1m]) >= 3",
                       [](const nlohmann::json& r) { return !r.empty(); });
  for (const nlohmann::json& panel : DrawnPanels(dashboard, observed_)) {
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
  // Curves over steps are drawn as curves, with their bands.
  EXPECT_NE(html.find("class=\"panel trend\""), std::string::npos) << "no curve drawn";
  EXPECT_NE(html.find("class=\"band\""), std::string::npos) << "no band drawn";
  const std::string page = observed_->dir + "/dashboard.html";
  std::ofstream(page) << html;

  if (access(kChromium, X_OK) != 0) GTEST_SKIP() << "chromium not installed";
  const std::string png = observed_->dir + "/dashboard.png";
  const std::string shot = RunCapture(absl::StrCat(Chromium(observed_->dir + "/profile"),
                                                   " --window-size=1480,4200 --hide-scrollbars "
                                                   "--screenshot=",
                                                   png, " file://", page));
  EXPECT_THAT(shot, ::testing::Not(HasSubstr("CONSOLE"))) << shot;
  const std::string screenshot = Slurp(png);
  EXPECT_GT(screenshot.size(), 20000u) << "the screenshot should hold a rendered dashboard";
  if (const char* keep = std::getenv("MEMAUDIT_DASHBOARD_PNG"); keep != nullptr) {
    std::ofstream(keep, std::ios::binary) << screenshot;
  }
}

// Grafana's query_result: each series as `name{label="value",...} value
// timestamp_ms`, labels in the order Prometheus sends them (sorted), values
// not escaped.
std::vector<std::string> QueryResultLines(const nlohmann::json& result) {
  std::vector<std::string> lines;
  for (const nlohmann::json& r : result) {
    std::string line = r["metric"].value("__name__", "") + "{";
    bool first = true;
    for (const auto& [label, value] : r["metric"].items()) {
      if (label == "__name__") continue;
      absl::StrAppend(&line, first ? "" : ",", label, "=\"", value.get<std::string>(), "\"");
      first = false;
    }
    absl::StrAppend(&line, "} ", r["value"][1].get<std::string>(), " ",
                    static_cast<int64_t>(r["value"][0].get<double>() * 1000));
    lines.push_back(line);
  }
  return lines;
}

struct VariableOption {
  std::string text, value;
};

// A variable's regex as Grafana applies it: a JavaScript /regex/ whose named
// groups `value` and `text` pick the option's value and shown text (either
// standing for both when the other is empty); a line it does not match is
// no option.
std::vector<VariableOption> ApplyRegex(const std::string& js,
                                       const std::vector<std::string>& lines) {
  EXPECT_TRUE(js.size() > 2 && js.front() == '/' && js.back() == '/') << js;
  std::string pattern = js.substr(1, js.size() - 2);
  // std::regex has no named groups: number them by their opening parenthesis.
  std::map<std::string, size_t> groups;
  size_t group = 0;
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\') {
      ++i;
    } else if (in_class) {
      in_class = c != ']';
    } else if (c == '[') {
      in_class = true;
    } else if (c == '(') {
      if (pattern.compare(i, 3, "(?<") == 0 && pattern[i + 3] != '=' && pattern[i + 3] != '!') {
        const size_t close = pattern.find('>', i);
        groups[pattern.substr(i + 3, close - i - 3)] = ++group;
        pattern.erase(i + 1, close - i);
      } else if (pattern.compare(i, 2, "(?") != 0) {
        ++group;
      }
    }
  }
  const std::regex re(pattern, std::regex::ECMAScript);
  std::vector<VariableOption> options;
  for (const std::string& line : lines) {
    std::smatch m;
    if (!std::regex_search(line, m, re)) continue;
    const std::string value = groups.count("value") ? m[groups["value"]].str() : "";
    const std::string text = groups.count("text") ? m[groups["text"]].str() : "";
    options.push_back({text.empty() ? value : text, value.empty() ? text : value});
  }
  return options;
}

TEST_F(EveryKindObservedTest, DashboardVariablesListEveryKindAndEachAuditByName) {
  nlohmann::json dashboard;
  ASSERT_NO_FATAL_FAILURE(Prepare(observed_, &dashboard));
  const std::regex label_values(R"(^label_values\((.*),\s*(\w+)\)$)");
  const std::regex query_result(R"(^query_result\((.*)\)$)");
  int checked = 0;
  for (const KeyedAudit& a : Audits(observed_)) {
    const std::string& key = a.key;
    const v1::Audit& audit = a.audit;
    SCOPED_TRACE(key);
    const std::string id = audit.audit_id();
    for (const nlohmann::json& variable : dashboard["templating"]["list"]) {
      if (variable.value("type", "") != "query") continue;
      const std::string name = variable.value("name", "");
      const std::string definition = variable.value("definition", "");
      ASSERT_EQ(variable["query"].value("query", ""), definition) << name;
      std::smatch match;
      if (name == "kind" || name == "repeats") {
        ASSERT_TRUE(std::regex_match(definition, match, label_values)) << name;
        if (name == "repeats" && key != kCanaries) continue;
        // The kind, or every repeat count of the canary audit, controls (0)
        // included.
        std::vector<std::string> expected = {KindOfKey(key)};
        if (name == "repeats") {
          expected.clear();
          for (const auto& c : a.results.forgetting().exposure_curves()) {
            expected.push_back(absl::StrCat(c.repeats()));
          }
        }
        auto answer = prometheus().LabelValues(match[2], Fill(match[1], key, id));
        MEMAUDIT_ASSERT_OK(answer);
        ASSERT_EQ(answer->value("status", ""), "success") << answer->dump();
        const auto values = (*answer)["data"].get<std::vector<std::string>>();
        for (const std::string& e : expected) EXPECT_THAT(values, Contains(e)) << name;
        ++checked;
        continue;
      }
      ASSERT_EQ(name, "audit") << "unexpected variable";
      ASSERT_TRUE(std::regex_match(definition, match, query_result)) << definition;
      auto answer = prometheus().Query(Fill(match[1], key, id));
      MEMAUDIT_ASSERT_OK(answer);
      ASSERT_EQ(answer->value("status", ""), "success") << answer->dump();
      const std::vector<VariableOption> options =
          ApplyRegex(variable.value("regex", ""), QueryResultLines((*answer)["data"]["result"]));
      // Each audit of the kind is an option: its id the value, its name and
      // team (when it has one) the text.
      const std::string title = audit.team().empty()
                                    ? NameLabel(audit.name())
                                    : absl::StrCat(NameLabel(audit.name()), " · ", audit.team());
      const auto option = std::find_if(options.begin(), options.end(),
                                       [&](const VariableOption& o) { return o.value == id; });
      ASSERT_NE(option, options.end()) << answer->dump();
      EXPECT_EQ(option->text, title);
      for (const VariableOption& o : options) EXPECT_THAT(o.value, ::testing::StartsWith("a-"));
      ++checked;
    }
  }
  // Kind and audit for each kind's audit and the canary one, repeats for it.
  EXPECT_EQ(checked, 2 * (AllAuditKinds().size() + 1) + 1);
}

}  // namespace
}  // namespace memaudit::testing
