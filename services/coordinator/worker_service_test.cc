// WorkerServiceImpl against a real scheduler and an in-process scorer that
// answers CheckTask as each test says: ids bound to their caller, the task's
// capability on every lease, and a Complete that counts only once the scorer
// holds the task's observations. (Role checks need real credentials: the
// integration test tests/integration/trust_test.cc covers them.)
#include "services/coordinator/worker_service.h"

#include <grpcpp/grpcpp.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/testing/async_streams.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/coordinator/scheduler_fixture.h"
#include "spec/test_specs.h"

namespace memaudit::coordinator {
namespace {

using ::memaudit::testing::StatusIs;
using ::testing::HasSubstr;

CapabilityKey Key() {
  return *CapabilityKey::FromHex(
      "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
}

// CheckTask answers what the test sets; every call is recorded.
class FakeScorer final : public v1::ScorerService::Service {
 public:
  grpc::Status CheckTask(grpc::ServerContext*, const v1::CheckTaskRequest* req,
                         v1::CheckTaskResponse* resp) override {
    absl::MutexLock lock(&mu_);
    last_ = *req;
    *resp = answer_;
    return status_;
  }
  void Answer(grpc::Status status, v1::CheckTaskResponse answer = {}) {
    absl::MutexLock lock(&mu_);
    status_ = std::move(status);
    answer_ = std::move(answer);
  }
  v1::CheckTaskRequest last() {
    absl::MutexLock lock(&mu_);
    return last_;
  }

 private:
  absl::Mutex mu_;
  grpc::Status status_ ABSL_GUARDED_BY(mu_) = grpc::Status::OK;
  v1::CheckTaskResponse answer_ ABSL_GUARDED_BY(mu_);
  v1::CheckTaskRequest last_ ABSL_GUARDED_BY(mu_);
};

class WorkerServiceTest : public SchedulerFixture {
 protected:
  void SetUp() override {
    SchedulerFixture::SetUp();
    grpc::ServerBuilder builder;
    builder.RegisterService(&scorer_);
    scorer_server_ = builder.BuildAndStart();
    service_ = std::make_unique<WorkerServiceImpl>(
        everyone_.get(), scheduler_.get(), "scorer:7401", 200, 1000, Key(),
        v1::ScorerService::NewStub(scorer_server_->InProcessChannel(grpc::ChannelArguments())));
    // The service answers through gRPC's callback API: called through a
    // real (in-process) server.
    grpc::ServerBuilder workers;
    workers.RegisterService(service_.get());
    server_ = workers.BuildAndStart();
    stub_ = v1::WorkerService::NewStub(server_->InProcessChannel(grpc::ChannelArguments()));
    MEMAUDIT_ASSERT_OK(scheduler_->Submit("a-1", spec::SmallMembershipSpec(4)));
  }
  void TearDown() override {
    server_->Shutdown();
    scorer_server_->Shutdown();
    SchedulerFixture::TearDown();
  }

  std::string Register() {
    grpc::ClientContext ctx;
    v1::RegisterRequest req;
    v1::RegisterResponse resp;
    EXPECT_TRUE(stub_->Register(&ctx, req, &resp).ok());
    return resp.worker_id();
  }
  v1::LeaseResponse Lease(const std::string& worker_id) {
    grpc::ClientContext ctx;
    v1::LeaseRequest req;
    req.set_worker_id(worker_id);
    v1::LeaseResponse resp;
    const grpc::Status status = stub_->Lease(&ctx, req, &resp);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return resp;
  }
  grpc::Status Complete(const std::string& worker_id, const std::string& lease_id,
                        const std::string& numeric_environment = "") {
    grpc::ClientContext ctx;
    v1::CompleteRequest req;
    req.set_worker_id(worker_id);
    req.set_lease_id(lease_id);
    req.set_numeric_environment(numeric_environment);
    v1::CompleteResponse resp;
    return stub_->Complete(&ctx, req, &resp);
  }
  grpc::Status Heartbeat(const std::string& lease_id, v1::HeartbeatResponse* resp) {
    grpc::ClientContext ctx;
    v1::HeartbeatRequest req;
    req.set_lease_id(lease_id);
    return stub_->Heartbeat(&ctx, req, resp);
  }

  // Every caller is "admin anonymous" here (as under --insecure).
  const Identity me_{Role::kAdmin, "anonymous"};
  std::unique_ptr<Authenticator> everyone_ = Authenticator::AllowEveryone();
  FakeScorer scorer_;
  std::unique_ptr<grpc::Server> scorer_server_;
  std::unique_ptr<WorkerServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::WorkerService::Stub> stub_;
};

TEST(WorkerIdTest, AWorkerIdIsGoodForTheIdentityThatRegisteredItOnly) {
  const Identity alice{Role::kWorker, "alice"};
  const Identity bob{Role::kWorker, "bob"};
  const std::string id = BindWorkerId(Key(), "w-1", alice);
  EXPECT_THAT(UnbindWorkerId(Key(), id, alice), memaudit::testing::IsOkAndHolds("w-1"));
  EXPECT_THAT(UnbindWorkerId(Key(), id, bob),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("worker bob")));
  EXPECT_THAT(UnbindWorkerId(CapabilityKey::Insecure(), id, alice),
              StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(UnbindWorkerId(Key(), "w-1", alice), StatusIs(absl::StatusCode::kPermissionDenied))
      << "an id never registered";
  EXPECT_THAT(UnbindWorkerId(Key(), "w-2" + id.substr(3), alice),
              StatusIs(absl::StatusCode::kPermissionDenied));
}

TEST(LeaseIdTest, ALeaseIdIsGoodForItsTaskAndHolderOnly) {
  const Identity alice{Role::kWorker, "alice"};
  const LeaseBinding lease{"l-1", "a-1", {"reference_model", 3}};
  const std::string id = BindLease(Key(), lease, alice);
  auto back = UnbindLease(Key(), id, alice);
  MEMAUDIT_ASSERT_OK(back);
  EXPECT_EQ(back->lease_id, "l-1");
  EXPECT_EQ(back->audit_id, "a-1");
  EXPECT_EQ(back->task.ToString(), "reference_model 3");
  EXPECT_THAT(UnbindLease(Key(), id, {Role::kWorker, "bob"}),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("worker bob")));
  // Another task under the same MAC: refused.
  std::string other = id;
  other.replace(other.find(".3.reference_model"), 2, ".4");
  EXPECT_THAT(UnbindLease(Key(), other, alice), StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(UnbindLease(Key(), "l-1", alice), StatusIs(absl::StatusCode::kPermissionDenied));
  EXPECT_THAT(UnbindLease(Key(), std::string(5000, '.'), alice),
              StatusIs(absl::StatusCode::kPermissionDenied));
}

TEST_F(WorkerServiceTest, ALeaseCarriesItsTasksCapabilityAndIdsBoundToTheCaller) {
  const std::string worker = Register();
  const v1::LeaseResponse lease = Lease(worker);
  ASSERT_TRUE(lease.has_task());
  const TaskRef task{lease.task().role(), lease.task().index()};
  EXPECT_EQ(VerifyTaskCapability(Key(), "a-1", task, me_.ToString(), lease.capability()),
            std::optional<uint32_t>(1));
  EXPECT_EQ(VerifyTaskCapability(Key(), "a-1", task, "worker someone-else", lease.capability()),
            std::nullopt);
  auto bound = UnbindLease(Key(), lease.lease_id(), me_);
  MEMAUDIT_ASSERT_OK(bound);
  EXPECT_EQ(bound->audit_id, "a-1");
  EXPECT_EQ(bound->task.ToString(), task.ToString());

  // An id this coordinator did not sign gets nothing.
  grpc::ClientContext ctx;
  v1::LeaseRequest forged;
  forged.set_worker_id("w-0123456789abcdef0123456789abcdef");
  v1::LeaseResponse none;
  EXPECT_EQ(stub_->Lease(&ctx, forged, &none).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_FALSE(none.has_task());
  v1::HeartbeatResponse beat;
  EXPECT_EQ(Heartbeat(bound->lease_id, &beat).error_code(), grpc::StatusCode::PERMISSION_DENIED)
      << "the scheduler's own lease id, without the coordinator's MAC";
  EXPECT_EQ(Complete(worker, bound->lease_id).error_code(), grpc::StatusCode::PERMISSION_DENIED);
}

// Leave gives back what the caller's worker holds; a forged worker id
// releases nothing.
TEST_F(WorkerServiceTest, LeaveGivesBackTheWorkersLeases) {
  const std::string worker = Register();
  ASSERT_TRUE(Lease(worker).has_task());
  ASSERT_TRUE(Lease(worker).has_task());
  auto leave = [&](const std::string& id, v1::LeaveResponse* resp) {
    grpc::ClientContext ctx;
    v1::LeaveRequest req;
    req.set_worker_id(id);
    return stub_->Leave(&ctx, req, resp);
  };
  v1::LeaveResponse forged;
  EXPECT_EQ(leave("w-0123456789abcdef0123456789abcdef.00", &forged).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(scheduler_->Get("a-1")->tasks().running(), 2u);
  v1::LeaveResponse resp;
  ASSERT_TRUE(leave(worker, &resp).ok());
  EXPECT_EQ(resp.released(), 2u);
  EXPECT_EQ(scheduler_->Get("a-1")->tasks().queued(), 4u);
}

// A worker's claims are bounded and checked before they are used: a free
// capacity above the offer, or a hostname no DNS name has, is refused by name.
TEST_F(WorkerServiceTest, CapabilitiesOutOfBoundsAreRefusedByName) {
  const std::string worker = Register();
  grpc::ClientContext lease_ctx;
  v1::LeaseRequest lease;
  lease.set_worker_id(worker);
  lease.mutable_capabilities()->set_threads(2);
  lease.mutable_free()->set_threads(3);
  v1::LeaseResponse none;
  const grpc::Status refused = stub_->Lease(&lease_ctx, lease, &none);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(refused.error_message(), HasSubstr("free.threads"));
  EXPECT_FALSE(none.has_task());

  grpc::ClientContext register_ctx;
  v1::RegisterRequest req;
  req.mutable_capabilities()->set_hostname(std::string(1000, 'h'));
  v1::RegisterResponse resp;
  const grpc::Status long_name = stub_->Register(&register_ctx, req, &resp);
  EXPECT_EQ(long_name.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(long_name.error_message(), HasSubstr("capabilities.hostname"));
}

TEST_F(WorkerServiceTest, CompleteWithoutTheObservationsDoesNotCount) {
  const std::string worker = Register();
  v1::LeaseResponse lease = Lease(worker);
  v1::CheckTaskResponse missing;
  missing.set_missing_count(2);
  missing.add_missing("run 0 point final signal phi");
  missing.add_missing("run 0 point final signal loss");
  scorer_.Answer(grpc::Status::OK, missing);
  const grpc::Status refused = Complete(worker, lease.lease_id());
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(refused.error_message(), HasSubstr("2 missing (run 0 point final signal phi"));
  EXPECT_EQ(scorer_.last().audit_id(), "a-1");
  EXPECT_EQ(scorer_.last().role(), lease.task().role());
  EXPECT_EQ(scorer_.last().index(), lease.task().index());
  // The task went back to the queue with its attempt spent; nothing succeeded.
  auto audit = scheduler_->Get("a-1");
  MEMAUDIT_ASSERT_OK(audit);
  EXPECT_EQ(audit->tasks().succeeded(), 0u);
  EXPECT_EQ(audit->tasks().queued(), 4u);
  v1::HeartbeatResponse beat;
  ASSERT_TRUE(Heartbeat(lease.lease_id(), &beat).ok());
  EXPECT_TRUE(beat.stop()) << "the lease is gone";

  // Sent again with the scorer holding everything: it counts.
  scorer_.Answer(grpc::Status::OK);
  lease = Lease(worker);
  ASSERT_TRUE(lease.has_task());
  EXPECT_EQ(lease.task().attempt(), 2u) << "a retried task";
  const grpc::Status completed = Complete(worker, lease.lease_id());
  EXPECT_TRUE(completed.ok()) << completed.error_message();
  EXPECT_EQ(scheduler_->Get("a-1")->tasks().succeeded(), 1u);
}

TEST_F(WorkerServiceTest, ACompletedTaskRecordsWhatTrainedItAndBadTextIsRefusedByName) {
  const std::string worker = Register();
  const v1::LeaseResponse lease = Lease(worker);
  scorer_.Answer(grpc::Status::OK);
  for (const std::string& bad : {std::string(257, 'x'), std::string("cpu\n")}) {
    const grpc::Status refused = Complete(worker, lease.lease_id(), bad);
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(refused.error_message(), HasSubstr("numeric_environment: "));
  }
  EXPECT_EQ(scheduler_->Get("a-1")->tasks().succeeded(), 0u) << "a refused Complete counts not";
  const grpc::Status completed = Complete(worker, lease.lease_id(), "cpu; ATen AVX2");
  ASSERT_TRUE(completed.ok()) << completed.error_message();
  EXPECT_THAT(scheduler_->Get("a-1")->spec().resources().numeric_environments(),
              ::testing::ElementsAre("cpu; ATen AVX2"));
}

TEST_F(WorkerServiceTest, AScorerOutOfReachKeepsTheLeaseForARetry) {
  const std::string worker = Register();
  const v1::LeaseResponse lease = Lease(worker);
  scorer_.Answer(grpc::Status(grpc::StatusCode::UNAVAILABLE, "scorer restarting"));
  const grpc::Status status = Complete(worker, lease.lease_id());
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(status.error_message(), HasSubstr("scorer restarting"));
  v1::HeartbeatResponse beat;
  ASSERT_TRUE(Heartbeat(lease.lease_id(), &beat).ok());
  EXPECT_FALSE(beat.stop()) << "still held";
  scorer_.Answer(grpc::Status::OK);
  EXPECT_TRUE(Complete(worker, lease.lease_id()).ok());
}

TEST_F(WorkerServiceTest, AnAuditTheScorerCannotScoreFailsWithItsReason) {
  const std::string worker = Register();
  const v1::LeaseResponse lease = Lease(worker);
  v1::CheckTaskResponse failed;
  failed.set_audit_error("rmia: target_pr_x[0] = inf");
  scorer_.Answer(grpc::Status::OK, failed);
  EXPECT_EQ(Complete(worker, lease.lease_id()).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  auto audit = scheduler_->Get("a-1");
  MEMAUDIT_ASSERT_OK(audit);
  EXPECT_EQ(audit->state(), v1::FAILED);
  EXPECT_THAT(audit->error(), HasSubstr("the scorer cannot score the audit: rmia"));
}

TEST_F(WorkerServiceTest, OneHeartbeatRenewsEveryLeaseOfTheWorker) {
  const std::string worker = Register();
  const v1::LeaseResponse a = Lease(worker);
  const v1::LeaseResponse b = Lease(worker);
  const v1::LeaseResponse c = Lease(worker);
  ASSERT_TRUE(a.has_task() && b.has_task() && c.has_task());
  MEMAUDIT_ASSERT_OK(scheduler_->Cancel("a-1"));  // every lease is gone now
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a-2", spec::SmallMembershipSpec(4)));
  const v1::LeaseResponse d = Lease(worker);
  const v1::LeaseResponse e = Lease(worker);

  grpc::ClientContext ctx;
  v1::HeartbeatRequest req;
  req.set_worker_id(worker);
  req.set_lease_id(d.lease_id());
  req.set_steps_done(3);
  v1::LeaseBeat* beat = req.add_more();
  beat->set_lease_id(e.lease_id());
  beat->set_steps_done(5);
  beat = req.add_more();
  beat->set_lease_id(a.lease_id());
  v1::HeartbeatResponse resp;
  ASSERT_TRUE(stub_->Heartbeat(&ctx, req, &resp).ok());
  EXPECT_FALSE(resp.stop());
  ASSERT_EQ(resp.more_size(), 2);
  EXPECT_FALSE(resp.more(0).stop()) << "held";
  EXPECT_TRUE(resp.more(1).stop()) << "its audit was cancelled";
  EXPECT_EQ(scheduler_->Get("a-2")->steps_done(), 8u);

  // A lease id the caller was not granted refuses the whole call.
  grpc::ClientContext forged_ctx;
  req.mutable_more(0)->set_lease_id("l-x.00.0.reference_model.a-2");
  EXPECT_EQ(stub_->Heartbeat(&forged_ctx, req, &resp).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  // So do more leases than a worker can run.
  grpc::ClientContext many_ctx;
  req.clear_more();
  for (int i = 0; i < 4097; ++i) req.add_more()->set_lease_id(e.lease_id());
  const grpc::Status many = stub_->Heartbeat(&many_ctx, req, &resp);
  EXPECT_EQ(many.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(many.error_message(), HasSubstr("more"));
}

// A Lease waiting for work through the callback API, its answer kept.
struct WaitingLease {
  grpc::ClientContext ctx;
  v1::LeaseRequest req;
  v1::LeaseResponse resp;
  absl::Notification answered;
  grpc::Status status;
};

class WorkerServiceWaitTest : public WorkerServiceTest {
 protected:
  // Leases every queued task (no wait), so later calls have to wait.
  std::vector<v1::LeaseResponse> DrainQueue(const std::string& worker) {
    std::vector<v1::LeaseResponse> held;
    for (v1::LeaseResponse r = Lease(worker); r.has_task(); r = Lease(worker)) held.push_back(r);
    return held;
  }
  std::unique_ptr<WaitingLease> StartWaiting(const std::string& worker, uint32_t wait_ms) {
    auto w = std::make_unique<WaitingLease>();
    w->req.set_worker_id(worker);
    w->req.set_wait_ms(wait_ms);
    WaitingLease* raw = w.get();
    stub_->async()->Lease(&raw->ctx, &raw->req, &raw->resp, [raw](grpc::Status status) {
      raw->status = std::move(status);
      raw->answered.Notify();
    });
    return w;
  }
  bool WaitForWaiters(size_t n) {
    for (int i = 0; i < 2000; ++i) {
      if (scheduler_->waiting_leases() == n) return true;
      absl::SleepFor(absl::Milliseconds(5));
    }
    return false;
  }
};

TEST_F(WorkerServiceWaitTest, AWaitingLeaseGetsTheTaskReleasedMeanwhile) {
  const std::string worker = Register();
  std::vector<v1::LeaseResponse> held = DrainQueue(worker);
  ASSERT_FALSE(held.empty());
  auto waiting = StartWaiting(worker, 20000);
  ASSERT_TRUE(WaitForWaiters(1));
  EXPECT_FALSE(waiting->answered.HasBeenNotified());

  grpc::ClientContext ctx;
  v1::FailRequest release;
  release.set_worker_id(worker);
  release.set_lease_id(held[0].lease_id());
  release.set_kind(v1::INTERRUPTED);
  v1::FailResponse released;
  ASSERT_TRUE(stub_->Fail(&ctx, release, &released).ok());

  ASSERT_TRUE(waiting->answered.WaitForNotificationWithTimeout(absl::Seconds(10)));
  ASSERT_TRUE(waiting->status.ok()) << waiting->status.error_message();
  ASSERT_TRUE(waiting->resp.has_task());
  EXPECT_EQ(waiting->resp.task().task_id(), held[0].task().task_id());
  EXPECT_EQ(scheduler_->waiting_leases(), 0u);
}

TEST_F(WorkerServiceWaitTest, AWaitThatEndsWithoutWorkAnswersNoTask) {
  const std::string worker = Register();
  DrainQueue(worker);
  auto waiting = StartWaiting(worker, 100);
  ASSERT_TRUE(waiting->answered.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_TRUE(waiting->status.ok());
  EXPECT_FALSE(waiting->resp.has_task());
  EXPECT_EQ(scheduler_->waiting_leases(), 0u);
}

TEST_F(WorkerServiceWaitTest, AClientThatGoesAwayGivesItsPlaceUp) {
  const std::string worker = Register();
  std::vector<v1::LeaseResponse> held = DrainQueue(worker);
  auto gone = StartWaiting(worker, 30000);
  ASSERT_TRUE(WaitForWaiters(1));
  gone->ctx.TryCancel();
  ASSERT_TRUE(gone->answered.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_EQ(gone->status.error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(WaitForWaiters(0)) << "the scheduler still holds the departed call";

  // A task queued now goes to a caller still there, not to the departed one.
  auto present = StartWaiting(worker, 20000);
  ASSERT_TRUE(WaitForWaiters(1));
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a-2", spec::SmallMembershipSpec(4)));
  ASSERT_TRUE(present->answered.WaitForNotificationWithTimeout(absl::Seconds(10)));
  ASSERT_TRUE(present->resp.has_task());
  EXPECT_EQ(present->resp.task().audit_id(), "a-2");
}

// The point of the callback API: a long-poll costs the server no thread.
TEST_F(WorkerServiceWaitTest, HundredsOfWaitingLeasesHoldNoThreadAndAreServedInOrder) {
  const std::string worker = Register();
  DrainQueue(worker);
  constexpr size_t kWaiting = 300;
  const size_t threads_before = memaudit::testing::ThreadCount();
  std::vector<std::unique_ptr<WaitingLease>> waiting;
  for (size_t i = 0; i < kWaiting; ++i) waiting.push_back(StartWaiting(worker, 30000));
  ASSERT_TRUE(WaitForWaiters(kWaiting));
  const size_t threads_waiting = memaudit::testing::ThreadCount();
  EXPECT_LT(threads_waiting, threads_before + 20)
      << "threads grew from " << threads_before << " to " << threads_waiting << " for " << kWaiting
      << " waiting calls";

  // Four new tasks: four waiters are answered with one each, the rest wait on.
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a-2", spec::SmallMembershipSpec(4)));
  ASSERT_TRUE(WaitForWaiters(kWaiting - 4));
  scheduler_->Shutdown();  // answers the rest: no task
  std::set<std::string> granted;
  for (auto& w : waiting) {
    ASSERT_TRUE(w->answered.WaitForNotificationWithTimeout(absl::Seconds(30)));
    EXPECT_TRUE(w->status.ok()) << w->status.error_message();
    if (w->resp.has_task()) granted.insert(w->resp.task().task_id());
  }
  EXPECT_EQ(granted.size(), 4u);
}

}  // namespace
}  // namespace memaudit::coordinator
