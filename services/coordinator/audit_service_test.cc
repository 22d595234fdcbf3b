// Submit's checks that come before the scheduler and the scorer: a spec
// naming a file outside the coordinator's data roots is refused with the
// field named (the services under it are never reached, so none exists here).
#include "services/coordinator/audit_service.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/coordinator/test_specs.h"

namespace memaudit::coordinator {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;

// <tmp>/data (the root), <tmp>/outside/secret, <tmp>/data/escape -> ../outside.
class SubmitDataRootsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::path(::testing::TempDir()) / absl::StrCat("sr-", getpid());
    fs::remove_all(base_);
    fs::create_directories(base_ / "data");
    fs::create_directories(base_ / "outside");
    std::ofstream(base_ / "outside" / "secret") << "secret";
    fs::create_directory_symlink(base_ / "outside", base_ / "data" / "escape");
    base_ = fs::canonical(base_);
    auto roots = DataRoots::Create({(base_ / "data").string()});
    MEMAUDIT_ASSERT_OK(roots);
    roots_ = *roots;
  }
  void TearDown() override { fs::remove_all(base_); }

  // Submit on a service without scheduler or scorer: only refusals return.
  grpc::Status Submit(const v1::AuditSpec& spec) {
    auto everyone = Authenticator::AllowEveryone();
    AuditServiceImpl service(everyone.get(), /*scheduler=*/nullptr, /*scorer=*/nullptr, roots_);
    v1::SubmitRequest request;
    *request.mutable_spec() = spec;
    v1::SubmitResponse response;
    grpc::ServerContext context;
    return service.Submit(&context, &request, &response);
  }

  fs::path base_;
  DataRoots roots_;
};

MATCHER_P(InvalidArgumentSaying, text, "") {
  *result_listener << "code " << arg.error_code() << ": " << arg.error_message();
  return arg.error_code() == grpc::StatusCode::INVALID_ARGUMENT &&
         arg.error_message().find(text) != std::string::npos;
}

TEST_F(SubmitDataRootsTest, RefusesAFileOutsideTheRootsNamingTheField) {
  v1::AuditSpec spec = SmallMembershipSpec();
  spec.mutable_membership()->mutable_dataset()->set_path("/etc/shadow");
  const grpc::Status shadow = Submit(spec);
  EXPECT_THAT(shadow,
              InvalidArgumentSaying("membership.dataset.path: must lie under a data root ("));
  EXPECT_THAT(shadow.error_message(),
              AllOf(HasSubstr((base_ / "data").string()), HasSubstr("got \"/etc/shadow\"")));

  v1::AuditSpec exposure = SmallExposureSpec();
  exposure.mutable_exposure()->mutable_corpus()->clear_text();
  exposure.mutable_exposure()->mutable_corpus()->set_path("/");
  EXPECT_THAT(Submit(exposure),
              InvalidArgumentSaying("exposure.corpus.path: must lie under a data root"));
}

TEST_F(SubmitDataRootsTest, RefusesASymlinkOrDotDotThatLeavesARoot) {
  v1::AuditSpec spec = SmallExposureSpec();
  spec.mutable_exposure()->mutable_corpus()->clear_text();
  spec.mutable_exposure()->mutable_corpus()->set_path((base_ / "data/escape/secret").string());
  EXPECT_THAT(Submit(spec), InvalidArgumentSaying(absl::StrCat(
                                "which resolves to \"", (base_ / "outside/secret").string())));
  spec.mutable_exposure()->mutable_corpus()->set_path((base_ / "data/../outside/secret").string());
  EXPECT_THAT(Submit(spec), InvalidArgumentSaying("exposure.corpus.path: must lie under"));
  spec.mutable_exposure()->mutable_corpus()->set_path("data/corpus.txt");
  EXPECT_THAT(Submit(spec),
              InvalidArgumentSaying("exposure.corpus.path: must be an absolute path"));
}

TEST_F(SubmitDataRootsTest, EveryKindsPathsAreChecked) {
  v1::AuditSpec unlearning;
  unlearning.mutable_unlearning()->mutable_model()->set_architecture("torchscript");
  unlearning.mutable_unlearning()->mutable_model()->set_torchscript_path("/etc/passwd");
  EXPECT_THAT(Submit(unlearning),
              InvalidArgumentSaying("unlearning.model.torchscript_path: must lie "
                                    "under a data root"));
  v1::AuditSpec forgetting;
  forgetting.mutable_forgetting()->mutable_canaries()->mutable_corpus()->set_path(
      "/proc/self/environ");
  EXPECT_THAT(Submit(forgetting),
              InvalidArgumentSaying("forgetting.canaries.corpus.path: must lie under a data root"));
}

TEST_F(SubmitDataRootsTest, ThePathProblemIsListedWithTheOthers) {
  v1::AuditSpec spec = SmallMembershipSpec();
  spec.mutable_membership()->set_reference_models(3);
  spec.mutable_membership()->mutable_dataset()->set_path("/etc");
  const grpc::Status status = Submit(spec);
  EXPECT_THAT(status, InvalidArgumentSaying("membership.reference_models"));
  EXPECT_THAT(status.error_message(), HasSubstr("membership.dataset.path: must lie under"));
}

TEST_F(SubmitDataRootsTest, OnlySubmitChecksTheRoots) {
  v1::AuditSpec spec = SmallMembershipSpec();
  spec.mutable_membership()->mutable_dataset()->set_path((base_ / "data/images").string());
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec, roots_));
  // An audit once accepted is planned and scored whatever the roots become.
  spec.mutable_membership()->mutable_dataset()->set_path("/etc/shadow");
  MEMAUDIT_EXPECT_OK(ValidateSpec(spec));
  EXPECT_THAT(ValidateSpec(spec, roots_),
              memaudit::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                          HasSubstr("membership.dataset.path")));
}

TEST(RequestIdTest, UpTo128PrintableCharactersWithoutSpaces) {
  MEMAUDIT_EXPECT_OK(CheckRequestId(""));
  MEMAUDIT_EXPECT_OK(CheckRequestId("r-0123456789abcdef"));
  MEMAUDIT_EXPECT_OK(CheckRequestId(std::string(128, '~')));
  for (const std::string& bad :
       {std::string(129, 'x'), std::string("a b"), std::string("a\tb"), std::string("a\nb"),
        std::string("caf\xc3\xa9"), std::string("a\0b", 3)}) {
    EXPECT_THAT(CheckRequestId(bad),
                memaudit::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                            HasSubstr("request_id: must be at most 128 printable")))
        << bad;
  }
}

}  // namespace
}  // namespace memaudit::coordinator
