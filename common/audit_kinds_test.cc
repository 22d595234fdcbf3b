#include "common/audit_kinds.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit {
namespace {

TEST(AuditKindsTest, ListsEveryKindOfTheOneofInOrder) {
  EXPECT_THAT(AllAuditKinds(),
              ::testing::ElementsAre(v1::AuditSpec::kMembership, v1::AuditSpec::kExposure,
                                     v1::AuditSpec::kForgetting, v1::AuditSpec::kUnlearning,
                                     v1::AuditSpec::kRelational));
}

TEST(AuditKindsTest, NamesRoundTrip) {
  for (AuditKind kind : AllAuditKinds()) {
    EXPECT_FALSE(AuditKindName(kind).empty());
    EXPECT_EQ(AuditKindByName(AuditKindName(kind)), kind) << AuditKindName(kind);
  }
  EXPECT_EQ(AuditKindName(v1::AuditSpec::kUnlearning), "unlearning");
}

TEST(AuditKindsTest, OtherFieldsAndNamesAreNoKind) {
  EXPECT_EQ(AuditKindName(v1::AuditSpec::KIND_NOT_SET), "");
  EXPECT_EQ(AuditKindByName("seed"), v1::AuditSpec::KIND_NOT_SET);  // a field, not a kind
  EXPECT_EQ(AuditKindByName("no_such_kind"), v1::AuditSpec::KIND_NOT_SET);
  EXPECT_EQ(AuditKindByName(""), v1::AuditSpec::KIND_NOT_SET);
}

}  // namespace
}  // namespace memaudit
