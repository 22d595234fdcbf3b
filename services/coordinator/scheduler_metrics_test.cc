// The coordinator's operational families, driven through a real Scheduler on
// a fake clock.
#include "services/coordinator/scheduler_metrics.h"

#include <unistd.h>

#include "common/testing/promtool.h"
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
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a", spec::SmallMembershipSpec(4)));
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
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a", spec::SmallMembershipSpec(4)));
  MustLeaseId();
  EXPECT_THAT(metrics::Exposition(registry_), HasSubstr("memaudit_coordinator_queue_depth 3\n"));
  MEMAUDIT_ASSERT_OK(scheduler_->Cancel("a"));
  const std::string text = metrics::Exposition(registry_);
  EXPECT_THAT(text, HasSubstr("memaudit_coordinator_queue_depth 0\n"));
  // The cancelled lease ends the timing, as "cancelled".
  EXPECT_THAT(text, HasSubstr("memaudit_coordinator_task_duration_seconds_count{outcome="
                              "\"cancelled\"} 1"));
}

TEST_F(SchedulerMetricsTest, AuditInfoMapsEachAuditToItsKindNameAndTeam) {
  Submission submission;
  submission.audit_id = "a-1";
  submission.spec = spec::SmallMembershipSpec(4);
  submission.spec.set_name("nightly sweep");
  submission.caller = Caller::Team("alpha");
  MEMAUDIT_ASSERT_OK(scheduler_->Submit(submission));
  // An audit from before owners were kept: its team is empty.
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a-2", spec::SmallMembershipSpec(4)));
  const std::string text = metrics::Exposition(registry_);
  EXPECT_THAT(text, HasSubstr("memaudit_coordinator_audit_info{audit=\"a-1\",kind=\"membership\","
                              "name=\"nightly sweep\",team=\"alpha\"} 1"));
  EXPECT_THAT(text, HasSubstr("memaudit_coordinator_audit_info{audit=\"a-2\",kind=\"membership\","
                              "name=\"small\",team=\"\"} 1"));
  // A restart publishes the same series again, from the store.
  Reopen();
  EXPECT_THAT(metrics::Exposition(registry_),
              HasSubstr("name=\"nightly sweep\",team=\"alpha\"} 1"));
}

TEST_F(SchedulerMetricsTest, HostileNamesAreBoundedSanitisedAndEscaped) {
  // Names come from whoever submits, within the spec's rules (at most 128
  // bytes, no control characters): quotes and backslashes (escaped by the
  // exposition), a byte that is not UTF-8, a right-to-left override, and
  // more characters than a dashboard shows.
  const std::string hostile = "evil\" name=\"x\\y \xff\xe2\x80\xae" + std::string(100, 'z');
  Submission submission;
  submission.audit_id = "a-1";
  submission.spec = spec::SmallMembershipSpec(4);
  submission.spec.set_name(hostile);
  MEMAUDIT_ASSERT_OK(scheduler_->Submit(submission));
  const std::string text = metrics::Exposition(registry_);
  const std::string shown = LabelText(hostile);
  EXPECT_EQ(shown.substr(0, 22), "evil\" name=\"x\\y \xef\xbf\xbd\xef\xbf\xbd");
  EXPECT_THAT(text, HasSubstr("name=\"evil\\\" name=\\\"x\\\\y \xef\xbf\xbd\xef\xbf\xbdzzz"));
  EXPECT_THAT(text, HasSubstr("zzz\xe2\x80\xa6\",team=\"\"} 1"));  // cut, ending in "…"
  EXPECT_THAT(text, Not(HasSubstr(std::string(50, 'z'))));
  // Prometheus' own parser and linter accept it.
  const auto check = memaudit::testing::CheckMetricsWithPromtool(text);
  if (!check.has_value()) GTEST_SKIP() << "promtool not installed";
  EXPECT_EQ(check->status, 0) << check->output;
}

TEST(LabelTextTest, KeepsPrintableTextAndBoundsTheRest) {
  EXPECT_EQ(LabelText("quickstart"), "quickstart");
  EXPECT_EQ(LabelText(""), "");
  EXPECT_EQ(LabelText("größe 日本 🐦 \"q\" \\"), "größe 日本 🐦 \"q\" \\");
  EXPECT_EQ(LabelText("a\tb\r\nc"), "a b  c");
  EXPECT_EQ(LabelText(std::string("a\0b\x7f\xc2\x85", 6)),
            "a\xef\xbf\xbd"
            "b\xef\xbf\xbd\xef\xbf\xbd");
  // Not UTF-8: a stray continuation byte, a cut sequence, an overlong "/",
  // an encoded surrogate, past U+10FFFF.
  for (const std::string bad :
       {"\x80", "\xe6\x97", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80"}) {
    const std::string shown = LabelText("<" + bad + ">");
    EXPECT_EQ(shown.front(), '<') << bad;
    EXPECT_EQ(shown.back(), '>') << bad;
    EXPECT_THAT(shown, HasSubstr("\xef\xbf\xbd")) << bad;
    EXPECT_THAT(shown, Not(HasSubstr(bad))) << bad;
  }
  // Right-to-left override and isolates reorder the display.
  EXPECT_EQ(LabelText("a\xe2\x80\xae"
                      "b\xe2\x81\xa6"),
            "a\xef\xbf\xbd"
            "b\xef\xbf\xbd");
  // Characters, not bytes: 64 of them at most, the last one "…" when cut.
  EXPECT_EQ(LabelText(std::string(64, 'x')), std::string(64, 'x'));
  std::string long_name;
  for (int i = 0; i < 100; ++i) long_name += "é";
  const std::string cut = LabelText(long_name);
  std::string expected;
  for (int i = 0; i < 63; ++i) expected += "é";
  EXPECT_EQ(cut, expected + "…");
  EXPECT_EQ(LabelText("abcdef", 4), "abc…");
}

TEST_F(SchedulerMetricsTest, AuditProgressIsStepsDoneOverStepsPlanned) {
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a-1", spec::SmallMembershipSpec(4)));
  const auto progress = [&]() {
    const std::string text = metrics::Exposition(registry_);
    const std::string key = "memaudit_coordinator_audit_progress_ratio{audit=\"a-1\"} ";
    const size_t at = text.find(key);
    return at == std::string::npos ? -1.0 : std::stod(text.substr(at + key.size()));
  };
  EXPECT_EQ(progress(), 0.0);
  const v1::Audit audit = *scheduler_->Get("a-1");
  const uint64_t total = audit.steps_total();
  ASSERT_GT(total, 0u);
  const LeaseGrant first = MustLease();
  MEMAUDIT_ASSERT_OK(scheduler_->Heartbeat(first.task.lease_id, first.task.steps_total / 2));
  EXPECT_DOUBLE_EQ(progress(), static_cast<double>(first.task.steps_total / 2) / total);
  MEMAUDIT_ASSERT_OK(scheduler_->Complete(first.task.lease_id));
  EXPECT_DOUBLE_EQ(progress(), static_cast<double>(first.task.steps_total) / total);
  for (int i = 0; i < 3; ++i) MEMAUDIT_ASSERT_OK(scheduler_->Complete(MustLeaseId()));
  EXPECT_EQ(scheduler_->Get("a-1")->state(), v1::SUCCEEDED);
  EXPECT_EQ(progress(), 1.0);
  Reopen();
  EXPECT_EQ(progress(), 1.0);
}

TEST(AuditProgressRatioTest, FallsBackToTasksThenToTheAuditsState) {
  AuditTasks tasks;
  EXPECT_EQ(AuditProgressRatio(tasks), 0.0);
  tasks.state = v1::SUCCEEDED;  // every model reused: nothing to train
  EXPECT_EQ(AuditProgressRatio(tasks), 1.0);
  tasks.state = v1::RUNNING;
  tasks.total = 4;
  tasks.by_state[static_cast<size_t>(TaskState::kSucceeded)] = 1;
  EXPECT_EQ(AuditProgressRatio(tasks), 0.25);
  tasks.steps_total = 10;
  tasks.steps_done = 3;
  EXPECT_DOUBLE_EQ(AuditProgressRatio(tasks), 0.3);
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
  AuditRecord audit;
  audit.audit_id = "a-1";
  metrics.AuditKnown(audit);
  metrics.AuditProgress("a-1", AuditTasks{});
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
