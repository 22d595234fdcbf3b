#include "common/messages/audit_kinds.h"

#include <iterator>

#include "common/messages/kind_table.h"
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

// The one declaration (MEMAUDIT_AUDIT_KINDS) lists the descriptor's kinds in
// its order: a kind left out, or two swapped, fails here.
TEST(AuditKindsTest, TheDeclarationListsTheOneofsKindsInOrder) {
  EXPECT_EQ(std::vector<AuditKind>(std::begin(kDeclaredAuditKinds), std::end(kDeclaredAuditKinds)),
            AllAuditKinds());
}

TEST(AuditKindsTest, NamesRoundTrip) {
  for (AuditKind kind : AllAuditKinds()) {
    EXPECT_FALSE(AuditKindName(kind).empty());
    EXPECT_EQ(AuditKindByName(AuditKindName(kind)), kind) << AuditKindName(kind);
  }
  EXPECT_EQ(AuditKindName(v1::AuditSpec::kUnlearning), "unlearning");
}

// The API's enum has one value per kind (a kind added to the oneof without
// one fails here), and every value but unspecified is a kind.
TEST(AuditKindsTest, EveryKindHasItsApiValue) {
  for (AuditKind kind : AllAuditKinds()) {
    EXPECT_NE(ApiKind(kind), v1::AUDIT_KIND_UNSPECIFIED) << AuditKindName(kind);
    EXPECT_EQ(KindOfApi(ApiKind(kind)), kind);
    EXPECT_EQ(AuditKindName(ApiKind(kind)), AuditKindName(kind));
  }
  EXPECT_EQ(ApiKind(v1::AuditSpec::kExposure), v1::EXPOSURE);
  EXPECT_EQ(static_cast<size_t>(v1::AuditKind_descriptor()->value_count()),
            AllAuditKinds().size() + 1);
  EXPECT_EQ(KindOfApi(v1::AUDIT_KIND_UNSPECIFIED), v1::AuditSpec::KIND_NOT_SET);
  EXPECT_EQ(AuditKindName(v1::AUDIT_KIND_UNSPECIFIED), "");
}

TEST(AuditKindsTest, OtherFieldsAndNamesAreNoKind) {
  EXPECT_EQ(AuditKindName(v1::AuditSpec::KIND_NOT_SET), "");
  EXPECT_EQ(AuditKindByName("seed"), v1::AuditSpec::KIND_NOT_SET);  // a field, not a kind
  EXPECT_EQ(AuditKindByName("no_such_kind"), v1::AuditSpec::KIND_NOT_SET);
  EXPECT_EQ(AuditKindByName(""), v1::AuditSpec::KIND_NOT_SET);
}

}  // namespace
}  // namespace memaudit
