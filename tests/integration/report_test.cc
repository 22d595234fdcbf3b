// The HTML report renders in a real browser (headless Chromium) with its plot
// and no console errors; CSV and JSON exports match the results.
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
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

}  // namespace
}  // namespace memaudit::testing
