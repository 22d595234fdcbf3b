#include "common/testing/kind_handlers.h"

#include "gtest/gtest.h"
#include "services/scorer/kind_handler.h"

namespace memaudit::scorer {
namespace {

TEST(ScorerKindHandlersTest, EveryKindOfTheOneofHasAHandler) {
  memaudit::testing::ExpectAHandlerForEveryKind(&HandlerFor);
}

// Results name their kind by the oneof field's name, which is how the
// scorer finds the handler that publishes them.
TEST(ScorerKindHandlersTest, EveryPlaceholderNamesItsOwnKind) {
  for (AuditKind kind : AllAuditKinds()) {
    v1::AuditSpec spec;
    spec.set_name("test");
    const google::protobuf::FieldDescriptor* field =
        v1::AuditSpec::descriptor()->FindFieldByNumber(static_cast<int>(kind));
    spec.GetReflection()->MutableMessage(&spec, field);  // selects the kind
    const v1::AuditResults placeholder = HandlerFor(kind)->Placeholder(spec);
    EXPECT_EQ(placeholder.kind(), AuditKindName(kind));
    EXPECT_FALSE(placeholder.complete());
  }
}

}  // namespace
}  // namespace memaudit::scorer
