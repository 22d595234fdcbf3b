// WorkerServiceImpl against a real scheduler and an in-process scorer that
// answers CheckTask as each test says: ids bound to their caller, the task's
// capability on every lease, and a Complete that counts only once the scorer
// holds the task's observations. (Role checks need real credentials: the
// integration test tests/integration/trust_test.cc covers them.)
#include "services/coordinator/worker_service.h"

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/coordinator/scheduler_fixture.h"
#include "services/coordinator/test_specs.h"

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
    server_ = builder.BuildAndStart();
    service_ = std::make_unique<WorkerServiceImpl>(
        everyone_.get(), scheduler_.get(), "scorer:7401", 200, 1000, Key(),
        v1::ScorerService::NewStub(server_->InProcessChannel(grpc::ChannelArguments())));
    MEMAUDIT_ASSERT_OK(scheduler_->Submit("a-1", SmallMembershipSpec(4)));
  }
  void TearDown() override {
    server_->Shutdown();
    SchedulerFixture::TearDown();
  }

  std::string Register() {
    grpc::ServerContext ctx;
    v1::RegisterRequest req;
    v1::RegisterResponse resp;
    EXPECT_TRUE(service_->Register(&ctx, &req, &resp).ok());
    return resp.worker_id();
  }
  v1::LeaseResponse Lease(const std::string& worker_id) {
    grpc::ServerContext ctx;
    v1::LeaseRequest req;
    req.set_worker_id(worker_id);
    v1::LeaseResponse resp;
    const grpc::Status status = service_->Lease(&ctx, &req, &resp);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return resp;
  }
  grpc::Status Complete(const std::string& worker_id, const std::string& lease_id) {
    grpc::ServerContext ctx;
    v1::CompleteRequest req;
    req.set_worker_id(worker_id);
    req.set_lease_id(lease_id);
    v1::CompleteResponse resp;
    return service_->Complete(&ctx, &req, &resp);
  }
  grpc::Status Heartbeat(const std::string& lease_id, v1::HeartbeatResponse* resp) {
    grpc::ServerContext ctx;
    v1::HeartbeatRequest req;
    req.set_lease_id(lease_id);
    return service_->Heartbeat(&ctx, &req, resp);
  }

  // Every caller is "admin anonymous" here (as under --insecure).
  const Identity me_{Role::kAdmin, "anonymous"};
  std::unique_ptr<Authenticator> everyone_ = Authenticator::AllowEveryone();
  FakeScorer scorer_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<WorkerServiceImpl> service_;
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
  EXPECT_TRUE(VerifyTaskCapability(Key(), "a-1", task, lease.capability()));
  auto bound = UnbindLease(Key(), lease.lease_id(), me_);
  MEMAUDIT_ASSERT_OK(bound);
  EXPECT_EQ(bound->audit_id, "a-1");
  EXPECT_EQ(bound->task.ToString(), task.ToString());

  // An id this coordinator did not sign gets nothing.
  grpc::ServerContext ctx;
  v1::LeaseRequest forged;
  forged.set_worker_id("w-0123456789abcdef0123456789abcdef");
  v1::LeaseResponse none;
  EXPECT_EQ(service_->Lease(&ctx, &forged, &none).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_FALSE(none.has_task());
  v1::HeartbeatResponse beat;
  EXPECT_EQ(Heartbeat(bound->lease_id, &beat).error_code(), grpc::StatusCode::PERMISSION_DENIED)
      << "the scheduler's own lease id, without the coordinator's MAC";
  EXPECT_EQ(Complete(worker, bound->lease_id).error_code(), grpc::StatusCode::PERMISSION_DENIED);
}

// A worker's claims are bounded and checked before they are used: a free
// capacity above the offer, or a hostname no DNS name has, is refused by name.
TEST_F(WorkerServiceTest, CapabilitiesOutOfBoundsAreRefusedByName) {
  const std::string worker = Register();
  grpc::ServerContext lease_ctx;
  v1::LeaseRequest lease;
  lease.set_worker_id(worker);
  lease.mutable_capabilities()->set_threads(2);
  lease.mutable_free()->set_threads(3);
  v1::LeaseResponse none;
  const grpc::Status refused = service_->Lease(&lease_ctx, &lease, &none);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(refused.error_message(), HasSubstr("free.threads"));
  EXPECT_FALSE(none.has_task());

  grpc::ServerContext register_ctx;
  v1::RegisterRequest req;
  req.mutable_capabilities()->set_hostname(std::string(1000, 'h'));
  v1::RegisterResponse resp;
  const grpc::Status long_name = service_->Register(&register_ctx, &req, &resp);
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

}  // namespace
}  // namespace memaudit::coordinator
