// The client's Submit against an in-process AuditService whose first answer
// is lost: sent once more with the same request_id, and only with one.
#include "cli/client.h"

#include <grpcpp/grpcpp.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit::cli {
namespace {

using ::memaudit::testing::StatusIs;
using ::testing::ElementsAre;

// Answers each Submit with the next of `codes`, then OK.
class FakeAuditService final : public v1::AuditService::Service {
 public:
  explicit FakeAuditService(std::vector<grpc::StatusCode> codes) : codes_(std::move(codes)) {}

  grpc::Status Submit(grpc::ServerContext*, const v1::SubmitRequest* req,
                      v1::SubmitResponse* resp) override {
    absl::MutexLock lock(&mu_);
    request_ids_.push_back(req->request_id());
    if (request_ids_.size() <= codes_.size()) {
      return grpc::Status(codes_[request_ids_.size() - 1], "lost");
    }
    resp->set_audit_id("a-1");
    return grpc::Status::OK;
  }

  std::vector<std::string> request_ids() {
    absl::MutexLock lock(&mu_);
    return request_ids_;
  }

 private:
  const std::vector<grpc::StatusCode> codes_;
  absl::Mutex mu_;
  std::vector<std::string> request_ids_ ABSL_GUARDED_BY(mu_);
};

class ClientSubmitTest : public ::testing::Test {
 protected:
  void Serve(std::vector<grpc::StatusCode> codes) {
    service_ = std::make_unique<FakeAuditService>(std::move(codes));
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ClientCredentials plain;
    plain.tls.insecure = true;
    auto client = Client::Connect(absl::StrCat("127.0.0.1:", port), plain);
    MEMAUDIT_ASSERT_OK(client);
    client_ = std::make_unique<Client>(*std::move(client));
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
  }

  std::unique_ptr<FakeAuditService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<Client> client_;
};

TEST_F(ClientSubmitTest, ALostAnswerIsSentOnceMoreWithTheSameRequestId) {
  ASSERT_NO_FATAL_FAILURE(Serve({grpc::StatusCode::UNAVAILABLE}));
  auto submitted = client_->Submit(v1::AuditSpec(), "r-1");
  MEMAUDIT_ASSERT_OK(submitted);
  EXPECT_EQ(submitted->audit_id(), "a-1");
  EXPECT_THAT(service_->request_ids(), ElementsAre("r-1", "r-1"));
}

TEST_F(ClientSubmitTest, ALostAnswerIsSentOnlyOnceMore) {
  ASSERT_NO_FATAL_FAILURE(
      Serve({grpc::StatusCode::DEADLINE_EXCEEDED, grpc::StatusCode::UNAVAILABLE}));
  EXPECT_THAT(client_->Submit(v1::AuditSpec(), "r-1"), StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(service_->request_ids(), ElementsAre("r-1", "r-1"));
}

TEST_F(ClientSubmitTest, NotWithoutARequestIdNorForARefusal) {
  ASSERT_NO_FATAL_FAILURE(
      Serve({grpc::StatusCode::UNAVAILABLE, grpc::StatusCode::RESOURCE_EXHAUSTED}));
  EXPECT_THAT(client_->Submit(v1::AuditSpec()), StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(client_->Submit(v1::AuditSpec(), "r-2"),
              StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(service_->request_ids(), ElementsAre("", "r-2"));
}

TEST(NewRequestIdTest, IsRandomHex) {
  std::set<std::string> ids;
  for (int i = 0; i < 100; ++i) {
    auto id = NewRequestId();
    MEMAUDIT_ASSERT_OK(id);
    EXPECT_THAT(*id, ::testing::MatchesRegex("r-[0-9a-f]{32}"));
    ids.insert(*id);
  }
  EXPECT_EQ(ids.size(), 100u);
}

}  // namespace
}  // namespace memaudit::cli
