#include "services/scorer/scorer_service.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/base/seeding.h"
#include "common/testing/async_streams.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "services/scorer/scorer.h"
#include "services/scorer/scorer_store.h"
#include "spec/spec_validator.h"

namespace memaudit::scorer {
namespace {

using ::testing::HasSubstr;

class ScorerServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "/scorer_service_" + std::to_string(getpid()) + ".db";
    std::remove(path_.c_str());
    store_ = std::move(*ScorerStore::Open(path_));
    scorer_ = std::move(*Scorer::Create(store_.get(), &registry_));
    service_ = std::make_unique<ScorerServiceImpl>(everyone_.get(), scorer_.get(),
                                                   CapabilityKey::Insecure());
  }
  void TearDown() override { std::remove(path_.c_str()); }

  grpc::Status Open(const std::string& audit_id, const v1::AuditSpec& spec) {
    v1::OpenAuditRequest req;
    req.set_audit_id(audit_id);
    *req.mutable_spec() = spec;
    v1::OpenAuditResponse resp;
    grpc::ServerContext context;
    return service_->OpenAudit(&context, &req, &resp);
  }

  static v1::AuditSpec Membership(uint32_t reference_models) {
    v1::AuditSpec spec;
    spec.set_name("m");
    v1::MembershipAudit* m = spec.mutable_membership();
    m->set_reference_models(reference_models);
    m->mutable_dataset()->set_pool_size(200);
    m->mutable_training()->set_learning_rate(0.1);
    m->mutable_training()->set_epochs(1);
    // One task per model (auto would pack these): the tests check tasks by index.
    spec.mutable_resources()->set_models_per_task(1);
    spec::ApplyDefaults(&spec);
    return spec;
  }

  std::string path_;
  prometheus::Registry registry_;
  std::unique_ptr<ScorerStore> store_;
  std::unique_ptr<Scorer> scorer_;
  std::unique_ptr<Authenticator> everyone_ = Authenticator::AllowEveryone();
  std::unique_ptr<ScorerServiceImpl> service_;
};

TEST_F(ScorerServiceTest, OpensAValidSpec) {
  const grpc::Status status = Open("a-1", Membership(4));
  EXPECT_TRUE(status.ok()) << status.error_message();
}

// A caller other than the coordinator is held to the same rules: a hostile
// model count is refused with its field named, before anything is stored.
TEST_F(ScorerServiceTest, RefusesAnInvalidSpecNamingTheField) {
  const grpc::Status status = Open("a-2", Membership(4'000'000'000u));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("membership.reference_models"));
  EXPECT_THAT(scorer_->GetResults("a-2"), testing::StatusIs(absl::StatusCode::kNotFound));
}

TEST_F(ScorerServiceTest, RefusesAnOverlongAuditId) {
  const grpc::Status status = Open(std::string(1000, 'x'), Membership(4));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("audit_id"));
}

// Ingest over a real (in-process) channel: an observation is stored only
// with the capability of the task that sends it, and the first without one
// ends the stream unstored.
class ScorerIngestTest : public ScorerServiceTest {
 protected:
  void SetUp() override {
    ScorerServiceTest::SetUp();
    service_ = std::make_unique<ScorerServiceImpl>(everyone_.get(), scorer_.get(), Key());
    grpc::ServerBuilder builder;
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    stub_ = v1::ScorerService::NewStub(server_->InProcessChannel(grpc::ChannelArguments()));
    ASSERT_TRUE(Open("a-1", Membership(4)).ok());
  }
  void TearDown() override {
    server_->Shutdown();
    ScorerServiceTest::TearDown();
  }
  static CapabilityKey Key() {
    return *CapabilityKey::FromHex(
        "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
  }
  static v1::Observation Phi(uint32_t run, const std::string& capability) {
    v1::Observation o;
    o.set_audit_id("a-1");
    o.set_run(run);
    o.set_point("final");
    o.set_signal("phi");
    for (int j = 0; j < 200; ++j) o.add_values(0.5);
    o.set_capability(capability);
    return o;
  }
  grpc::Status Send(const std::vector<v1::Observation>& observations, v1::IngestResponse* resp) {
    grpc::ClientContext ctx;
    auto writer = stub_->Ingest(&ctx, resp);
    for (const v1::Observation& o : observations) {
      if (!writer->Write(o)) break;
    }
    writer->WritesDone();
    return writer->Finish();
  }
  int64_t Stored() { return *store_->CountObservations("a-1"); }
  // Lease 1 of a task, held by this test's caller (every caller is "admin
  // anonymous" under AllowEveryone).
  inline static const LeaseHolder kLease1{1, "admin anonymous"};

  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::ScorerService::Stub> stub_;
};

TEST_F(ScorerIngestTest, StoresOnlyObservationsCarryingTheirTasksCapability) {
  // Model 1 is task reference_model 1 (one model per task by default).
  const std::string task1 = TaskCapability(Key(), "a-1", {"reference_model", 1}, kLease1);
  v1::IngestResponse resp;
  grpc::Status status = Send({Phi(1, task1)}, &resp);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(resp.accepted(), 1u);
  EXPECT_EQ(Stored(), 1);

  for (const std::string& forged :
       {std::string(), task1, TaskCapability(Key(), "a-2", {"reference_model", 2}, kLease1),
        TaskCapability(CapabilityKey::Insecure(), "a-1", {"reference_model", 2}, kLease1)}) {
    SCOPED_TRACE(forged);
    status = Send({Phi(2, forged)}, &resp);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
    EXPECT_THAT(status.error_message(), HasSubstr("observation.capability"));
    EXPECT_EQ(Stored(), 1) << "nothing stored";
  }
  // A good observation after a forged one in the same stream: the stream ends
  // at the forged one.
  status = Send({Phi(3, ""), Phi(3, TaskCapability(Key(), "a-1", {"reference_model", 3}, kLease1))},
                &resp);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Stored(), 1);
}

TEST_F(ScorerIngestTest, CheckTaskCountsWhatIsMissing) {
  v1::CheckTaskRequest req;
  req.set_audit_id("a-1");
  req.set_role("reference_model");
  req.set_index(1);
  v1::CheckTaskResponse resp;
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(stub_->CheckTask(&ctx, req, &resp).ok());
  }
  // phi, loss and the population's loss (Membership's defaults give one).
  EXPECT_EQ(resp.missing_count(), 3u);
  EXPECT_THAT(resp.missing(0), HasSubstr("run 1 point final signal phi"));
  v1::IngestResponse ingested;
  ASSERT_TRUE(
      Send({Phi(1, TaskCapability(Key(), "a-1", {"reference_model", 1}, kLease1))}, &ingested)
          .ok());
  {
    grpc::ClientContext ctx;
    ASSERT_TRUE(stub_->CheckTask(&ctx, req, &resp).ok());
  }
  EXPECT_EQ(resp.missing_count(), 2u);
  EXPECT_THAT(resp.missing(0), HasSubstr("run 1 point final signal loss"));
  req.set_audit_id("a-unknown");
  grpc::ClientContext ctx;
  EXPECT_EQ(stub_->CheckTask(&ctx, req, &resp).error_code(), grpc::StatusCode::NOT_FOUND);
}

// WatchResults streams followed from the test's thread alone
// (async_streams.h).
class AsyncWatches : public memaudit::testing::AsyncStreams<v1::AuditResults> {
 public:
  void Watch(v1::ScorerService::Stub* stub, const std::string& audit_id) {
    v1::GetResultsRequest req;
    req.set_audit_id(audit_id);
    Start([&](grpc::ClientContext* ctx, grpc::CompletionQueue* cq, void* tag) {
      return stub->AsyncWatchResults(ctx, req, cq, tag);
    });
  }
};

// WatchResults of audit "w", whose observations the test stores itself.
class ScorerWatchTest : public ScorerIngestTest {
 protected:
  static constexpr int kWatchers = 200;
  static constexpr uint32_t kModels = 8;
  static constexpr uint32_t kPool = 200;

  void SetUp() override {
    ScorerIngestTest::SetUp();
    MEMAUDIT_ASSERT_OK(scorer_->OpenAudit("w", Spec()));
  }
  void TearDown() override {
    // A failed test's watches still wait: cancelled after the deadline.
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    ScorerIngestTest::TearDown();
  }

  static v1::AuditSpec Spec() {
    v1::AuditSpec spec;
    spec.set_name("w");
    spec.set_seed(3);
    v1::MembershipAudit* m = spec.mutable_membership();
    m->mutable_dataset()->set_pool_size(kPool);
    m->set_reference_models(kModels);
    for (const char* a : {"lira_online", "lira_offline", "loss"}) m->add_attacks(a);
    m->add_fpr_points(0.01);
    return spec;
  }
  // Members get a higher phi and a lower loss, plus per-example difficulty.
  static v1::Observation Observe(uint32_t run, const std::string& signal) {
    const KeepMatrix keep = BuildKeepMatrix(3, kModels, kPool);
    SplitMix64 rng(run * 7919 + (signal == "phi"));
    v1::Observation o;
    o.set_audit_id("w");
    o.set_run(run);
    o.set_point("final");
    o.set_signal(signal);
    for (uint32_t j = 0; j < kPool; ++j) {
      const double difficulty = (j % 10) * 0.3;
      const double phi = 2.0 - difficulty + (keep.in(run, j) ? 1.0 : 0.0) + rng.UniformDouble();
      o.add_values(signal == "phi" ? phi : std::log1p(std::exp(-phi)));
    }
    return o;
  }

  // Until `subscribers` wait on the scorer's changes (the watches re-read
  // every second, subscribing again at once), handling what arrives.
  bool AwaitSubscribers(AsyncWatches& watches, size_t subscribers) {
    return watches.Pump([&] { return scorer_->results_changes().subscribers() == subscribers; },
                        std::chrono::seconds(10));
  }
};

// A synchronous WatchResults held a server thread per stream while it
// waited; on the callback API a waiting stream is a subscription, and the
// results reach every one of them.
TEST_F(ScorerWatchTest, WaitingWatchesHoldNoThreadAndEachGetsTheResults) {
  AsyncWatches watches;
  // One first: what gRPC starts once (pollers, callback threads) is counted
  // before.
  watches.Watch(stub_.get(), "w");
  ASSERT_TRUE(watches.Pump([&] { return watches.EachReceived(1); }, std::chrono::seconds(10)));
  ASSERT_TRUE(AwaitSubscribers(watches, 1));
  const int threads_before = memaudit::testing::ThreadCount();

  for (int i = 1; i < kWatchers; ++i) watches.Watch(stub_.get(), "w");
  // Each gets the results as they are (nothing scored yet), then waits.
  ASSERT_TRUE(watches.Pump([&] { return watches.EachReceived(1); }, std::chrono::seconds(30)));
  ASSERT_TRUE(AwaitSubscribers(watches, kWatchers))
      << scorer_->results_changes().subscribers() << " of " << kWatchers << " watches wait";
  const int threads_waiting = memaudit::testing::ThreadCount();
  EXPECT_LT(threads_waiting - threads_before, kWatchers / 10)
      << threads_before << " threads with one watch waiting, " << threads_waiting << " with "
      << kWatchers;
  for (const auto& s : watches.streams()) {
    ASSERT_EQ(s->received.size(), 1u);
    EXPECT_FALSE(s->received[0].complete());
  }

  // The last observation completes the audit: every watch gets the results
  // and ends.
  for (uint32_t run = 0; run < kModels; ++run) {
    for (const char* signal : {"phi", "loss"}) {
      MEMAUDIT_ASSERT_OK(scorer_->Ingest(Observe(run, signal)));
    }
  }
  MEMAUDIT_ASSERT_OK(scorer_->ScoreIfComplete("w"));
  ASSERT_TRUE(scorer_->GetResults("w")->complete());
  ASSERT_TRUE(watches.Pump([&] { return watches.AllDone(); }, std::chrono::seconds(30)));
  for (const auto& s : watches.streams()) {
    EXPECT_TRUE(s->status.ok()) << s->status.error_message();
    ASSERT_GE(s->received.size(), 2u);
    EXPECT_TRUE(s->received.back().complete());
    EXPECT_EQ(s->received.back().audit_id(), "w");
  }
  EXPECT_EQ(scorer_->results_changes().subscribers(), 0u);
}

// A watch the client cancels while it waits ends at once; its subscription,
// called back later, finds the stream gone and subscribes no more. An audit
// never opened is refused as GetResults refuses it.
TEST_F(ScorerWatchTest, AWatchCancelledWhileItWaitsEndsAndAnUnknownAuditIsRefused) {
  AsyncWatches watches;
  for (int i = 0; i < 10; ++i) watches.Watch(stub_.get(), "w");
  ASSERT_TRUE(watches.Pump([&] { return watches.EachReceived(1); }, std::chrono::seconds(10)));
  ASSERT_TRUE(AwaitSubscribers(watches, 10));
  for (const auto& s : watches.streams()) s->ctx.TryCancel();
  ASSERT_TRUE(watches.Pump([&] { return watches.AllDone(); }, std::chrono::seconds(10)));
  for (const auto& s : watches.streams()) {
    EXPECT_EQ(s->status.error_code(), grpc::StatusCode::CANCELLED);
  }
  // The subscriptions time out (1 s) into finished streams.
  EXPECT_TRUE(AwaitSubscribers(watches, 0)) << scorer_->results_changes().subscribers();

  grpc::ClientContext ctx;
  v1::GetResultsRequest req;
  req.set_audit_id("a-unknown");
  auto reader = stub_->WatchResults(&ctx, req);
  v1::AuditResults results;
  EXPECT_FALSE(reader->Read(&results));
  const grpc::Status status = reader->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(status.error_message(), scorer_->GetResults("a-unknown").status().message());
}

}  // namespace
}  // namespace memaudit::scorer

namespace memaudit::scorer {
namespace {

// Workers may only Ingest; everything else is the coordinator's.
TEST(ScorerCallPolicyTest, WorkersIngestAndTheCoordinatorDoesTheRest) {
  const CallPolicy policy = ScorerCallPolicy();
  const std::vector<Role> worker{Role::kWorker}, coordinator{Role::kCoordinator};
  EXPECT_EQ(policy.at("/memaudit.v1.ScorerService/Ingest"), worker);
  for (const char* method : {"OpenAudit", "GetResults", "WatchResults", "CheckTask", "Export",
                             "EndLease", "RevokeWorker", "DropAudit"}) {
    EXPECT_EQ(policy.at(absl::StrCat("/memaudit.v1.ScorerService/", method)), coordinator)
        << method;
  }
  EXPECT_FALSE(policy.contains("/memaudit.v1.AuditService/Submit"));
}

}  // namespace
}  // namespace memaudit::scorer

namespace memaudit::scorer {
namespace {

// The coordinator-only lease RPCs bound their ids before any lookup.
TEST_F(ScorerIngestTest, EndLeaseAndDropAuditRefuseOversizedIds) {
  grpc::ClientContext end_ctx;
  v1::EndLeaseRequest end;
  end.set_audit_id(std::string(200, 'a'));
  v1::EndLeaseResponse ended;
  const grpc::Status refused = stub_->EndLease(&end_ctx, end, &ended);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(refused.error_message(), HasSubstr("audit_id: 1 to 128 bytes (got 200)"));
  grpc::ClientContext drop_ctx;
  v1::DropAuditRequest drop;
  v1::DropAuditResponse dropped;
  EXPECT_EQ(stub_->DropAudit(&drop_ctx, drop, &dropped).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

}  // namespace
}  // namespace memaudit::scorer
