#include "services/coordinator/spec_validator.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/coordinator/test_specs.h"

namespace memaudit::coordinator {
namespace {

using ::testing::HasSubstr;

TEST(SpecValidatorTest, SmallSpecIsValid) {
  EXPECT_TRUE(ValidateSpec(SmallMembershipSpec()).ok());
}

TEST(SpecValidatorTest, DefaultsAreFilledIn) {
  v1::AuditSpec spec = SmallMembershipSpec();
  EXPECT_EQ(spec.resources().threads_per_task(), 1u);
  EXPECT_EQ(spec.resources().max_attempts(), 3u);
  EXPECT_EQ(spec.membership().dataset().name(), "fashion_mnist");
  EXPECT_EQ(spec.membership().attacks_size(), 5);
  EXPECT_EQ(spec.membership().fpr_points_size(), 2);
}

TEST(SpecValidatorTest, EveryBadFieldIsNamedWithItsRule) {
  v1::AuditSpec spec = SmallMembershipSpec();
  v1::MembershipAudit* m = spec.mutable_membership();
  m->set_reference_models(3);
  m->mutable_training()->set_learning_rate(-1);
  m->mutable_training()->set_momentum(1.5);
  m->mutable_training()->set_epochs(0);
  m->mutable_dataset()->set_pool_size(70000);
  m->mutable_dataset()->set_name("cifar");
  m->mutable_model()->set_architecture("transformer");
  m->mutable_model()->add_hidden(0);
  m->add_attacks("magic");
  m->add_fpr_points(1.5);
  absl::Status status = ValidateSpec(spec);
  ASSERT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  const std::string message(status.message());
  EXPECT_THAT(message, HasSubstr("membership.reference_models: must be an even number"));
  EXPECT_THAT(message, HasSubstr("(got 3)"));
  EXPECT_THAT(message, HasSubstr("membership.training.learning_rate: must be > 0"));
  EXPECT_THAT(message, HasSubstr("membership.training.momentum"));
  EXPECT_THAT(message, HasSubstr("membership.training.epochs"));
  EXPECT_THAT(message, HasSubstr("membership.dataset.pool_size"));
  EXPECT_THAT(message, HasSubstr("membership.dataset.name"));
  EXPECT_THAT(message, HasSubstr("membership.model.architecture"));
  EXPECT_THAT(message, HasSubstr("membership.model.hidden[1]"));
  EXPECT_THAT(message, HasSubstr("membership.attacks[5]: unknown attack \"magic\""));
  EXPECT_THAT(message, HasSubstr("membership.fpr_points[2]"));
  EXPECT_EQ(FindProblems(spec).size(), 10u);
}

TEST(SpecValidatorTest, MissingKindIsInvalid) {
  v1::AuditSpec spec;
  ApplyDefaults(&spec);
  absl::Status status = ValidateSpec(spec);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("kind: set exactly one of"));
}

TEST(SpecValidatorTest, KindsNotBuiltAreUnimplemented) {
  v1::AuditSpec spec;
  spec.mutable_exposure();
  absl::Status status = ValidateSpec(spec);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(status.message()), HasSubstr("\"exposure\""));
  spec.mutable_unlearning();
  EXPECT_EQ(ValidateSpec(spec).code(), absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace memaudit::coordinator
