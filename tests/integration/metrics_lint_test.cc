// `promtool check metrics` accepts what every memaudit process serves on
// /metrics, both while an audit trains and after it is scored.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "tests/integration/cluster_fixture.h"
#include "tests/integration/prometheus_server.h"

namespace memaudit::testing {
namespace {

class MetricsLintTest : public ClusterTest {
 protected:
  // Fetches and lints every process's /metrics; `phase` names the files.
  void LintAll(const std::string& phase) {
    std::vector<std::pair<std::string, int>> endpoints = {
        {"coordinator", cluster_->coordinator_metrics_port()},
        {"scorer", cluster_->scorer_metrics_port()}};
    for (size_t i = 0; i < cluster_->worker_count(); ++i) {
      endpoints.push_back({absl::StrCat("worker-", i), cluster_->worker_metrics_port(i)});
    }
    for (const auto& [name, port] : endpoints) {
      const std::string exposition = HttpGet(port, "/metrics");
      ASSERT_THAT(exposition, ::testing::HasSubstr("# TYPE memaudit_")) << name << " " << phase;
      const PromtoolLint lint = RunPromtool(dir_, absl::StrCat(phase, "-", name), exposition);
      EXPECT_EQ(lint.exit_code, 0) << name << " " << phase << ":\n" << lint.output;
      EXPECT_EQ(lint.output, "") << name << " " << phase;
    }
  }
};

TEST_F(MetricsLintTest, PromtoolAcceptsEveryEndpointDuringAndAfterAnAudit) {
  if (access(kPromtoolBinary, X_OK) != 0) {
    GTEST_SKIP() << kPromtoolBinary << " not installed (scripts/install-deps.sh installs it)";
  }
  StartCluster(/*workers=*/2);
  // promtool's verdict on a known-bad exposition, so a silently broken
  // invocation cannot pass the checks below.
  const PromtoolLint bad =
      RunPromtool(dir_, "bad", "# HELP x_ms latency\n# TYPE x_ms counter\nx_ms 1\n");
  ASSERT_NE(bad.exit_code, 0) << bad.output;

  // A name with what the exposition format must escape (quotes, a
  // backslash) and text beyond ASCII: audit_info carries it as a label.
  v1::AuditSpec spec = TinyMembershipSpec(4, /*epochs=*/20);
  spec.set_name("lint \"quoted\" back\\slash ünïcödé 🐦");
  auto submitted = client_->Submit(spec);
  MEMAUDIT_ASSERT_OK(submitted);
  bool linted_during = false;
  absl::Status watched = client_->Watch(submitted->audit_id(), [&](const v1::AuditEvent& e) {
    if (!linted_during && e.audit().steps_done() > 0) {
      linted_during = true;
      LintAll("during");
    }
    return true;
  });
  MEMAUDIT_ASSERT_OK(watched);
  EXPECT_TRUE(linted_during) << "the audit ended before any progress was reported";
  ASSERT_EQ(client_->Get(submitted->audit_id())->state(), v1::SUCCEEDED);
  LintAll("after");
  EXPECT_THAT(HttpGet(cluster_->coordinator_metrics_port(), "/metrics"),
              ::testing::HasSubstr("name=\"lint \\\"quoted\\\" back\\\\slash ünïcödé 🐦\""));
}

}  // namespace
}  // namespace memaudit::testing
