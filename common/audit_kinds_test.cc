#include "common/audit_kinds.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit {
namespace {

TEST(AuditKindsTest, ListsTheKindsOfTheOneofInOrder) {
  const std::vector<AuditKind>& kinds = AllAuditKinds();
  ASSERT_GE(kinds.size(), 5u);  // kinds added later follow these
  EXPECT_THAT(std::vector<AuditKind>(kinds.begin(), kinds.begin() + 5),
              ::testing::ElementsAre(v1::AuditSpec::kMembership, v1::AuditSpec::kExposure,
                                     v1::AuditSpec::kForgetting, v1::AuditSpec::kUnlearning,
                                     v1::AuditSpec::kRelational));
  EXPECT_EQ(kinds.size(), static_cast<size_t>(
                              v1::AuditSpec::descriptor()->FindOneofByName("kind")->field_count()));
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
