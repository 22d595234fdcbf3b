// One handler per audit kind, for each layer of memaudit (spec, worker,
// scorer, CLI). A kind's handler is bound to its kind in the kind's own
// folder (audits/<kind>/<layer>*.cc), by specializing HandlerOfKind for the
// layer's handler type; no table lists the handlers in an order that could
// be swapped.
//
// MEMAUDIT_AUDIT_KINDS is the one declaration of the kinds: a kind added to
// spec.proto's `oneof kind` gets a line there (-Wswitch in KindHandlerFor
// names a kind without one, and audit_kinds_test compares the list with the
// descriptor); then every layer whose folder file lacks its specialization
// fails to link.
#ifndef MEMAUDIT_COMMON_MESSAGES_KIND_TABLE_H_
#define MEMAUDIT_COMMON_MESSAGES_KIND_TABLE_H_

#include "common/messages/audit_kinds.h"

// Calls X(arg, Kind) for each kind, in the oneof's declaration order; Kind is
// the oneof case's suffix (v1::AuditSpec::k<Kind>).
#define MEMAUDIT_AUDIT_KINDS(X, arg) \
  X(arg, Membership)                 \
  X(arg, Exposure)                   \
  X(arg, Forgetting)                 \
  X(arg, Unlearning)                 \
  X(arg, Relational)                 \
  X(arg, DpAudit)

namespace memaudit {

// Defined only as explicit specializations, one per (layer, kind), in the
// kind's file of that layer, at namespace memaudit scope:
//   template <>
//   const spec::KindHandler& HandlerOfKind<spec::KindHandler, v1::AuditSpec::kMembership>() {...}
template <class Handler, AuditKind K>
const Handler& HandlerOfKind();

// Declares a layer's specializations (in its kind_handler.h, at namespace
// memaudit scope), so that every use sees them declared.
#define MEMAUDIT_DECLARE_KIND_HANDLER_(Handler, Kind) \
  template <>                                         \
  const Handler& HandlerOfKind<Handler, v1::AuditSpec::k##Kind>();
#define MEMAUDIT_DECLARE_KIND_HANDLERS(Handler) \
  MEMAUDIT_AUDIT_KINDS(MEMAUDIT_DECLARE_KIND_HANDLER_, Handler) static_assert(true)

// The AuditKind values the declaration lists, in its order (compared with
// the descriptor's by audit_kinds_test).
inline constexpr AuditKind kDeclaredAuditKinds[] = {
#define MEMAUDIT_KIND_VALUE_(unused, Kind) v1::AuditSpec::k##Kind,
    MEMAUDIT_AUDIT_KINDS(MEMAUDIT_KIND_VALUE_, )
#undef MEMAUDIT_KIND_VALUE_
};

// The handler of `kind` in the layer whose handler type is Handler; null for
// KIND_NOT_SET. The only switch over the kinds.
template <class Handler>
const Handler* KindHandlerFor(AuditKind kind) {
  switch (kind) {  // No default: -Wswitch names a kind without a case.
#define MEMAUDIT_KIND_CASE_(H, Kind) \
  case v1::AuditSpec::k##Kind:       \
    return &HandlerOfKind<H, v1::AuditSpec::k##Kind>();
    MEMAUDIT_AUDIT_KINDS(MEMAUDIT_KIND_CASE_, Handler)
#undef MEMAUDIT_KIND_CASE_
    case v1::AuditSpec::KIND_NOT_SET:
      break;
  }
  return nullptr;
}

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_MESSAGES_KIND_TABLE_H_
