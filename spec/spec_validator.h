// Spec checking, shared by the coordinator (Submit) and the CLI (validate):
// defaults are filled in first, then every problem is reported with the field
// path and the rule it breaks.
#ifndef MEMAUDIT_SPEC_SPEC_VALIDATOR_H_
#define MEMAUDIT_SPEC_SPEC_VALIDATOR_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "common/messages/data_roots.h"
#include "memaudit/v1/spec.pb.h"

namespace memaudit::spec {

struct SpecProblem {
  std::string field;  // e.g. "membership.reference_models"
  std::string rule;   // e.g. "must be an even number >= 4 (got 3)"
};

// Whether the spec names a kind this build can run (one with a handler).
bool KindImplemented(const v1::AuditSpec& spec);
// The spec's kind by name (common/messages/audit_kinds.h); "" when it names none.
std::string KindName(const v1::AuditSpec& spec);

// Fills every unset field that has a documented default.
void ApplyDefaults(v1::AuditSpec* spec);

// Every problem in a spec (after defaults); empty when the spec is runnable.
std::vector<SpecProblem> FindProblems(const v1::AuditSpec& spec);
// The same, plus one problem per file path (common/messages/spec_paths.h) that is not
// under `roots` (DataRoots::Problem): what Submit and the CLI check. The spec
// alone, without roots, is what the planner and the scorer check: an audit
// once accepted stays valid whatever the roots become.
std::vector<SpecProblem> FindProblems(const v1::AuditSpec& spec, const DataRoots& roots);

// Submit's whole check: every path under `roots` first (no file outside them
// is opened), then the kinds' ReadFiles (dataset facts, content hashes), then
// ApplyDefaults and FindProblems(spec, roots). Empty when the spec, as
// completed in place, is runnable.
std::vector<SpecProblem> PrepareSpecProblems(v1::AuditSpec* spec, const DataRoots& roots);
// OK, or INVALID_ARGUMENT listing PrepareSpecProblems' problems.
absl::Status PrepareSpec(v1::AuditSpec* spec, const DataRoots& roots);

// A status whose message is "<field>: <rule>" as a problem (the whole
// message is the rule when it names no field).
SpecProblem ProblemOf(const absl::Status& status);

// An error message travels as gRPC metadata (grpc-message; 8 KiB by
// default), which percent-encodes each byte outside printable ASCII as three:
// its size as sent.
size_t ErrorWireBytes(absl::string_view message);
// The most an error message of the services may take as sent.
inline constexpr size_t kMaxErrorWireBytes = 6000;
// A refused spec's problems take less: the same problems travel again as
// FieldViolations (errors.proto, at most kMaxViolationBytes of text, base64
// in the trailer), and all metadata of a response must fit 8 KiB.
inline constexpr size_t kMaxProblemsWireBytes = 3000;
inline constexpr size_t kMaxViolationBytes = 2500;
// `message` cut (at a UTF-8 boundary, marked) to kMaxErrorWireBytes as sent.
std::string BoundErrorMessage(absl::string_view message);

// OK, or INVALID_ARGUMENT listing every problem (a spec naming no kind is
// one): whole problems up to kMaxErrorWireBytes as sent, then how many more
// there are.
absl::Status ValidateSpec(const v1::AuditSpec& spec);
// The same with FindProblems(spec, roots).
absl::Status ValidateSpec(const v1::AuditSpec& spec, const DataRoots& roots);

}  // namespace memaudit::spec

#endif  // MEMAUDIT_SPEC_SPEC_VALIDATOR_H_
