// The API's enums by their lower-case names, as specs, tables, metric labels
// and stored event logs write them ("task_leased" for TASK_LEASED).
#ifndef MEMAUDIT_COMMON_MESSAGES_ENUM_NAMES_H_
#define MEMAUDIT_COMMON_MESSAGES_ENUM_NAMES_H_

#include <string>

#include "absl/strings/string_view.h"
#include "google/protobuf/descriptor.h"

namespace memaudit {

// `value`'s name in lower case; "" for 0 (every API enum's unspecified) and
// for a value `type` does not have.
std::string LowerCaseName(const google::protobuf::EnumDescriptor& type, int value);
// The value whose lower-case name is `name`; 0 when none is (an upper-case
// name included).
int ValueOfLowerCaseName(const google::protobuf::EnumDescriptor& type, absl::string_view name);

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_MESSAGES_ENUM_NAMES_H_
