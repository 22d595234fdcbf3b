#include "common/testing/kind_handlers.h"

#include "gtest/gtest.h"
#include "spec/kind_handler.h"

namespace memaudit::spec {
namespace {

TEST(CoordinatorKindHandlersTest, EveryKindOfTheOneofHasAHandler) {
  memaudit::testing::ExpectAHandlerForEveryKind(&HandlerFor);
}

TEST(CoordinatorKindHandlersTest, OnlyMembershipPacksModels) {
  for (AuditKind kind : AllAuditKinds()) {
    EXPECT_EQ(HandlerFor(kind)->PacksModels(), kind == v1::AuditSpec::kMembership)
        << AuditKindName(kind);
  }
}

}  // namespace
}  // namespace memaudit::spec
