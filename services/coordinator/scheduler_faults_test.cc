// The scheduler's promise (store.h, scheduler.h): every decision is committed
// before it takes effect, so a restarted coordinator resumes from exactly what
// it acknowledged. Each test fails the write of one operation and checks that
// the call fails, that nothing a caller can observe changed (audits, task
// counts, events, version, metrics), that a scheduler restarted over the same
// file sees the same, and that the operation succeeds once the store heals.
#include <unistd.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/messages/event_types.h"
#include "gtest/gtest.h"
#include "services/coordinator/fault_injecting_store.h"
#include "services/coordinator/scheduler.h"
#include "services/coordinator/sqlite_store.h"
#include "spec/test_specs.h"

namespace memaudit::coordinator {
namespace {

constexpr int64_t kLeaseTtlMs = 1000;

// Every audit (with its task counts) and every event, as text so that a
// failure shows the difference.
std::string Render(Scheduler& s) {
  std::string out;
  for (const v1::Audit& a : s.List(100)) {
    absl::StrAppend(&out, "audit ", a.ShortDebugString(), "\n");
    auto events = s.EventsAfter(a.audit_id(), 0, 1000);
    if (!events.ok()) return absl::StrCat("events: ", events.status().ToString());
    for (const EventRecord& e : *events) {
      absl::StrAppend(&out, "  event ", e.sequence, " ", e.unix_ms, " ", EventTypeName(e.type), " ",
                      e.task_id, " ", e.message, "\n");
    }
  }
  return out;
}

// What a caller can see of a scheduler.
struct Observed {
  std::string state;
  uint64_t version = 0;
  std::string metrics;
};

class SchedulerFaultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = ::testing::TempDir() + "/scheduler_faults_" + std::to_string(getpid()) + "_" +
            test->name() + ".db";
    std::remove(path_.c_str());
    auto sqlite = SqliteStore::Open(path_);
    ASSERT_TRUE(sqlite.ok()) << sqlite.status();
    sqlite_ = std::move(*sqlite);
    store_ = std::make_unique<FaultInjectingStore>(sqlite_.get());
    auto s = Scheduler::Create(store_.get(), &clock_, Options(), &registry_);
    ASSERT_TRUE(s.ok()) << s.status();
    scheduler_ = std::move(*s);
  }
  void TearDown() override {
    scheduler_.reset();
    store_.reset();
    sqlite_.reset();
    std::remove(path_.c_str());
  }

  static SchedulerOptions Options() {
    SchedulerOptions options;
    options.lease_ttl_ms = kLeaseTtlMs;
    return options;
  }

  Observed Observe() {
    return {Render(*scheduler_), scheduler_->version(), metrics::Exposition(registry_)};
  }

  // What a coordinator restarted now would load: a second connection to the
  // same file, so the scheduler under test keeps running.
  std::string Restarted() {
    auto store = SqliteStore::Open(path_);
    if (!store.ok()) return store.status().ToString();
    auto s = Scheduler::Create(store->get(), &clock_, Options(), nullptr);
    if (!s.ok()) return s.status().ToString();
    return Render(**s);
  }

  // The failed call left no trace, in memory or on disk.
  void ExpectUnchangedSince(const Observed& before) {
    const Observed now = Observe();
    EXPECT_EQ(now.state, before.state);
    EXPECT_EQ(now.version, before.version);
    EXPECT_EQ(now.metrics, before.metrics);
    EXPECT_EQ(Restarted(), before.state) << "a restart must see only what was acknowledged";
  }

  void ExpectRestartAgrees() { EXPECT_EQ(Restarted(), Render(*scheduler_)); }

  LeaseGrant MustLease(const std::string& worker = "w") {
    auto grant = scheduler_->Lease(worker, 0);
    EXPECT_TRUE(grant.ok()) << grant.status();
    if (!grant.ok() || !grant->has_value()) {
      ADD_FAILURE() << "no task to lease";
      return {};
    }
    return **grant;
  }

  v1::Audit MustGet(const std::string& audit_id) {
    auto audit = scheduler_->Get(audit_id);
    EXPECT_TRUE(audit.ok()) << audit.status();
    return audit.ok() ? *audit : v1::Audit();
  }

  bool Metric(const std::string& line) {
    return metrics::Exposition(registry_).find(line) != std::string::npos;
  }

  std::string path_;
  FakeClock clock_;
  prometheus::Registry registry_;
  std::unique_ptr<SqliteStore> sqlite_;
  std::unique_ptr<FaultInjectingStore> store_;
  std::unique_ptr<Scheduler> scheduler_;
};

TEST_F(SchedulerFaultsTest, SubmitWhoseWriteFailsCreatesNothing) {
  const Observed before = Observe();
  store_->FailCreateAudits(1);
  auto audit = scheduler_->Submit("a", spec::SmallMembershipSpec(4));
  EXPECT_EQ(audit.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(store_->create_audits_failed(), 1);
  EXPECT_EQ(scheduler_->Get("a").status().code(), absl::StatusCode::kNotFound);
  auto none = scheduler_->Lease("w", 0);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  ExpectUnchangedSince(before);

  // The same id is free: nothing half-created stands in the way.
  ASSERT_TRUE(scheduler_->Submit("a", spec::SmallMembershipSpec(4)).ok());
  EXPECT_EQ(MustGet("a").tasks().queued(), 4u);
  ExpectRestartAgrees();
}

// A request_id is remembered only with its audit: after a failed write the
// retry of the same request creates the audit, once.
TEST_F(SchedulerFaultsTest, SubmitWithARequestIdWhoseWriteFailsRemembersNothing) {
  Submission submission;
  submission.audit_id = "a";
  submission.spec = spec::SmallMembershipSpec(4);
  submission.caller = Caller::Team("alpha");
  submission.request_id = "req-1";
  const Observed before = Observe();
  store_->FailCreateAudits(1);
  EXPECT_EQ(scheduler_->Submit(submission).status().code(), absl::StatusCode::kUnavailable);
  ExpectUnchangedSince(before);

  submission.audit_id = "b";
  auto created = scheduler_->Submit(submission);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->audit_id(), "b");
  submission.audit_id = "c";
  EXPECT_EQ(scheduler_->Submit(submission)->audit_id(), "b");
  EXPECT_EQ(scheduler_->List(100).size(), 1u);
  ExpectRestartAgrees();
}

TEST_F(SchedulerFaultsTest, SubmitOfAFullyReusedAuditWhoseWriteFailsCreatesNothing) {
  const std::map<uint32_t, std::string> reused = {{0, "x"}, {1, "x"}, {2, "x"}, {3, "x"}};
  const Observed before = Observe();
  store_->FailCreateAudits(1);
  EXPECT_EQ(scheduler_->Submit("a", spec::SmallMembershipSpec(4), reused).status().code(),
            absl::StatusCode::kUnavailable);
  ExpectUnchangedSince(before);

  ASSERT_TRUE(scheduler_->Submit("a", spec::SmallMembershipSpec(4), reused).ok());
  EXPECT_EQ(MustGet("a").state(), v1::SUCCEEDED);
  ExpectRestartAgrees();
}

TEST_F(SchedulerFaultsTest, LeaseWhoseCommitFailsGrantsNothing) {
  ASSERT_TRUE(scheduler_->Submit("a", spec::SmallMembershipSpec(4)).ok());
  const Observed before = Observe();
  store_->FailCommits(1);
  auto grant = scheduler_->Lease("w", 0);
  EXPECT_EQ(grant.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(store_->commits_failed(), 1);
  // The audit did not start and no task counts as running.
  EXPECT_EQ(MustGet("a").state(), v1::QUEUED);
  ExpectUnchangedSince(before);

  // The first task is granted as if the failed attempt never happened.
  LeaseGrant g = MustLease();
  EXPECT_EQ(g.task.index, 0u);
  EXPECT_EQ(g.task.attempts, 1u);
  EXPECT_EQ(MustGet("a").state(), v1::RUNNING);
  ExpectRestartAgrees();
}

// A heartbeat is not a decision: it extends the lease and records progress
// in memory, and writes nothing (a restart gives every held lease a full TTL
// and shows the progress last committed). So a store that fails every write
// does not touch it.
TEST_F(SchedulerFaultsTest, HeartbeatWritesNothingSoAFailingStoreDoesNotStopIt) {
  ASSERT_TRUE(scheduler_->Submit("a", spec::SmallMembershipSpec(4)).ok());
  const LeaseGrant g = MustLease();
  const std::string committed = Restarted();
  const uint64_t version = scheduler_->version();
  store_->FailCommits(1);
  auto verdict = scheduler_->Heartbeat(g.task.lease_id, 7);
  ASSERT_TRUE(verdict.ok()) << verdict.status();
  EXPECT_FALSE(verdict->stop);
  EXPECT_EQ(store_->commits_failed(), 0) << "a heartbeat must not write";
  // Progress shows at once (Watch wakes on the version), but is not stored.
  EXPECT_EQ(MustGet("a").steps_done(), 7u);
  EXPECT_GT(scheduler_->version(), version);
  EXPECT_EQ(Restarted(), committed);
  store_->FailCommits(0);

  // The progress is committed with the task's next change of state.
  ASSERT_TRUE(scheduler_->Heartbeat(g.task.lease_id, 9).ok());
  const LeaseGrant other = MustLease();
  EXPECT_EQ(MustGet("a").steps_done(), 9u);
  ASSERT_TRUE(scheduler_->Fail(other.task.lease_id, "dataset missing", false).ok());
  EXPECT_EQ(MustGet("a").tasks().cancelled(), 3u);
  auto stored = sqlite_->LoadTasks();
  ASSERT_TRUE(stored.ok()) << stored.status();
  for (const TaskRecord& t : *stored) {
    if (t.task_id == g.task.task_id) {
      EXPECT_EQ(t.state, TaskState::kCancelled);
      EXPECT_EQ(t.steps_done, 9u);
    }
  }
  ExpectRestartAgrees();
}

TEST_F(SchedulerFaultsTest, HeartbeatExtendsTheLeaseInMemoryAndARestartHonoursIt) {
  ASSERT_TRUE(scheduler_->Submit("a", spec::SmallMembershipSpec(4)).ok());
  const LeaseGrant g = MustLease();
  clock_.AdvanceMs(kLeaseTtlMs / 2);
  store_->FailCommits(1);
  ASSERT_TRUE(scheduler_->Heartbeat(g.task.lease_id, 1).ok());
  EXPECT_EQ(store_->commits_failed(), 0);
  store_->FailCommits(0);
  // Past the lease's original deadline, within the extended one.
  clock_.AdvanceMs(kLeaseTtlMs / 2 + 1);
  ASSERT_TRUE(scheduler_->ExpireLeases().ok());
  EXPECT_EQ(MustGet("a").tasks().running(), 1u);
  EXPECT_FALSE(scheduler_->Heartbeat(g.task.lease_id, 2)->stop);

  // The stored deadline is the lease's first one, long past; a restarted
  // coordinator gives the lease a full TTL from the restart all the same.
  clock_.AdvanceMs(kLeaseTtlMs * 3);
  scheduler_.reset();
  store_ = std::make_unique<FaultInjectingStore>(sqlite_.get());
  auto s = Scheduler::Create(store_.get(), &clock_, Options(), nullptr);
  ASSERT_TRUE(s.ok()) << s.status();
  scheduler_ = std::move(*s);
  EXPECT_EQ(MustGet("a").steps_done(), 0u) << "the progress last committed (at the lease)";
  ASSERT_TRUE(scheduler_->ExpireLeases().ok());
  EXPECT_EQ(MustGet("a").tasks().running(), 1u);
  EXPECT_FALSE(scheduler_->Heartbeat(g.task.lease_id, 3)->stop);
  clock_.AdvanceMs(kLeaseTtlMs);  // silent for a TTL after its last heartbeat
  ASSERT_TRUE(scheduler_->ExpireLeases().ok());
  EXPECT_EQ(MustGet("a").tasks().running(), 0u);
  EXPECT_TRUE(scheduler_->Heartbeat(g.task.lease_id, 3)->stop);
}

TEST_F(SchedulerFaultsTest, CompleteWhoseCommitFailsKeepsTheLease) {
  ASSERT_TRUE(scheduler_->Submit("a", spec::SmallMembershipSpec(4)).ok());
  const LeaseGrant g = MustLease();
  const Observed before = Observe();
  store_->FailCommits(1);
  EXPECT_EQ(scheduler_->Complete(g.task.lease_id).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(MustGet("a").tasks().succeeded(), 0u);
  ExpectUnchangedSince(before);

  // The lease is still held, so the worker's retry is accepted.
  ASSERT_TRUE(scheduler_->Complete(g.task.lease_id).ok());
  EXPECT_EQ(MustGet("a").tasks().succeeded(), 1u);
  EXPECT_TRUE(Metric("memaudit_coordinator_task_duration_seconds_count{outcome=\"succeeded\"} 1"));
  ExpectRestartAgrees();
}

TEST_F(SchedulerFaultsTest, CompleteOfTheLastTaskWhoseCommitFailsLeavesTheAuditRunning) {
  ASSERT_TRUE(scheduler_->Submit("a", spec::SmallMembershipSpec(4)).ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(scheduler_->Complete(MustLease().task.lease_id).ok());
  const LeaseGrant last = MustLease();
  const Observed before = Observe();
  store_->FailCommits(1);
  EXPECT_EQ(scheduler_->Complete(last.task.lease_id).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(MustGet("a").state(), v1::RUNNING);
  ExpectUnchangedSince(before);

  ASSERT_TRUE(scheduler_->Complete(last.task.lease_id).ok());
  EXPECT_EQ(MustGet("a").state(), v1::SUCCEEDED);
  ExpectRestartAgrees();
}

TEST_F(SchedulerFaultsTest, RetryableFailWhoseCommitFailsNeitherRequeuesNorCounts) {
  ASSERT_TRUE(scheduler_->Submit("a", spec::SmallMembershipSpec(4)).ok());
  const LeaseGrant g = MustLease();
  const Observed before = Observe();
  store_->FailCommits(1);
  EXPECT_EQ(scheduler_->Fail(g.task.lease_id, "out of memory", true).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(MustGet("a").tasks().running(), 1u);
  // The metrics are part of what must not change: no retry happened.
  EXPECT_TRUE(Metric("memaudit_coordinator_task_retries_total{reason=\"worker_error\"} 0"));
  ExpectUnchangedSince(before);

  ASSERT_TRUE(scheduler_->Fail(g.task.lease_id, "out of memory", true).ok());
  EXPECT_EQ(MustGet("a").tasks().queued(), 4u);
  EXPECT_TRUE(Metric("memaudit_coordinator_task_retries_total{reason=\"worker_error\"} 1"));
  EXPECT_EQ(MustLease().task.attempts, 2u);
  ExpectRestartAgrees();
}

TEST_F(SchedulerFaultsTest, ReleaseWhoseCommitFailsNeitherRequeuesNorGivesTheAttemptBack) {
  v1::AuditSpec spec = spec::SmallMembershipSpec(4);
  spec.mutable_resources()->set_max_attempts(1);
  ASSERT_TRUE(scheduler_->Submit("a", spec).ok());
  const LeaseGrant g = MustLease();
  const Observed before = Observe();
  store_->FailCommits(1);
  EXPECT_EQ(scheduler_->Release(g.task.lease_id, "worker shutting down").code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(MustGet("a").tasks().running(), 1u);
  EXPECT_TRUE(Metric("memaudit_coordinator_task_retries_total{reason=\"released\"} 0"));
  ExpectUnchangedSince(before);

  // The lease is still held, so the worker's retry of the report is accepted.
  ASSERT_TRUE(scheduler_->Release(g.task.lease_id, "worker shutting down").ok());
  EXPECT_EQ(MustGet("a").tasks().queued(), 4u);
  EXPECT_TRUE(Metric("memaudit_coordinator_task_retries_total{reason=\"released\"} 1"));
  EXPECT_EQ(MustLease().task.attempts, 1u);
  ExpectRestartAgrees();
}

TEST_F(SchedulerFaultsTest, FatalFailWhoseCommitFailsLeavesTheAuditRunning) {
  ASSERT_TRUE(scheduler_->Submit("a", spec::SmallMembershipSpec(4)).ok());
  const LeaseGrant g = MustLease();
  const LeaseGrant other = MustLease();
  const Observed before = Observe();
  store_->FailCommits(1);
  EXPECT_EQ(scheduler_->Fail(g.task.lease_id, "dataset missing", false).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(MustGet("a").state(), v1::RUNNING);
  EXPECT_EQ(MustGet("a").tasks().cancelled(), 0u);
  ExpectUnchangedSince(before);
  // The other worker's lease was not cancelled.
  auto verdict = scheduler_->Heartbeat(other.task.lease_id, 1);
  ASSERT_TRUE(verdict.ok()) << verdict.status();
  EXPECT_FALSE(verdict->stop);

  ASSERT_TRUE(scheduler_->Fail(g.task.lease_id, "dataset missing", false).ok());
  const v1::Audit audit = MustGet("a");
  EXPECT_EQ(audit.state(), v1::FAILED);
  EXPECT_EQ(audit.tasks().failed(), 1u);
  EXPECT_EQ(audit.tasks().cancelled(), 3u);
  EXPECT_TRUE(scheduler_->Heartbeat(other.task.lease_id, 2)->stop);
  ExpectRestartAgrees();
}

TEST_F(SchedulerFaultsTest, CancelWhoseCommitFailsLeavesTheAuditRunning) {
  ASSERT_TRUE(scheduler_->Submit("a", spec::SmallMembershipSpec(4)).ok());
  const LeaseGrant g = MustLease();
  const Observed before = Observe();
  store_->FailCommits(1);
  EXPECT_EQ(scheduler_->Cancel("a").status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(MustGet("a").state(), v1::RUNNING);
  ExpectUnchangedSince(before);
  // The running task keeps its lease and the queue still hands out work.
  auto verdict = scheduler_->Heartbeat(g.task.lease_id, 1);
  ASSERT_TRUE(verdict.ok()) << verdict.status();
  EXPECT_FALSE(verdict->stop);

  auto cancelled = scheduler_->Cancel("a");
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  EXPECT_EQ(cancelled->state(), v1::CANCELLED);
  EXPECT_EQ(cancelled->tasks().cancelled(), 4u);
  EXPECT_TRUE(scheduler_->Heartbeat(g.task.lease_id, 2)->stop);
  ExpectRestartAgrees();
}

TEST_F(SchedulerFaultsTest, ExpiryWhoseCommitFailsKeepsTheLease) {
  ASSERT_TRUE(scheduler_->Submit("a", spec::SmallMembershipSpec(4)).ok());
  const LeaseGrant g = MustLease("dead-worker");
  clock_.AdvanceMs(kLeaseTtlMs);
  const Observed before = Observe();
  store_->FailCommits(1);
  EXPECT_EQ(scheduler_->ExpireLeases().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(MustGet("a").tasks().running(), 1u);
  EXPECT_TRUE(Metric("memaudit_coordinator_task_retries_total{reason=\"lease_expired\"} 0"));
  ExpectUnchangedSince(before);

  // The failed write made the scheduler reload the store, which gives the
  // lease a full TTL as a restart would (a disk fault never costs a live
  // worker its lease); the first sweep after it takes the lease back.
  ASSERT_TRUE(scheduler_->ExpireLeases().ok());
  EXPECT_EQ(MustGet("a").tasks().running(), 1u);
  clock_.AdvanceMs(kLeaseTtlMs);
  ASSERT_TRUE(scheduler_->ExpireLeases().ok());
  EXPECT_EQ(MustGet("a").tasks().running(), 0u);
  EXPECT_TRUE(Metric("memaudit_coordinator_task_retries_total{reason=\"lease_expired\"} 1"));
  const LeaseGrant again = MustLease("live-worker");
  EXPECT_EQ(again.task.task_id, g.task.task_id);
  EXPECT_EQ(again.task.attempts, 1u);  // an expiry within its cap spends none
  ExpectRestartAgrees();
}

// A sweep commits each expiry on its own: the ones before a failed commit
// stand, the rest wait for a later sweep (a TTL later: the reload after the
// failed write gives the leases it finds a full TTL, as a restart does).
TEST_F(SchedulerFaultsTest, ExpirySweepStopsAtTheFirstFailedCommit) {
  ASSERT_TRUE(scheduler_->Submit("a", spec::SmallMembershipSpec(4)).ok());
  MustLease("dead-1");
  MustLease("dead-2");
  clock_.AdvanceMs(kLeaseTtlMs);
  store_->FailCommits(1, /*pass=*/1);
  EXPECT_EQ(scheduler_->ExpireLeases().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(store_->commits_failed(), 1);
  EXPECT_EQ(MustGet("a").tasks().running(), 1u);
  EXPECT_EQ(MustGet("a").tasks().queued(), 3u);
  ExpectRestartAgrees();

  clock_.AdvanceMs(kLeaseTtlMs);
  ASSERT_TRUE(scheduler_->ExpireLeases().ok());
  EXPECT_EQ(MustGet("a").tasks().running(), 0u);
  EXPECT_EQ(MustGet("a").tasks().queued(), 4u);
  ExpectRestartAgrees();
}

// A restart over the file after failed writes resumes from the acknowledged
// state and honours the leases it granted.
TEST_F(SchedulerFaultsTest, RestartAfterFailedWritesHonoursAcknowledgedLeases) {
  ASSERT_TRUE(scheduler_->Submit("a", spec::SmallMembershipSpec(4)).ok());
  const LeaseGrant held = MustLease();
  store_->FailCommits(2);
  EXPECT_FALSE(scheduler_->Complete(held.task.lease_id).ok());
  EXPECT_FALSE(scheduler_->Lease("w", 0).ok());
  const std::string acknowledged = Render(*scheduler_);

  scheduler_.reset();
  store_ = std::make_unique<FaultInjectingStore>(sqlite_.get());
  auto s = Scheduler::Create(store_.get(), &clock_, Options(), nullptr);
  ASSERT_TRUE(s.ok()) << s.status();
  scheduler_ = std::move(*s);
  EXPECT_EQ(Render(*scheduler_), acknowledged);
  ASSERT_TRUE(scheduler_->Complete(held.task.lease_id).ok());
  const LeaseGrant next = MustLease();
  EXPECT_EQ(next.task.index, 1u);
  EXPECT_EQ(next.task.attempts, 1u);
}

}  // namespace
}  // namespace memaudit::coordinator
