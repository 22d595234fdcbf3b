// An archived results document (results.json, as `memaudit run` and
// `memaudit report --json` write it) read back, so a report can be rebuilt
// without any service running.
#ifndef MEMAUDIT_CLI_ARCHIVED_RESULTS_H_
#define MEMAUDIT_CLI_ARCHIVED_RESULTS_H_

#include <string>

#include "absl/status/statusor.h"
#include "memaudit/v1/audit.pb.h"
#include "memaudit/v1/results.pb.h"

namespace memaudit::cli {

// Results documents above this size are refused before they are read.
inline constexpr size_t kMaxResultsFileBytes = size_t{256} << 20;

// The results in `path`; INVALID_ARGUMENT naming the file and the reason when
// it is not a results document (too large, not JSON, unknown fields, no kind).
absl::StatusOr<v1::AuditResults> ReadResultsFile(const std::string& path);

// What a report shows of the audit, from the results alone: id, kind, the
// spec and its name; SUCCEEDED when complete. No times: an archive has none.
v1::Audit AuditOfResults(const v1::AuditResults& results);

// True when `argument` of `memaudit report` names a file rather than an
// audit id (ids never contain '/' or '.').
bool NamesAResultsFile(const std::string& argument);

}  // namespace memaudit::cli

#endif  // MEMAUDIT_CLI_ARCHIVED_RESULTS_H_
