// The HTML report renders in a real browser (headless Chromium) with its plots
// and no console errors, for membership, exposure and forgetting audits; CSV
// and JSON exports match the results.
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/seeding.h"
#include "gmock/gmock.h"
#include "tests/integration/cluster_fixture.h"

namespace memaudit::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kChromium[] = "/usr/bin/chromium";

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string RunCapture(const std::string& command) {
  std::string out;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) out.append(buffer, n);
  pclose(pipe);
  return out;
}

// Flags that keep Chromium from reaching for the network or a display.
std::string Chromium(const std::string& profile) {
  return absl::StrCat(kChromium,
                      " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
                      " --disable-background-networking --disable-component-update --disable-sync"
                      " --enable-logging=stderr --v=0 --user-data-dir=",
                      profile);
}

class ReportTest : public ClusterTest {};

TEST_F(ReportTest, HtmlReportRendersInChromiumWithItsPlot) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/2));
  auto submitted = client_->Submit(TinyMembershipSpec());
  ASSERT_TRUE(submitted.ok());
  ASSERT_EQ(WaitForEnd(submitted->audit_id()).state(), v1::SUCCEEDED);
  const std::string html = dir_ + "/report.html";
  const std::string csv = dir_ + "/csv";
  const std::string json = dir_ + "/results.json";
  const std::string report = RunCapture(absl::StrCat(
      MEMAUDIT_BIN_DIR, "/memaudit report ", submitted->audit_id(), " --coordinator ",
      cluster_->coordinator_address(), " --html ", html, " --csv ", csv, " --json ", json));
  EXPECT_THAT(report, HasSubstr("lira_online"));

  const std::string page = Slurp(html);
  EXPECT_THAT(page, HasSubstr("<svg"));
  EXPECT_THAT(page, HasSubstr("class=\"curve\""));
  EXPECT_THAT(page, HasSubstr("seed"));
  EXPECT_THAT(page, Not(HasSubstr("<script"))) << "the report must be self-contained";
  EXPECT_THAT(page, Not(HasSubstr("src="))) << "no external resources";
  EXPECT_THAT(Slurp(csv + "/attacks.csv"), HasSubstr("lira_offline_fixed_variance"));
  EXPECT_THAT(Slurp(csv + "/roc.csv"), HasSubstr("audit_id,attack,fpr,tpr"));
  EXPECT_THAT(Slurp(json), HasSubstr("\"tpr_low\""));

  if (access(kChromium, X_OK) != 0) GTEST_SKIP() << "chromium not installed";
  const std::string png = dir_ + "/report.png";
  const std::string shot =
      RunCapture(absl::StrCat(Chromium(dir_ + "/profile-shot"),
                              " --window-size=1200,1400 --screenshot=", png, " file://", html));
  EXPECT_THAT(shot, Not(HasSubstr("CONSOLE"))) << shot;
  EXPECT_THAT(shot, Not(HasSubstr("Uncaught"))) << shot;
  EXPECT_GT(Slurp(png).size(), 10000u) << "the screenshot should hold a rendered page";
  const std::string dom =
      RunCapture(absl::StrCat(Chromium(dir_ + "/profile-dom"), " --dump-dom file://", html));
  EXPECT_THAT(dom, HasSubstr("<polyline class=\"curve\""));
  EXPECT_THAT(dom, Not(HasSubstr("CONSOLE"))) << dom.substr(0, 2000);
}

// An exposure audit small enough for seconds: a 4-digit canary (|R| = 10^4)
// in a few KB of word salad, inserted 1 and 40 times, 200 references.
v1::AuditSpec SmallExposureSpec() {
  static const char* kWords[] = {"the", "cat", "sat", "on",   "a",    "mat",  "and",
                                 "dog", "ran", "far", "from", "home", "rain", "fell"};
  SplitMix64 rng(3);
  std::string text;
  while (text.size() < 8000) {
    text += kWords[rng.Uniform(14)];
    text += rng.Uniform(8) == 0 ? "\n" : " ";
  }
  v1::AuditSpec spec;
  spec.set_name("report-exposure");
  spec.set_seed(5);
  v1::ExposureAudit* e = spec.mutable_exposure();
  e->mutable_corpus()->set_text(text);
  e->mutable_model()->set_units(48);
  e->mutable_model()->set_embedding(16);
  e->mutable_training()->set_learning_rate(0.01);
  e->mutable_training()->set_epochs(6);
  e->mutable_training()->set_batch_size(16);
  e->mutable_training()->set_window(48);
  e->mutable_canary()->set_prefix("pin ");
  e->mutable_canary()->set_digits(4);
  e->add_repeats(1);
  e->add_repeats(40);
  e->set_controls(3);
  e->set_estimator("all");
  e->set_reference_samples(200);
  return spec;
}

// A forgetting audit of two trials with a handful of evaluation points.
v1::AuditSpec SmallForgettingSpec() {
  v1::AuditSpec spec;
  spec.set_name("report-forgetting");
  spec.set_seed(21);
  v1::ForgettingAudit* f = spec.mutable_forgetting();
  f->mutable_dataset()->set_pool_size(2000);
  f->mutable_training()->set_batch_size(64);
  f->mutable_training()->set_steps_before_injection(200);
  f->mutable_training()->set_steps_after_injection(400);
  f->mutable_injected()->set_size(50);
  f->set_trials(2);
  for (uint64_t p : {0, 2, 10, 50, 400}) f->add_eval_points(p);
  return spec;
}

TEST_F(ReportTest, ExposureAndForgettingReportsRenderTheirPlots) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/2));
  auto exposure = client_->Submit(SmallExposureSpec());
  ASSERT_TRUE(exposure.ok()) << exposure.status();
  auto forgetting = client_->Submit(SmallForgettingSpec());
  ASSERT_TRUE(forgetting.ok()) << forgetting.status();
  ASSERT_EQ(WaitForEnd(exposure->audit_id()).state(), v1::SUCCEEDED);
  ASSERT_EQ(WaitForEnd(forgetting->audit_id()).state(), v1::SUCCEEDED);
  struct Report {
    std::string audit_id, kind;
    std::vector<std::string> plots;  // markup each report's plots must hold
  };
  const Report reports[] = {
      {exposure->audit_id(),
       "exposure",
       {"class=\"exposure\"", "<polyline class=\"curve\"", "<line class=\"ceiling\"",
        "<circle class=\"canary control\"", "class=\"px-histogram\"", "<rect class=\"bin\"",
        "<polyline class=\"fit\""}},
      {forgetting->audit_id(),
       "forgetting",
       {"class=\"forgetting\"", "<polygon class=\"band accuracy\"",
        "<polyline class=\"curve accuracy\"", "<polyline class=\"curve auc\"",
        "<polyline class=\"curve tpr\"", "<line class=\"chance\""}}};
  for (const Report& r : reports) {
    SCOPED_TRACE(r.kind);
    const std::string html = absl::StrCat(dir_, "/", r.kind, ".html");
    RunCapture(absl::StrCat(MEMAUDIT_BIN_DIR, "/memaudit report ", r.audit_id, " --coordinator ",
                            cluster_->coordinator_address(), " --html ", html));
    const std::string page = Slurp(html);
    for (const std::string& plot : r.plots) EXPECT_THAT(page, HasSubstr(plot));
    EXPECT_THAT(page, Not(HasSubstr("<script")));
    EXPECT_THAT(page, Not(HasSubstr("src=")));
  }

  if (access(kChromium, X_OK) != 0) GTEST_SKIP() << "chromium not installed";
  for (const Report& r : reports) {
    SCOPED_TRACE(r.kind);
    const std::string html = absl::StrCat(dir_, "/", r.kind, ".html");
    const std::string png = absl::StrCat(dir_, "/", r.kind, ".png");
    const std::string shot =
        RunCapture(absl::StrCat(Chromium(absl::StrCat(dir_, "/profile-shot-", r.kind)),
                                " --window-size=1100,1500 --screenshot=", png, " file://", html));
    EXPECT_THAT(shot, Not(HasSubstr("CONSOLE"))) << shot;
    EXPECT_THAT(shot, Not(HasSubstr("Uncaught"))) << shot;
    EXPECT_GT(Slurp(png).size(), 10000u) << "the screenshot should hold a rendered page";
    // The browser parsed every plot into its DOM.
    const std::string dom = RunCapture(absl::StrCat(
        Chromium(absl::StrCat(dir_, "/profile-dom-", r.kind)), " --dump-dom file://", html));
    for (const std::string& plot : r.plots) EXPECT_THAT(dom, HasSubstr(plot));
    EXPECT_THAT(dom, Not(HasSubstr("CONSOLE"))) << dom.substr(0, 2000);
  }
}

}  // namespace
}  // namespace memaudit::testing
