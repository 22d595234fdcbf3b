#include "cli/kind_handler.h"
#include "gtest/gtest.h"

namespace memaudit::cli {
namespace {

// Walks spec.proto's `oneof kind`: a kind added there without a CLI handler
// fails here.
TEST(CliKindHandlersTest, EveryKindOfTheOneofHasAHandler) {
  ASSERT_FALSE(AllAuditKinds().empty());
  for (AuditKind kind : AllAuditKinds()) {
    EXPECT_NE(HandlerFor(kind), nullptr) << AuditKindName(kind);
  }
  EXPECT_EQ(HandlerFor(v1::AuditSpec::KIND_NOT_SET), nullptr);
}

}  // namespace
}  // namespace memaudit::cli
