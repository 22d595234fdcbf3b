// Spec keys that name no field of memaudit.v1.AuditSpec, found all at once
// (protobuf's JSON parser stops at the first) with the nearest real field
// suggested.
#ifndef MEMAUDIT_COMMON_MESSAGES_SPEC_UNKNOWN_FIELDS_H_
#define MEMAUDIT_COMMON_MESSAGES_SPEC_UNKNOWN_FIELDS_H_

#include <string>
#include <vector>

#include "google/protobuf/descriptor.h"
#include "nlohmann/json_fwd.hpp"

namespace memaudit {

struct UnknownSpecField {
  std::string field;  // its path: "membership.model.hiden", "attacks[2].x"
  std::string rule;   // "unknown field; did you mean \"hidden\"?"
};

// Removes from `tree` (a spec as JSON) every key that names no field of the
// message `type` describes, at any depth, and returns them (keys in sorted
// order at each level).
std::vector<UnknownSpecField> RemoveUnknownFields(nlohmann::json* tree,
                                                  const google::protobuf::Descriptor* type);

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_MESSAGES_SPEC_UNKNOWN_FIELDS_H_
