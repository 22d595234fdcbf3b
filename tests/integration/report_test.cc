// The HTML report renders in a real browser (headless Chromium) with its plots
// and no console errors, for membership, exposure and forgetting audits; CSV
// and JSON exports match the results.
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "tests/integration/cluster_fixture.h"

namespace memaudit::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct Report {
  std::string audit_id, kind;
  std::vector<std::string> plots;  // markup each report's plots must hold
};

class ReportTest : public ClusterTest {
 protected:
  // Writes each audit's HTML report, checks its plots are in the page and in
  // the DOM Chromium builds from it, with no console errors, and screenshots it.
  void CheckReportsRender(const std::vector<Report>& reports);
};

TEST_F(ReportTest, HtmlReportRendersInChromiumWithItsPlot) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/2));
  auto submitted = client_->Submit(TinyMembershipSpec());
  MEMAUDIT_ASSERT_OK(submitted);
  ASSERT_EQ(WaitForEnd(submitted->audit_id()).state(), v1::SUCCEEDED);
  const std::string html = dir_ + "/report.html";
  const std::string csv = dir_ + "/csv";
  const std::string json = dir_ + "/results.json";
  const std::string report = RunCapture(
      absl::StrCat(CliCredentialsEnv(), MEMAUDIT_BIN_DIR, "/memaudit report ",
                   submitted->audit_id(), " --coordinator ", cluster_->coordinator_address(),
                   " --html ", html, " --csv ", csv, " --json ", json));
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

TEST_F(ReportTest, ExposureAndForgettingReportsRenderTheirPlots) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/2));
  auto exposure = client_->Submit(TinyExposureSpec());
  MEMAUDIT_ASSERT_OK(exposure);
  auto forgetting = client_->Submit(TinyForgettingSpec());
  MEMAUDIT_ASSERT_OK(forgetting);
  ASSERT_EQ(WaitForEnd(exposure->audit_id()).state(), v1::SUCCEEDED);
  ASSERT_EQ(WaitForEnd(forgetting->audit_id()).state(), v1::SUCCEEDED);
  CheckReportsRender(
      {{exposure->audit_id(),
        "exposure",
        {"class=\"exposure\"", "<polyline class=\"curve\"", "<line class=\"ceiling\"",
         "<circle class=\"canary control\"", "class=\"px-histogram\"", "<rect class=\"bin\"",
         "<polyline class=\"fit\""}},
       {forgetting->audit_id(),
        "forgetting",
        {"class=\"forgetting\"", "<polygon class=\"band accuracy\"",
         "<polyline class=\"curve accuracy\"", "<polyline class=\"curve auc\"",
         "<polyline class=\"curve tpr\"", "<line class=\"chance\""}}});
}

TEST_F(ReportTest, UnlearningAndRelationalReportsRenderTheirPlots) {
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/2));
  auto unlearning = client_->Submit(TinyUnlearningSpec());
  MEMAUDIT_ASSERT_OK(unlearning);
  auto relational = client_->Submit(TinyLinearRelationalSpec());
  MEMAUDIT_ASSERT_OK(relational);
  ASSERT_EQ(WaitForEnd(unlearning->audit_id()).state(), v1::SUCCEEDED);
  ASSERT_EQ(WaitForEnd(relational->audit_id()).state(), v1::SUCCEEDED);
  CheckReportsRender(
      {{unlearning->audit_id(),
        "unlearning",
        {"class=\"unlearning-auc\"", "class=\"unlearning-degcount\"", "<rect class=\"bar\""}},
       {relational->audit_id(),
        "relational",
        {"class=\"relational-rm\"", "class=\"relational-success\""}}});
}

void ReportTest::CheckReportsRender(const std::vector<Report>& reports) {
  for (const Report& r : reports) {
    SCOPED_TRACE(r.kind);
    const std::string html = absl::StrCat(dir_, "/", r.kind, ".html");
    RunCapture(absl::StrCat(CliCredentialsEnv(), MEMAUDIT_BIN_DIR, "/memaudit report ", r.audit_id,
                            " --coordinator ", cluster_->coordinator_address(), " --html ", html));
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
