// AuditEvent types by name: stored and printed in lower case ("task_leased").
#ifndef MEMAUDIT_COMMON_MESSAGES_EVENT_TYPES_H_
#define MEMAUDIT_COMMON_MESSAGES_EVENT_TYPES_H_

#include <string>

#include "absl/strings/string_view.h"
#include "memaudit/v1/audit.pb.h"

namespace memaudit {

// "task_leased" for TASK_LEASED; "" for unspecified.
std::string EventTypeName(v1::EventType type);
// The type named `name` (lower case); EVENT_TYPE_UNSPECIFIED when none is.
v1::EventType EventTypeByName(absl::string_view name);

// The events after which nothing more happens to an audit.
bool EndsTheAudit(v1::EventType type);

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_MESSAGES_EVENT_TYPES_H_
