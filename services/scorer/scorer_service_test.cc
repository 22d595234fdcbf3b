#include "services/scorer/scorer_service.h"

#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "services/coordinator/spec_validator.h"
#include "services/scorer/scorer.h"
#include "services/scorer/scorer_store.h"

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
    service_ = std::make_unique<ScorerServiceImpl>(everyone_.get(), scorer_.get());
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
    coordinator::ApplyDefaults(&spec);
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

}  // namespace
}  // namespace memaudit::scorer
