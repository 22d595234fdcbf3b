#include "gtest/gtest.h"
#include "services/coordinator/kind_handler.h"

namespace memaudit::coordinator {
namespace {

// Walks spec.proto's `oneof kind`: a kind added there without a coordinator
// handler fails here.
TEST(CoordinatorKindHandlersTest, EveryKindOfTheOneofHasAHandler) {
  ASSERT_FALSE(AllAuditKinds().empty());
  for (AuditKind kind : AllAuditKinds()) {
    EXPECT_NE(HandlerFor(kind), nullptr) << AuditKindName(kind);
  }
  EXPECT_EQ(HandlerFor(v1::AuditSpec::KIND_NOT_SET), nullptr);
}

TEST(CoordinatorKindHandlersTest, OnlyMembershipPacksModels) {
  for (AuditKind kind : AllAuditKinds()) {
    EXPECT_EQ(HandlerFor(kind)->PacksModels(), kind == v1::AuditSpec::kMembership)
        << AuditKindName(kind);
  }
}

}  // namespace
}  // namespace memaudit::coordinator
