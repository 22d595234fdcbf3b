#include "common/messages/spec_message_bounds.h"

#include <string>

#include "common/messages/spec_yaml.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit {
namespace {

using ::memaudit::testing::StatusIs;
using ::testing::HasSubstr;

v1::AuditSpec Small() {
  v1::AuditSpec spec;
  spec.set_name("bounded");
  spec.mutable_membership()->set_reference_models(4);
  return spec;
}

// `spec` with `extra` (wire bytes) appended inside its membership message.
v1::AuditSpec WithInMembership(const std::string& extra) {
  v1::AuditSpec spec = Small();
  std::string membership = spec.membership().SerializeAsString() + extra;
  spec.clear_membership();
  EXPECT_TRUE(spec.mutable_membership()->ParseFromString(membership));
  return spec;
}

TEST(SpecMessageBoundsTest, AnOrdinarySpecPasses) { MEMAUDIT_EXPECT_OK(CheckSpecMessage(Small())); }

TEST(SpecMessageBoundsTest, UnknownFieldsAreNamedWithTheirPathNumberAndSize) {
  // Field 9999, length-delimited, 5 bytes: tag varint 0xfa 0xf0 0x04.
  const std::string unknown = std::string("\xfa\xf0\x04\x05", 4) + "hello";
  EXPECT_THAT(CheckSpecMessage(WithInMembership(unknown)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.membership: unknown field 9999 (bytes, 5 bytes)")));
  // A varint at the top level.
  v1::AuditSpec top = Small();
  std::string bytes = top.SerializeAsString() + std::string("\xb8\x3e\x01", 3);  // field 999
  ASSERT_TRUE(top.ParseFromString(bytes));
  EXPECT_THAT(CheckSpecMessage(top), StatusIs(absl::StatusCode::kInvalidArgument,
                                              HasSubstr("spec: unknown field 999 (varint)")));
}

TEST(SpecMessageBoundsTest, SizeAndNodesAreBoundedAsForYaml) {
  v1::AuditSpec big = Small();
  big.set_name(std::string(kMaxSpecBytes + 1, 'n'));
  EXPECT_THAT(CheckSpecMessage(big),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bytes serialized")));
  v1::AuditSpec many = Small();
  for (size_t i = 0; i <= kMaxSpecNodes; ++i) many.mutable_membership()->add_attacks("loss");
  EXPECT_THAT(CheckSpecMessage(many),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("fields and list entries")));
}

}  // namespace
}  // namespace memaudit
