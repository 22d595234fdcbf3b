// Audit specs are written in YAML and converted to the AuditSpec proto through
// protobuf's JSON mapping, so every proto field is reachable from YAML with its
// own name and unknown fields are refused by name.
//
// The reader is bounded before anything is allocated for the input: the
// document's size is checked first, then yaml-cpp's event parser streams into
// a JSON tree under limits on nesting depth, on nodes and scalar bytes after
// alias expansion (a "billion laughs" stops at the budget), with duplicate
// keys refused and out-of-range numbers reported with the key path. The
// limits are documented in docs/spec.md ("Limits").
#ifndef MEMAUDIT_COMMON_MESSAGES_SPEC_YAML_H_
#define MEMAUDIT_COMMON_MESSAGES_SPEC_YAML_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/messages/spec_unknown_fields.h"
#include "memaudit/v1/spec.pb.h"

namespace memaudit {

// Bytes of YAML read for one spec (large corpora belong in corpus.path).
inline constexpr size_t kMaxSpecBytes = 1 << 20;
// Nesting of maps and lists.
inline constexpr size_t kMaxSpecDepth = 64;
// Nodes (scalars, keys, maps, lists) after alias expansion.
inline constexpr size_t kMaxSpecNodes = 100'000;
// Bytes of keys and scalars after alias expansion.
inline constexpr size_t kMaxSpecExpandedBytes = 4 << 20;
// Longest value an error message quotes before cutting it with "…".
inline constexpr size_t kMaxQuotedBytes = 64;

// `value` for an error message: in double quotes, control characters, quotes
// and backslashes escaped, cut after kMaxQuotedBytes (at a UTF-8 boundary)
// with "…" and the full length: "aaaa…" (52428800 bytes).
std::string QuoteValue(absl::string_view value);

// `source` names the input in error messages (a file path, "<stdin>").
// Keys that name no spec field are refused all at once, each with the
// nearest field suggested; or, given `unknown`, appended to it and left out
// so the rest of the spec can still be checked (`memaudit validate`).
absl::StatusOr<v1::AuditSpec> ParseSpecYaml(absl::string_view yaml, absl::string_view source,
                                            std::vector<UnknownSpecField>* unknown = nullptr);
absl::StatusOr<v1::AuditSpec> LoadSpecFile(const std::string& path,
                                           std::vector<UnknownSpecField>* unknown = nullptr);

// YAML text -> JSON text, under the limits above; exposed for tests.
absl::StatusOr<std::string> YamlToJson(absl::string_view yaml);

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_MESSAGES_SPEC_YAML_H_
