// A spec that arrives as a protobuf message (Submit, OpenAudit) is held to
// the limits a YAML spec meets before anything is stored or planned: its
// size, nesting depth and node count (spec_yaml.h), and no field this build
// does not know. A YAML spec cannot carry an unknown field; a message can
// (a newer client, or a 100 MB blob under an unused field number), and a
// stored spec keeps it: unknown fields are refused, each named by its path
// and number.
#ifndef MEMAUDIT_COMMON_MESSAGES_SPEC_MESSAGE_BOUNDS_H_
#define MEMAUDIT_COMMON_MESSAGES_SPEC_MESSAGE_BOUNDS_H_

#include "absl/status/status.h"
#include "memaudit/v1/spec.pb.h"

namespace memaudit {

// OK, or INVALID_ARGUMENT naming the limit or the unknown fields (the first
// few, "spec.membership.model: unknown field 9999 (wire type 2, 104857600
// bytes)").
absl::Status CheckSpecMessage(const v1::AuditSpec& spec);

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_MESSAGES_SPEC_MESSAGE_BOUNDS_H_
