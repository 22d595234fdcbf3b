#include "common/messages/event_types.h"

#include "common/messages/enum_names.h"

namespace memaudit {

std::string EventTypeName(v1::EventType type) {
  return LowerCaseName(*v1::EventType_descriptor(), type);
}

v1::EventType EventTypeByName(absl::string_view name) {
  return static_cast<v1::EventType>(ValueOfLowerCaseName(*v1::EventType_descriptor(), name));
}

bool EndsTheAudit(v1::EventType type) {
  return type == v1::AUDIT_SUCCEEDED || type == v1::AUDIT_FAILED || type == v1::AUDIT_CANCELLED;
}

}  // namespace memaudit
