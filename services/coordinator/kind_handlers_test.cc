#include "common/testing/kind_handlers.h"

#include "gtest/gtest.h"
#include "services/coordinator/kind_handler.h"

namespace memaudit::coordinator {
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
}  // namespace memaudit::coordinator
