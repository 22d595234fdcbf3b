#include "services/coordinator/scheduler.h"

#include <atomic>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/messages/event_types.h"
#include "common/testing/status_matchers.h"
#include "common/training/numerics.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/coordinator/scheduler_fixture.h"

namespace memaudit::coordinator {
namespace {

using ::memaudit::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class SchedulerTest : public SchedulerFixture {};

std::vector<EventRecord> EventsOfType(Scheduler& s, const std::string& audit_id,
                                      const std::string& type) {
  std::vector<EventRecord> of;
  auto events = s.EventsAfter(audit_id, 0, 1000);
  EXPECT_TRUE(events.ok()) << events.status();
  if (!events.ok()) return of;
  for (const EventRecord& e : *events) {
    if (EventTypeName(e.type) == type) of.push_back(e);
  }
  return of;
}

TEST_F(SchedulerTest, LeasesEveryTaskOnceThenSucceeds) {
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a", spec::SmallMembershipSpec(4)));
  std::vector<std::string> leases;
  for (int i = 0; i < 4; ++i) {
    LeaseGrant g = MustLease();
    EXPECT_EQ(g.task.index, static_cast<uint32_t>(i));
    EXPECT_EQ(g.task.attempts, 1u);
    leases.push_back(g.task.lease_id);
  }
  auto none = scheduler_->Lease("w", 0);
  MEMAUDIT_ASSERT_OK(none);
  EXPECT_FALSE(none->has_value());
  EXPECT_EQ(scheduler_->Get("a")->state(), v1::RUNNING);
  for (const std::string& l : leases) MEMAUDIT_ASSERT_OK(scheduler_->Complete(l));
  auto audit = scheduler_->Get("a");
  EXPECT_EQ(audit->state(), v1::SUCCEEDED);
  EXPECT_EQ(audit->tasks().succeeded(), 4u);
  EXPECT_EQ(audit->steps_done(), audit->steps_total());
  // Completing twice is refused: the lease is gone.
  EXPECT_THAT(scheduler_->Complete(leases[0]), StatusIs(absl::StatusCode::kFailedPrecondition));
}

// Audits are kept for months: a finished one keeps only its counts in
// memory, its tasks stay in the store, and a restart loads it the same way.
TEST_F(SchedulerTest, FinishedAuditsKeepOnlyTheirCountsInMemory) {
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("done", spec::SmallMembershipSpec(4)));
  EXPECT_EQ(scheduler_->tasks_in_memory(), 4u);
  for (int i = 0; i < 4; ++i) MEMAUDIT_ASSERT_OK(scheduler_->Complete(MustLease().task.lease_id));
  EXPECT_EQ(scheduler_->Get("done")->state(), v1::SUCCEEDED);
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("cancelled", spec::SmallMembershipSpec(4)));
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("running", spec::SmallMembershipSpec(4)));
  EXPECT_EQ(scheduler_->tasks_in_memory(), 8u);
  MEMAUDIT_ASSERT_OK(scheduler_->Cancel("cancelled"));
  EXPECT_EQ(scheduler_->tasks_in_memory(), 4u) << "only the running audit's tasks";

  auto expect_counts = [this] {
    auto done = scheduler_->Get("done");
    MEMAUDIT_ASSERT_OK(done);
    EXPECT_EQ(done->tasks().succeeded(), 4u);
    EXPECT_EQ(done->steps_done(), done->steps_total());
    auto cancelled = scheduler_->Get("cancelled");
    MEMAUDIT_ASSERT_OK(cancelled);
    EXPECT_EQ(cancelled->tasks().cancelled(), 4u);
    EXPECT_EQ(cancelled->state(), v1::CANCELLED);
    // Events (what reports and Watch read) come from the store.
    auto events = scheduler_->EventsAfter("done", 0, 100);
    MEMAUDIT_ASSERT_OK(events);
    EXPECT_EQ(events->back().type, v1::AUDIT_SUCCEEDED);
    // Cancelling a finished audit changes nothing and reads no task.
    EXPECT_EQ(scheduler_->Cancel("cancelled")->tasks().cancelled(), 4u);
  };
  expect_counts();
  Reopen();
  EXPECT_EQ(scheduler_->tasks_in_memory(), 4u) << "a restart loads finished audits as counts";
  expect_counts();
  // The running audit goes on as before.
  const LeaseGrant next = MustLease();
  EXPECT_EQ(next.task.audit_id, "running");
  MEMAUDIT_ASSERT_OK(scheduler_->Complete(next.task.lease_id));
}

TEST_F(SchedulerTest, ReusedModelsAreNotTrainedAgain) {
  MEMAUDIT_ASSERT_OK(
      scheduler_->Submit("a", spec::SmallMembershipSpec(4), {{0, "old"}, {2, "old"}}));
  EXPECT_EQ(scheduler_->Get("a")->tasks().succeeded(), 2u);
  LeaseGrant first = MustLease();
  LeaseGrant second = MustLease();
  EXPECT_EQ(first.task.index, 1u);
  EXPECT_EQ(second.task.index, 3u);
  MEMAUDIT_ASSERT_OK(scheduler_->Complete(first.task.lease_id));
  MEMAUDIT_ASSERT_OK(scheduler_->Complete(second.task.lease_id));
  EXPECT_EQ(scheduler_->Get("a")->state(), v1::SUCCEEDED);
  auto events = scheduler_->EventsAfter("a", 0, 100);
  MEMAUDIT_ASSERT_OK(events);
  int reused = 0;
  for (const EventRecord& e : *events) reused += e.type == v1::TASK_REUSED;
  EXPECT_EQ(reused, 2);

  // Everything reused: the audit is done the moment it is submitted, and
  // stays done after a restart.
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("b", spec::SmallMembershipSpec(4),
                                        {{0, "a"}, {1, "a"}, {2, "a"}, {3, "a"}}));
  EXPECT_EQ(scheduler_->Get("b")->state(), v1::SUCCEEDED);
  Reopen();
  EXPECT_EQ(scheduler_->Get("b")->state(), v1::SUCCEEDED);
  auto none = scheduler_->Lease("w", 0);
  MEMAUDIT_ASSERT_OK(none);
  EXPECT_FALSE(none->has_value());
}

// A packed task is reused only when all of its models are; the partly
// reused one trains all of its models again.
TEST_F(SchedulerTest, PackedTaskIsReusedOnlyWhenAllItsModelsAre) {
  v1::AuditSpec spec = spec::SmallMembershipSpec(6);
  spec.mutable_resources()->set_models_per_task(2);
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a", spec, {{0, "x"}, {1, "y"}, {2, "x"}, {5, "x"}}));
  auto audit = scheduler_->Get("a");
  EXPECT_EQ(audit->tasks().total(), 3u);
  EXPECT_EQ(audit->tasks().succeeded(), 1u);
  LeaseGrant first = MustLease();
  LeaseGrant second = MustLease();
  EXPECT_EQ(first.task.index, 1u);
  EXPECT_EQ(second.task.index, 2u);
  auto events = scheduler_->EventsAfter("a", 0, 100);
  MEMAUDIT_ASSERT_OK(events);
  std::vector<std::string> reused;
  for (const EventRecord& e : *events) {
    if (e.type == v1::TASK_REUSED) reused.push_back(e.task_id + " " + e.message);
  }
  EXPECT_EQ(reused, std::vector<std::string>{"a/reference_model/0 models reused from audit x, y"});
  MEMAUDIT_ASSERT_OK(scheduler_->Complete(first.task.lease_id));
  MEMAUDIT_ASSERT_OK(scheduler_->Complete(second.task.lease_id));
  audit = scheduler_->Get("a");
  EXPECT_EQ(audit->state(), v1::SUCCEEDED);
  EXPECT_EQ(audit->steps_done(), audit->steps_total());
}

// An audit no worker takes a task of within waiting_warning_ms gets one
// "audit_waiting" event; one whose task was taken in time gets none.
TEST_F(SchedulerTest, AnAuditNoWorkerTakesIsWarnedOfOnce) {
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a", spec::SmallMembershipSpec(4)));
  clock_.AdvanceMs(options_.waiting_warning_ms - 1);
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("b", spec::SmallMembershipSpec(4)));
  MEMAUDIT_ASSERT_OK(scheduler_->ExpireLeases());
  EXPECT_TRUE(EventsOfType(*scheduler_, "a", "audit_waiting").empty()) << "not yet";
  clock_.AdvanceMs(1);
  MEMAUDIT_ASSERT_OK(scheduler_->ExpireLeases());
  std::vector<EventRecord> waiting = EventsOfType(*scheduler_, "a", "audit_waiting");
  ASSERT_EQ(waiting.size(), 1u);
  EXPECT_THAT(waiting[0].message, HasSubstr("no worker has taken a task in 30.0 s; workers "
                                            "connected: 0"));
  // "b" (its first task is leased in time) is never warned of, "a" once.
  while (scheduler_->Get("b")->state() == v1::QUEUED) MustLease("w");
  clock_.AdvanceMs(options_.waiting_warning_ms);
  MEMAUDIT_ASSERT_OK(scheduler_->ExpireLeases());
  EXPECT_EQ(EventsOfType(*scheduler_, "a", "audit_waiting").size(), 1u);
  EXPECT_TRUE(EventsOfType(*scheduler_, "b", "audit_waiting").empty());
}

// A waiting audit whose tasks no connected worker could ever take is told
// which requirement none meets.
TEST_F(SchedulerTest, AWaitingAuditIsToldWhatNoWorkerOffers) {
  v1::AuditSpec spec = spec::SmallMembershipSpec(4);
  spec.mutable_resources()->set_gpus_per_task(1);
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a", spec));
  clock_.AdvanceMs(options_.waiting_warning_ms);
  v1::WorkerCapabilities cpu;
  cpu.set_threads(4);
  scheduler_->RegisterWorker(cpu);
  MEMAUDIT_ASSERT_OK(scheduler_->ExpireLeases());
  std::vector<EventRecord> waiting = EventsOfType(*scheduler_, "a", "audit_waiting");
  ASSERT_EQ(waiting.size(), 1u);
  EXPECT_THAT(waiting[0].message,
              HasSubstr("workers connected: 1 (the tasks need 1 GPU each "
                        "(resources.gpus_per_task); the most a worker offers is 0)"));
}

TEST_F(SchedulerTest, ExpiredLeaseIsRequeuedAndLeasedAgain) {
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a", spec::SmallMembershipSpec(4)));
  LeaseGrant first = MustLease("dead-worker");
  clock_.AdvanceMs(999);
  MEMAUDIT_ASSERT_OK(scheduler_->ExpireLeases());
  EXPECT_EQ(scheduler_->Get("a")->tasks().running(), 1u) << "not yet expired";
  clock_.AdvanceMs(1);
  MEMAUDIT_ASSERT_OK(scheduler_->ExpireLeases());
  EXPECT_EQ(scheduler_->Get("a")->tasks().running(), 0u);
  LeaseGrant second = MustLease("live-worker");
  EXPECT_EQ(second.task.task_id, first.task.task_id);
  // A silent worker may have been preempted or cut off: no attempt spent.
  EXPECT_EQ(second.task.attempts, 1u);
  EXPECT_NE(second.task.lease_id, first.task.lease_id);
  // The dead worker's lease no longer counts.
  auto verdict = scheduler_->Heartbeat(first.task.lease_id, 5);
  MEMAUDIT_ASSERT_OK(verdict);
  EXPECT_TRUE(verdict->stop);
  EXPECT_TRUE(EventsOfType(*scheduler_, "a", "task_retried").empty());
  const std::vector<EventRecord> released = EventsOfType(*scheduler_, "a", "task_released");
  ASSERT_EQ(released.size(), 1u);
  EXPECT_EQ(released[0].message,
            "lease expired (worker dead-worker silent) (lease of dead-worker; attempt not "
            "counted; expiry 1 of 10)");
  EXPECT_THAT(metrics::Exposition(registry_),
              HasSubstr("memaudit_coordinator_task_retries_total{reason=\"lease_expired\"} 1"));
}

// A task that kills its worker (out of memory) on every attempt looks like
// a preempted one; past the cap its expiries count, and the audit fails.
TEST_F(SchedulerTest, ExpiriesPastTheCapCountAsAttempts) {
  options_.max_expiries_per_task = 2;
  Reopen();
  v1::AuditSpec spec = spec::SmallMembershipSpec(4);
  spec.mutable_resources()->set_max_attempts(1);
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a", spec));
  for (int i = 0; i < 2; ++i) {
    MustLease();
    clock_.AdvanceMs(1000);
    MEMAUDIT_ASSERT_OK(scheduler_->ExpireLeases());
    EXPECT_EQ(scheduler_->Get("a")->state(), v1::RUNNING);
  }
  MustLease();
  clock_.AdvanceMs(1000);
  MEMAUDIT_ASSERT_OK(scheduler_->ExpireLeases());
  auto audit = scheduler_->Get("a");
  EXPECT_EQ(audit->state(), v1::FAILED);
  EXPECT_THAT(audit->error(),
              HasSubstr("failed after 1 attempt(s): lease expired (worker w silent) (expired 2 "
                        "times already: counted as an attempt)"));
}

TEST_F(SchedulerTest, ExpiriesSurviveARestart) {
  options_.max_expiries_per_task = 1;
  Reopen();
  v1::AuditSpec spec = spec::SmallMembershipSpec(4);
  spec.mutable_resources()->set_max_attempts(1);
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a", spec));
  MustLease();
  clock_.AdvanceMs(1000);
  MEMAUDIT_ASSERT_OK(scheduler_->ExpireLeases());
  Reopen();
  MustLease();
  clock_.AdvanceMs(1000);
  MEMAUDIT_ASSERT_OK(scheduler_->ExpireLeases());
  EXPECT_EQ(scheduler_->Get("a")->state(), v1::FAILED);
}

WorkerOffer Offer(uint32_t threads, uint32_t gpus, uint64_t memory_mb, uint32_t free_threads) {
  WorkerOffer offer;
  offer.total.set_threads(threads);
  offer.total.set_gpus(gpus);
  offer.total.set_memory_mb(memory_mb);
  offer.free = offer.total;
  offer.free.set_threads(free_threads);
  return offer;
}

bool Leases(Scheduler& scheduler, const WorkerOffer& offer) {
  auto grant = scheduler.Lease("w", 0, offer);
  EXPECT_TRUE(grant.ok()) << grant.status();
  return grant.ok() && grant->has_value();
}

TEST_F(SchedulerTest, LeasesOnlyTasksThatFitWhatTheWorkerHasFree) {
  v1::AuditSpec spec = spec::SmallMembershipSpec(4);
  spec.mutable_resources()->set_threads_per_task(2);
  spec.mutable_resources()->set_memory_mb_per_task(1000);
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a", spec));
  EXPECT_FALSE(Leases(*scheduler_, Offer(4, 0, 4000, /*free_threads=*/1)));
  EXPECT_FALSE(Leases(*scheduler_, Offer(4, 0, /*memory_mb=*/999, 4)));
  EXPECT_FALSE(Leases(*scheduler_, Offer(4, /*gpus=*/1, 4000, 4)));  // GPU workers: GPU tasks
  EXPECT_TRUE(Leases(*scheduler_, Offer(4, 0, 4000, 2)));
}

TEST_F(SchedulerTest, GpuTasksGoToGpuWorkersOnly) {
  v1::AuditSpec spec = spec::SmallMembershipSpec(4);
  spec.mutable_resources()->set_gpus_per_task(1);
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a", spec));
  EXPECT_FALSE(Leases(*scheduler_, Offer(8, 0, 0, 8)));
  auto legacy = scheduler_->Lease("old-worker", 0);  // no offer: CPU tasks only
  MEMAUDIT_ASSERT_OK(legacy);
  EXPECT_FALSE(legacy->has_value());
  WorkerOffer busy_gpu = Offer(8, 1, 0, 8);
  busy_gpu.free.set_gpus(0);
  EXPECT_FALSE(Leases(*scheduler_, busy_gpu));
  EXPECT_TRUE(Leases(*scheduler_, Offer(8, 1, 0, 8)));
}

WorkerOffer OfClass(const std::string& numeric_class) {
  WorkerOffer offer = Offer(4, 0, 0, 4);
  offer.total.set_numeric_class(numeric_class);
  offer.free.set_numeric_class(numeric_class);
  return offer;
}

TEST_F(SchedulerTest, APortableAuditGoesToPortableWorkersOnly) {
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a", spec::SmallMembershipSpec(4)));
  EXPECT_FALSE(Leases(*scheduler_, OfClass("native/AuthenticAMD-26-2")));
  EXPECT_TRUE(Leases(*scheduler_, OfClass("portable")));
  EXPECT_TRUE(Leases(*scheduler_, OfClass(""))) << "a worker that names no class is portable";
}

// The first native worker to lease one of a native audit's tasks decides its
// class, for its other tasks, its retries and after a restart.
TEST_F(SchedulerTest, ANativeAuditStaysInTheClassOfItsFirstLease) {
  v1::AuditSpec spec = spec::SmallMembershipSpec(4);
  spec.mutable_resources()->set_numerics("native");
  spec.mutable_resources()->set_max_attempts(3);
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a", spec));
  const std::string amd = "native/AuthenticAMD-26-2", intel = "native/GenuineIntel-6-143";
  EXPECT_FALSE(Leases(*scheduler_, OfClass("portable")));
  auto first = scheduler_->Lease("w-amd", 0, OfClass(amd));
  MEMAUDIT_ASSERT_OK(first);
  ASSERT_TRUE(first->has_value());
  EXPECT_EQ((*first)->spec.resources().numeric_class(), amd);
  EXPECT_EQ(scheduler_->Get("a")->spec().resources().numeric_class(), amd);
  EXPECT_FALSE(Leases(*scheduler_, OfClass(intel)));
  Reopen();
  EXPECT_FALSE(Leases(*scheduler_, OfClass(intel))) << "the class survives a restart";
  // A failed task's retry goes to the class too.
  MEMAUDIT_ASSERT_OK(scheduler_->Fail((*first)->task.lease_id, "out of memory", true));
  EXPECT_FALSE(Leases(*scheduler_, OfClass(intel)));
  EXPECT_TRUE(Leases(*scheduler_, OfClass(amd)));
}

// What trained an audit's tasks is recorded with it, each environment once,
// the list bounded whatever workers send; a restart keeps it.
TEST_F(SchedulerTest, CompletedTasksRecordTheirNumericEnvironmentsOnce) {
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a", spec::SmallMembershipSpec(4)));
  for (const std::string env : {"cpu; ATen AVX2", "", "cpu; ATen AVX2", "cuda; LibTorch 2.1"}) {
    MEMAUDIT_ASSERT_OK(scheduler_->Complete(MustLease().task.lease_id, env));
  }
  Reopen();
  EXPECT_THAT(scheduler_->Get("a")->spec().resources().numeric_environments(),
              ElementsAre("cpu; ATen AVX2", "cuda; LibTorch 2.1"));
  EXPECT_EQ(scheduler_->Get("a")->state(), v1::SUCCEEDED);

  MEMAUDIT_ASSERT_OK(scheduler_->Submit("b", spec::SmallMembershipSpec(12)));
  for (int i = 0; i < 12; ++i) {
    MEMAUDIT_ASSERT_OK(scheduler_->Complete(MustLease().task.lease_id, absl::StrCat("env ", i)));
  }
  const auto b = scheduler_->Get("b");
  MEMAUDIT_ASSERT_OK(b);
  const auto& recorded = b->spec().resources().numeric_environments();
  ASSERT_EQ(recorded.size(), kMaxNumericEnvironments);
  EXPECT_EQ(recorded[kMaxNumericEnvironments - 2], "env 6");
  EXPECT_EQ(recorded[kMaxNumericEnvironments - 1], "...");
}

// A later task that fits is leased past an earlier one that does not.
TEST_F(SchedulerTest, ATaskThatDoesNotFitHoldsNoOneElseUp) {
  v1::AuditSpec wide = spec::SmallMembershipSpec(4);
  wide.mutable_resources()->set_threads_per_task(8);
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("wide", wide));
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("narrow", spec::SmallMembershipSpec(4)));
  auto grant = scheduler_->Lease("w", 0, Offer(2, 0, 0, 2));
  MEMAUDIT_ASSERT_OK(grant);
  ASSERT_TRUE(grant->has_value());
  EXPECT_EQ((*grant)->task.audit_id, "narrow");
}

TEST_F(SchedulerTest, HeartbeatsKeepALeaseAlive) {
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a", spec::SmallMembershipSpec(4)));
  LeaseGrant g = MustLease();
  for (int i = 0; i < 5; ++i) {
    clock_.AdvanceMs(800);
    auto verdict = scheduler_->Heartbeat(g.task.lease_id, i + 1);
    MEMAUDIT_ASSERT_OK(verdict);
    EXPECT_FALSE(verdict->stop);
    MEMAUDIT_ASSERT_OK(scheduler_->ExpireLeases());
  }
  EXPECT_EQ(scheduler_->Get("a")->tasks().running(), 1u);
  EXPECT_EQ(scheduler_->Get("a")->steps_done(), 5u);
}

TEST_F(SchedulerTest, RetryBudgetExhaustedFailsTheAudit) {
  v1::AuditSpec spec = spec::SmallMembershipSpec(4);
  spec.mutable_resources()->set_max_attempts(2);
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a", spec));
  LeaseGrant g1 = MustLease();
  MEMAUDIT_ASSERT_OK(scheduler_->Fail(g1.task.lease_id, "out of memory", true));
  LeaseGrant g2 = MustLease();
  EXPECT_EQ(g2.task.task_id, g1.task.task_id);
  LeaseGrant other = MustLease();
  MEMAUDIT_ASSERT_OK(scheduler_->Fail(g2.task.lease_id, "out of memory", true));
  auto audit = scheduler_->Get("a");
  EXPECT_EQ(audit->state(), v1::FAILED);
  EXPECT_NE(audit->error().find("out of memory"), std::string::npos);
  EXPECT_EQ(audit->tasks().failed(), 1u);
  EXPECT_EQ(audit->tasks().cancelled(), 3u);
  // The other worker is told to stop.
  EXPECT_TRUE(scheduler_->Heartbeat(other.task.lease_id, 1)->stop);
}

TEST_F(SchedulerTest, NonRetryableFailureFailsAtOnce) {
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a", spec::SmallMembershipSpec(4)));
  LeaseGrant g = MustLease();
  MEMAUDIT_ASSERT_OK(scheduler_->Fail(g.task.lease_id, "dataset missing", false));
  EXPECT_EQ(scheduler_->Get("a")->state(), v1::FAILED);
}

// A worker shutting down (or cut off from the scorer) hands its task back:
// an audit allowed one attempt per task survives any number of such
// interruptions, up to the cap.
TEST_F(SchedulerTest, ReleasedTaskIsRequeuedWithoutSpendingAnAttempt) {
  v1::AuditSpec spec = spec::SmallMembershipSpec(4);
  spec.mutable_resources()->set_max_attempts(1);
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a", spec));
  LeaseGrant g = MustLease("w-1");
  const std::string task_id = g.task.task_id;
  constexpr int kReleases = 5;
  for (int i = 0; i < kReleases; ++i) {
    EXPECT_EQ(g.task.task_id, task_id);
    EXPECT_EQ(g.task.attempts, 1u) << "release " << i;
    MEMAUDIT_ASSERT_OK(scheduler_->Release(g.task.lease_id, "worker w-1 shutting down"));
    auto audit = scheduler_->Get("a");
    EXPECT_EQ(audit->state(), v1::RUNNING);
    EXPECT_EQ(audit->tasks().queued(), 4u);
    EXPECT_EQ(audit->tasks().running(), 0u);
    // The released lease is gone: the worker's heartbeat is told to stop.
    EXPECT_TRUE(scheduler_->Heartbeat(g.task.lease_id, 1)->stop);
    g = MustLease("w-2");
  }
  const std::vector<EventRecord> released = EventsOfType(*scheduler_, "a", "task_released");
  ASSERT_EQ(released.size(), static_cast<size_t>(kReleases));
  EXPECT_EQ(released[0].task_id, task_id);
  EXPECT_EQ(released[0].message,
            "worker w-1 shutting down (released by w-1; attempt not counted; release 1 of 100)");
  EXPECT_THAT(released[4].message, HasSubstr("release 5 of 100"));
  EXPECT_TRUE(EventsOfType(*scheduler_, "a", "task_retried").empty());

  const std::string text = metrics::Exposition(registry_);
  EXPECT_THAT(text, HasSubstr("memaudit_coordinator_task_retries_total{reason=\"released\"} 5"));
  EXPECT_THAT(text,
              HasSubstr("memaudit_coordinator_task_retries_total{reason=\"worker_error\"} 0"));
  EXPECT_THAT(text, HasSubstr("memaudit_coordinator_task_duration_seconds_count{outcome="
                              "\"released\"} 5"));

  // The one attempt is still there to succeed with.
  MEMAUDIT_ASSERT_OK(scheduler_->Complete(g.task.lease_id));
  for (int i = 0; i < 3; ++i) MEMAUDIT_ASSERT_OK(scheduler_->Complete(MustLease().task.lease_id));
  EXPECT_EQ(scheduler_->Get("a")->state(), v1::SUCCEEDED);
}

TEST_F(SchedulerTest, ReleasesPastTheCapCountAsAttempts) {
  options_.max_releases_per_task = 2;
  Reopen();
  v1::AuditSpec spec = spec::SmallMembershipSpec(4);
  spec.mutable_resources()->set_max_attempts(2);
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a", spec));
  for (int i = 0; i < 2; ++i) {
    MEMAUDIT_ASSERT_OK(scheduler_->Release(MustLease().task.lease_id, "scorer unreachable"));
  }
  // The third release is a retryable failure: attempt 1 of 2 spent.
  LeaseGrant g = MustLease();
  EXPECT_EQ(g.task.attempts, 1u);
  MEMAUDIT_ASSERT_OK(scheduler_->Release(g.task.lease_id, "scorer unreachable"));
  EXPECT_EQ(scheduler_->Get("a")->state(), v1::RUNNING);
  const std::vector<EventRecord> retried = EventsOfType(*scheduler_, "a", "task_retried");
  ASSERT_EQ(retried.size(), 1u);
  EXPECT_EQ(
      retried[0].message,
      "scorer unreachable (released 2 times already: counted as an attempt) (attempt 1 of 2)");
  EXPECT_EQ(EventsOfType(*scheduler_, "a", "task_released").size(), 2u);
  EXPECT_THAT(metrics::Exposition(registry_),
              HasSubstr("memaudit_coordinator_task_retries_total{reason=\"worker_error\"} 1"));

  // And the next one spends the last attempt: the audit fails.
  g = MustLease();
  EXPECT_EQ(g.task.attempts, 2u);
  MEMAUDIT_ASSERT_OK(scheduler_->Release(g.task.lease_id, "scorer unreachable"));
  auto audit = scheduler_->Get("a");
  EXPECT_EQ(audit->state(), v1::FAILED);
  EXPECT_THAT(audit->error(), HasSubstr("failed after 2 attempt(s): scorer unreachable (released 2 "
                                        "times already"));
}

TEST_F(SchedulerTest, ReleaseOfALeaseNotHeldIsRefused) {
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a", spec::SmallMembershipSpec(4)));
  EXPECT_THAT(scheduler_->Release("l-unknown", "shutting down"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("l-unknown")));
  // Nor twice, nor after the task completed.
  LeaseGrant g = MustLease();
  MEMAUDIT_ASSERT_OK(scheduler_->Release(g.task.lease_id, "shutting down"));
  EXPECT_THAT(scheduler_->Release(g.task.lease_id, "shutting down"),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  g = MustLease();
  MEMAUDIT_ASSERT_OK(scheduler_->Complete(g.task.lease_id));
  EXPECT_THAT(scheduler_->Release(g.task.lease_id, "shutting down"),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_EQ(EventsOfType(*scheduler_, "a", "task_released").size(), 1u);
}

// A worker that leaves gives back every lease it holds, and no one else's.
TEST_F(SchedulerTest, ReleaseAllGivesBackOnlyThatWorkersLeases) {
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a", spec::SmallMembershipSpec(4)));
  const LeaseGrant a1 = MustLease("w-1");
  const LeaseGrant b = MustLease("w-2");
  const LeaseGrant a2 = MustLease("w-1");
  auto release_all = [&](const std::string& worker) {
    uint32_t released = 99;
    absl::Notification written;
    absl::Status status;
    scheduler_->ReleaseAll(worker, "worker left", &released, [&](const absl::Status& s) {
      status = s;
      written.Notify();
    });
    written.WaitForNotification();
    EXPECT_TRUE(status.ok()) << status;
    return released;
  };
  EXPECT_EQ(release_all("w-1"), 2u);
  auto audit = scheduler_->Get("a");
  EXPECT_EQ(audit->tasks().queued(), 3u);
  EXPECT_EQ(audit->tasks().running(), 1u);
  EXPECT_TRUE(scheduler_->Heartbeat(a1.task.lease_id, 1)->stop);
  EXPECT_TRUE(scheduler_->Heartbeat(a2.task.lease_id, 1)->stop);
  EXPECT_FALSE(scheduler_->Heartbeat(b.task.lease_id, 1)->stop);
  const std::vector<EventRecord> released = EventsOfType(*scheduler_, "a", "task_released");
  ASSERT_EQ(released.size(), 2u);
  EXPECT_THAT(released[0].message, HasSubstr("worker left (released by w-1; attempt not counted"));
  // Nothing held: nothing written, nothing refused.
  EXPECT_EQ(release_all("w-1"), 0u);
  EXPECT_EQ(release_all("w-unknown"), 0u);
  EXPECT_EQ(EventsOfType(*scheduler_, "a", "task_released").size(), 2u);
}

// Releases and attempts are in the store: a restarted coordinator neither
// forgets the releases (the cap holds across restarts) nor charges them.
TEST_F(SchedulerTest, ReleasesSurviveARestart) {
  options_.max_releases_per_task = 2;
  Reopen();
  v1::AuditSpec spec = spec::SmallMembershipSpec(4);
  spec.mutable_resources()->set_max_attempts(1);
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a", spec));
  MEMAUDIT_ASSERT_OK(scheduler_->Release(MustLease().task.lease_id, "preempted"));
  Reopen();
  LeaseGrant g = MustLease();
  EXPECT_EQ(g.task.attempts, 1u);
  MEMAUDIT_ASSERT_OK(scheduler_->Release(g.task.lease_id, "preempted"));
  Reopen();
  EXPECT_EQ(scheduler_->Get("a")->state(), v1::RUNNING);
  EXPECT_EQ(scheduler_->Get("a")->tasks().queued(), 4u);
  EXPECT_EQ(EventsOfType(*scheduler_, "a", "task_released").size(), 2u);
  // Two releases were free; the third counts, and with one attempt the audit fails.
  g = MustLease();
  EXPECT_EQ(g.task.attempts, 1u);
  MEMAUDIT_ASSERT_OK(scheduler_->Release(g.task.lease_id, "preempted"));
  EXPECT_EQ(scheduler_->Get("a")->state(), v1::FAILED);
}

TEST_F(SchedulerTest, CancelStopsLeasesAndQueue) {
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a", spec::SmallMembershipSpec(4)));
  LeaseGrant g = MustLease();
  auto cancelled = scheduler_->Cancel("a");
  MEMAUDIT_ASSERT_OK(cancelled);
  EXPECT_EQ(cancelled->state(), v1::CANCELLED);
  EXPECT_EQ(cancelled->tasks().cancelled(), 4u);
  EXPECT_TRUE(scheduler_->Heartbeat(g.task.lease_id, 3)->stop);
  EXPECT_FALSE(scheduler_->Lease("w", 0)->has_value());
  EXPECT_THAT(scheduler_->Cancel("missing"), StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(SchedulerTest, RestartResumesFromTheStore) {
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a", spec::SmallMembershipSpec(4)));
  LeaseGrant done = MustLease();
  MEMAUDIT_ASSERT_OK(scheduler_->Complete(done.task.lease_id));
  LeaseGrant held = MustLease();
  Reopen();
  auto audit = scheduler_->Get("a");
  MEMAUDIT_ASSERT_OK(audit);
  EXPECT_EQ(audit->tasks().succeeded(), 1u);
  EXPECT_EQ(audit->tasks().running(), 1u);
  // The lease held before the restart is still honoured.
  EXPECT_FALSE(scheduler_->Heartbeat(held.task.lease_id, 2)->stop);
  EXPECT_EQ(MustLease().task.index, 2u);
}

// The coordinator was down for longer than the lease TTL: its workers could
// not heartbeat, but kept training. Each held lease gets a TTL from the
// restart to be heard again instead of expiring (and costing an attempt).
TEST_F(SchedulerTest, AnOutageLongerThanTheTtlCostsNoAttempt) {
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a", spec::SmallMembershipSpec(4)));
  LeaseGrant held = MustLease();
  clock_.AdvanceMs(5000);  // five TTLs without a heartbeat
  Reopen();
  MEMAUDIT_ASSERT_OK(scheduler_->ExpireLeases());
  EXPECT_FALSE(scheduler_->Heartbeat(held.task.lease_id, 2)->stop);
  clock_.AdvanceMs(1001);  // silent for a TTL after the restart: now it expires
  MEMAUDIT_ASSERT_OK(scheduler_->ExpireLeases());
  EXPECT_TRUE(scheduler_->Heartbeat(held.task.lease_id, 2)->stop);
}

TEST_F(SchedulerTest, GaugesCountTasksByState) {
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a", spec::SmallMembershipSpec(4)));
  MustLease();
  const std::string text = metrics::Exposition(registry_);
  EXPECT_NE(text.find("memaudit_coordinator_tasks{state=\"queued\"} 3"), std::string::npos) << text;
  EXPECT_NE(text.find("memaudit_coordinator_tasks{state=\"running\"} 1"), std::string::npos);
}

TEST_F(SchedulerTest, LongPollWakesWhenWorkArrives) {
  std::thread submitter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    MEMAUDIT_ASSERT_OK(scheduler_->Submit("late", spec::SmallMembershipSpec(4)));
  });
  auto grant = scheduler_->Lease("w", 5000);
  submitter.join();
  MEMAUDIT_ASSERT_OK(grant);
  ASSERT_TRUE(grant->has_value());
  EXPECT_EQ((*grant)->task.audit_id, "late");
}

// New work wakes the long-polls it fits, and only those: a GPU worker's
// poll sleeps through CPU work, and a task given back wakes a waiting poll.
TEST_F(SchedulerTest, LongPollsWakeForWorkTheyFit) {
  WorkerOffer gpu = Offer(8, 1, 0, 8);
  std::optional<LeaseGrant> gpu_grant;
  absl::Time gpu_done;
  std::atomic<bool> gpu_returned{false};
  std::thread gpu_poll([&] {
    auto grant = scheduler_->Lease("gpu-worker", 10000, gpu);
    gpu_returned = true;
    MEMAUDIT_ASSERT_OK(grant);
    gpu_grant = *grant;
    gpu_done = absl::Now();
  });
  std::optional<LeaseGrant> cpu_grant;
  std::thread cpu_poll([&] {
    auto grant = scheduler_->Lease("cpu-worker", 10000, Offer(8, 0, 0, 8));
    MEMAUDIT_ASSERT_OK(grant);
    cpu_grant = *grant;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const absl::Time start = absl::Now();
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("cpu", spec::SmallMembershipSpec(4)));
  cpu_poll.join();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  ASSERT_TRUE(cpu_grant.has_value());
  EXPECT_EQ(cpu_grant->task.audit_id, "cpu");
  EXPECT_FALSE(gpu_returned) << "CPU work does not end a GPU worker's poll";

  v1::AuditSpec spec = spec::SmallMembershipSpec(4);
  spec.mutable_resources()->set_gpus_per_task(1);
  const absl::Time gpu_submit = absl::Now();
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("gpu", spec));
  gpu_poll.join();
  ASSERT_TRUE(gpu_grant.has_value());
  EXPECT_EQ(gpu_grant->task.audit_id, "gpu");
  EXPECT_LT(gpu_done - gpu_submit, absl::Seconds(5));

  // Every CPU task leased; a poll waits, and a release hands it the task.
  for (int i = 0; i < 3; ++i) MustLease();
  std::optional<LeaseGrant> again;
  std::thread waiting([&] {
    auto grant = scheduler_->Lease("w-2", 10000);
    MEMAUDIT_ASSERT_OK(grant);
    again = *grant;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const absl::Time released = absl::Now();
  MEMAUDIT_ASSERT_OK(scheduler_->Release(cpu_grant->task.lease_id, "shutting down"));
  waiting.join();
  EXPECT_LT(absl::Now() - released, absl::Seconds(5));
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->task.task_id, cpu_grant->task.task_id);
}

// The fixture's lease TTL is 1000 ms, so a registration lives 3000 ms unseen.
TEST_F(SchedulerTest, RegistrationsNeverSeenAgainExpire) {
  v1::WorkerCapabilities caps;
  for (int i = 0; i < 1000; ++i) scheduler_->RegisterWorker(caps);
  EXPECT_EQ(scheduler_->registered_workers(), 1000u);
  clock_.AdvanceMs(3000);
  MEMAUDIT_ASSERT_OK(scheduler_->ExpireLeases());
  EXPECT_EQ(scheduler_->registered_workers(), 1000u);  // exactly the TTL: not yet
  clock_.AdvanceMs(1);
  // Registering sweeps too, without waiting for the lease reaper.
  scheduler_->RegisterWorker(caps);
  EXPECT_EQ(scheduler_->registered_workers(), 1u);
  clock_.AdvanceMs(3001);
  MEMAUDIT_ASSERT_OK(scheduler_->ExpireLeases());
  EXPECT_EQ(scheduler_->registered_workers(), 0u);
}

TEST_F(SchedulerTest, WorkersThatLeaseOrHeartbeatStayRegistered) {
  v1::WorkerCapabilities caps;
  const std::string idle = scheduler_->RegisterWorker(caps);
  const std::string busy = scheduler_->RegisterWorker(caps);
  scheduler_->RegisterWorker(caps);  // never calls again
  // Nothing queued: the idle worker polls Lease, the busy one is still idle.
  for (int i = 0; i < 5; ++i) {
    clock_.AdvanceMs(800);
    for (const std::string& w : {idle, busy}) MEMAUDIT_ASSERT_OK(scheduler_->Lease(w, 0));
    MEMAUDIT_ASSERT_OK(scheduler_->ExpireLeases());
  }
  EXPECT_EQ(scheduler_->registered_workers(), 2u);  // the silent one expired
  // The busy worker trains and heartbeats; the idle one goes silent.
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a", spec::SmallMembershipSpec(4)));
  LeaseGrant g = MustLease(busy);
  for (int i = 0; i < 5; ++i) {
    clock_.AdvanceMs(800);
    MEMAUDIT_ASSERT_OK(scheduler_->Heartbeat(g.task.lease_id, i + 1));
    MEMAUDIT_ASSERT_OK(scheduler_->ExpireLeases());
  }
  EXPECT_EQ(scheduler_->registered_workers(), 1u);
  MEMAUDIT_ASSERT_OK(scheduler_->Complete(g.task.lease_id));
  clock_.AdvanceMs(3001);
  MEMAUDIT_ASSERT_OK(scheduler_->ExpireLeases());
  EXPECT_EQ(scheduler_->registered_workers(), 0u);
}

TEST_F(SchedulerTest, WorkerInALongPollStaysRegistered) {
  const std::string worker = scheduler_->RegisterWorker(v1::WorkerCapabilities());
  std::thread poller([&] { MEMAUDIT_EXPECT_OK(scheduler_->Lease(worker, 60000)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  clock_.AdvanceMs(10000);  // well past the registration TTL, but inside the poll
  MEMAUDIT_ASSERT_OK(scheduler_->ExpireLeases());
  EXPECT_EQ(scheduler_->registered_workers(), 1u);
  scheduler_->Shutdown();
  poller.join();
}

}  // namespace
}  // namespace memaudit::coordinator
