// The audit kinds are the fields of spec.proto's `oneof kind`; this file
// reads them from the descriptor, so a kind added there is known everywhere.
// Each kind's code is one folder, audits/<kind>/, with a file per layer
// (spec*, worker*, scorer*, cli*); common/messages/kind_table.h binds each layer's
// handlers to the kinds.
#ifndef MEMAUDIT_COMMON_MESSAGES_AUDIT_KINDS_H_
#define MEMAUDIT_COMMON_MESSAGES_AUDIT_KINDS_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "memaudit/v1/spec.pb.h"

namespace memaudit {

using AuditKind = v1::AuditSpec::KindCase;

// Every kind, in the oneof's declaration order.
const std::vector<AuditKind>& AllAuditKinds();

// The oneof field's name ("membership", ...); "" for KIND_NOT_SET. It is also
// AuditResults.kind and the `kind` label of the metrics.
std::string AuditKindName(AuditKind kind);

// The kind named `name`; KIND_NOT_SET when no kind has that name.
AuditKind AuditKindByName(absl::string_view name);

// The API's name of a kind (Audit.kind, AuditResults.kind: the enum value
// named as the oneof field in upper case), and back. AUDIT_KIND_UNSPECIFIED
// <-> KIND_NOT_SET.
v1::AuditKind ApiKind(AuditKind kind);
AuditKind KindOfApi(v1::AuditKind kind);
// The lower-case name of an API kind ("membership"; "" when unspecified):
// what tables, labels and reports print.
std::string AuditKindName(v1::AuditKind kind);

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_MESSAGES_AUDIT_KINDS_H_
