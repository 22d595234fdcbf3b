// The descriptor test every layer's kind table runs: it walks spec.proto's
// `oneof kind`, so a kind added there without a handler in that layer fails.
#ifndef MEMAUDIT_COMMON_TESTING_KIND_HANDLERS_H_
#define MEMAUDIT_COMMON_TESTING_KIND_HANDLERS_H_

#include "common/messages/audit_kinds.h"
#include "gtest/gtest.h"

namespace memaudit::testing {

template <class Handler>
void ExpectAHandlerForEveryKind(const Handler* (*handler_for)(AuditKind)) {
  ASSERT_FALSE(AllAuditKinds().empty());
  for (AuditKind kind : AllAuditKinds()) {
    EXPECT_NE(handler_for(kind), nullptr) << "no handler for kind " << AuditKindName(kind);
  }
  EXPECT_EQ(handler_for(v1::AuditSpec::KIND_NOT_SET), nullptr);
}

}  // namespace memaudit::testing

#endif  // MEMAUDIT_COMMON_TESTING_KIND_HANDLERS_H_
