// The scorer crashing mid-audit loses nothing and changes no number.
#include <signal.h>

#include "common/testing/status_matchers.h"
#include "tests/integration/cluster_fixture.h"

namespace memaudit::testing {
namespace {

class ScorerRestartTest : public ClusterTest {};

TEST_F(ScorerRestartTest, SigkillMidAuditGivesIdenticalResults) {
  const v1::AuditSpec spec = TinyMembershipSpec(4, 8);
  ASSERT_NO_FATAL_FAILURE(RunBaseline(spec));

  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/1, /*lease_ttl_ms=*/10000, "-crash"));
  auto submitted = client_->Submit(spec);
  MEMAUDIT_ASSERT_OK(submitted);
  int succeeded = 0;
  bool crashed = false;
  absl::Status watched = client_->Watch(submitted->audit_id(), [&](const v1::AuditEvent& e) {
    if (e.type() == v1::TASK_SUCCEEDED && ++succeeded == 2 && !crashed) {
      crashed = true;
      MEMAUDIT_EXPECT_OK(cluster_->RestartScorer(SIGKILL));
    }
    return true;
  });
  MEMAUDIT_ASSERT_OK(watched);
  ASSERT_TRUE(crashed);
  ASSERT_EQ(client_->Get(submitted->audit_id())->state(), v1::SUCCEEDED);

  // WatchResults on the restarted scorer ends with the complete results.
  const std::vector<v1::AuditResults> updates = WatchResults(submitted->audit_id());
  ASSERT_FALSE(updates.empty());
  const v1::AuditResults& last = updates.back();
  ASSERT_TRUE(last.complete());
  EXPECT_EQ(Numbers(last), Numbers(baseline_));
  auto report = client_->Report(submitted->audit_id());
  MEMAUDIT_ASSERT_OK(report);
  EXPECT_EQ(Numbers(*report), Numbers(baseline_));
}

}  // namespace
}  // namespace memaudit::testing
