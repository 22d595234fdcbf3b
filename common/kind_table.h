// One handler per audit kind, for each layer of memaudit (spec, worker,
// scorer, CLI). A kind's handler is bound to its kind in the kind's own file,
// by specializing HandlerOfKind for the layer's handler type; no table lists
// the handlers in an order that could be swapped. A kind added to
// spec.proto's `oneof kind` gets a case in KindHandlerFor (-Wswitch names it)
// and a line in MEMAUDIT_DECLARE_KIND_HANDLERS; then every layer whose file
// for the kind lacks its specialization fails to link.
#ifndef MEMAUDIT_COMMON_KIND_TABLE_H_
#define MEMAUDIT_COMMON_KIND_TABLE_H_

#include "common/audit_kinds.h"

namespace memaudit {

// Defined only as explicit specializations, one per (layer, kind), in the
// kind's file of that layer, at namespace memaudit scope:
//   template <>
//   const spec::KindHandler& HandlerOfKind<spec::KindHandler, v1::AuditSpec::kMembership>() {...}
template <class Handler, AuditKind K>
const Handler& HandlerOfKind();

// Declares a layer's specializations (in its kind_handler.h, at namespace
// memaudit scope), so that every use sees them declared.
#define MEMAUDIT_DECLARE_KIND_HANDLERS(Handler)                        \
  template <>                                                          \
  const Handler& HandlerOfKind<Handler, v1::AuditSpec::kMembership>(); \
  template <>                                                          \
  const Handler& HandlerOfKind<Handler, v1::AuditSpec::kExposure>();   \
  template <>                                                          \
  const Handler& HandlerOfKind<Handler, v1::AuditSpec::kForgetting>(); \
  template <>                                                          \
  const Handler& HandlerOfKind<Handler, v1::AuditSpec::kUnlearning>(); \
  template <>                                                          \
  const Handler& HandlerOfKind<Handler, v1::AuditSpec::kRelational>()

// The handler of `kind` in the layer whose handler type is Handler; null for
// KIND_NOT_SET. The only switch over the kinds.
template <class Handler>
const Handler* KindHandlerFor(AuditKind kind) {
  switch (kind) {  // No default: -Wswitch names a kind without a case.
    case v1::AuditSpec::kMembership:
      return &HandlerOfKind<Handler, v1::AuditSpec::kMembership>();
    case v1::AuditSpec::kExposure:
      return &HandlerOfKind<Handler, v1::AuditSpec::kExposure>();
    case v1::AuditSpec::kForgetting:
      return &HandlerOfKind<Handler, v1::AuditSpec::kForgetting>();
    case v1::AuditSpec::kUnlearning:
      return &HandlerOfKind<Handler, v1::AuditSpec::kUnlearning>();
    case v1::AuditSpec::kRelational:
      return &HandlerOfKind<Handler, v1::AuditSpec::kRelational>();
    case v1::AuditSpec::KIND_NOT_SET:
      break;
  }
  return nullptr;
}

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_KIND_TABLE_H_
