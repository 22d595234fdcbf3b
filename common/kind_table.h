// One handler per audit kind, for one layer of memaudit (coordinator,
// worker, scorer, CLI). A layer lists its handlers in a KindTable, one entry
// per kind; For() is the only switch over the kinds. A kind added to
// spec.proto's `oneof kind` gets a member and a case here, and then the
// compiler names every table without an entry for it (-Wextra's missing
// initializer) and this switch if it lacks the case (-Wswitch).
#ifndef MEMAUDIT_COMMON_KIND_TABLE_H_
#define MEMAUDIT_COMMON_KIND_TABLE_H_

#include "common/audit_kinds.h"

namespace memaudit {

template <class Handler>
struct KindTable {
  using Get = const Handler& (*)();
  Get membership;
  Get exposure;
  Get forgetting;
  Get unlearning;
  Get relational;

  // The handler of `kind`; null for KIND_NOT_SET and for a kind whose entry
  // is missing (the descriptor tests then fail).
  const Handler* For(AuditKind kind) const {
    Get get = nullptr;
    switch (kind) {  // No default: see above.
      case v1::AuditSpec::kMembership:
        get = membership;
        break;
      case v1::AuditSpec::kExposure:
        get = exposure;
        break;
      case v1::AuditSpec::kForgetting:
        get = forgetting;
        break;
      case v1::AuditSpec::kUnlearning:
        get = unlearning;
        break;
      case v1::AuditSpec::kRelational:
        get = relational;
        break;
      case v1::AuditSpec::KIND_NOT_SET:
        break;
    }
    return get == nullptr ? nullptr : &get();
  }
};

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_KIND_TABLE_H_
