// The coordinator's operational families, driven through a real Scheduler on
// a fake clock.
#include "services/coordinator/scheduler_metrics.h"

#include <unistd.h>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/coordinator/scheduler_fixture.h"
#include "services/coordinator/worker_presence.h"

namespace memaudit::coordinator {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class SchedulerMetricsTest : public SchedulerFixture {
 protected:
  std::string MustLeaseId() { return MustLease().task.lease_id; }
};

TEST_F(SchedulerMetricsTest, TimesLeasesUntilTheyEndByOutcome) {
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a", SmallMembershipSpec(4)));
  const std::string first = MustLeaseId();
  clock_.AdvanceMs(250);
  MEMAUDIT_ASSERT_OK(scheduler_->Heartbeat(first, 3));  // a renewal is not an end
  clock_.AdvanceMs(250);
  MEMAUDIT_ASSERT_OK(scheduler_->Complete(first));

  const std::string second = MustLeaseId();
  clock_.AdvanceMs(1000);
  MEMAUDIT_ASSERT_OK(scheduler_->ExpireLeases());

  const std::string text = metrics::Exposition(registry_);
  EXPECT_THAT(text, HasSubstr("memaudit_coordinator_task_duration_seconds_count{outcome="
                              "\"succeeded\"} 1"));
  EXPECT_THAT(text, HasSubstr("memaudit_coordinator_task_duration_seconds_sum{outcome="
                              "\"succeeded\"} 0.5"));
  EXPECT_THAT(text, HasSubstr("memaudit_coordinator_task_duration_seconds_sum{outcome="
                              "\"retried\"} 1"));
  EXPECT_THAT(text,
              HasSubstr("memaudit_coordinator_task_retries_total{reason=\"lease_expired\"} 1"));
  EXPECT_THAT(text,
              HasSubstr("memaudit_coordinator_task_retries_total{reason=\"worker_error\"} 0"));
}

TEST_F(SchedulerMetricsTest, QueueDepthCountsOnlyLeasableTasks) {
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a", SmallMembershipSpec(4)));
  MustLeaseId();
  EXPECT_THAT(metrics::Exposition(registry_), HasSubstr("memaudit_coordinator_queue_depth 3\n"));
  MEMAUDIT_ASSERT_OK(scheduler_->Cancel("a"));
  const std::string text = metrics::Exposition(registry_);
  EXPECT_THAT(text, HasSubstr("memaudit_coordinator_queue_depth 0\n"));
  // The cancelled lease ends the timing, as "cancelled".
  EXPECT_THAT(text, HasSubstr("memaudit_coordinator_task_duration_seconds_count{outcome="
                              "\"cancelled\"} 1"));
}

TEST_F(SchedulerMetricsTest, AuditInfoMapsEachAuditToItsKind) {
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a-1", SmallMembershipSpec(4)));
  EXPECT_THAT(metrics::Exposition(registry_),
              HasSubstr("memaudit_coordinator_audit_info{audit=\"a-1\",kind=\"membership\"} 1"));
}

TEST(SchedulerMetricsNullTest, WithoutARegistryEveryCallIsANoOp) {
  SchedulerMetrics metrics(nullptr);
  TaskRecord before, after;
  after.state = TaskState::kLeased;
  after.lease_id = "l";
  metrics.TaskChanged(before, after, 1);
  metrics.TaskRetried("lease expired");
  metrics.WorkerRegistered();
  metrics.SetTotals(StateTotals{});
  metrics.SetTeam("alpha", OwnerUsage{});
  metrics.AuditKnown("a-1", "membership");
  metrics.QuotaRefused("max_spec_bytes");
}

TEST(WorkerPresenceTest, CountsWorkersSeenWithinTheWindow) {
  FakeClock clock;
  prometheus::Registry registry;
  WorkerPresence presence(&clock, /*window_ms=*/1000, &registry);
  presence.Seen("w-1");
  presence.Seen("w-2");
  presence.Seen("");  // not a worker
  EXPECT_EQ(presence.Refresh(), 2u);
  EXPECT_THAT(metrics::Exposition(registry),
              HasSubstr("memaudit_coordinator_workers_connected 2\n"));
  clock.AdvanceMs(600);
  presence.Seen("w-1");
  clock.AdvanceMs(600);  // w-2 is now 1200 ms silent
  EXPECT_EQ(presence.Refresh(), 1u);
  EXPECT_THAT(metrics::Exposition(registry),
              HasSubstr("memaudit_coordinator_workers_connected 1\n"));
  EXPECT_THAT(metrics::Exposition(registry), Not(HasSubstr("w-1")))
      << "worker ids must not become labels";
  clock.AdvanceMs(1001);
  EXPECT_EQ(presence.Refresh(), 0u);
}

}  // namespace
}  // namespace memaudit::coordinator
