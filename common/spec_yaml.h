// Audit specs are written in YAML and converted to the AuditSpec proto through
// protobuf's JSON mapping, so every proto field is reachable from YAML with its
// own name and unknown fields are refused by name.
#ifndef MEMAUDIT_COMMON_SPEC_YAML_H_
#define MEMAUDIT_COMMON_SPEC_YAML_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "memaudit/v1/spec.pb.h"

namespace memaudit {

// `source` names the input in error messages (a file path, "<stdin>").
absl::StatusOr<v1::AuditSpec> ParseSpecYaml(absl::string_view yaml, absl::string_view source);
absl::StatusOr<v1::AuditSpec> LoadSpecFile(const std::string& path);

// YAML text -> JSON text; exposed for tests.
absl::StatusOr<std::string> YamlToJson(absl::string_view yaml);

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_SPEC_YAML_H_
