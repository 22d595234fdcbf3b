// A membership audit in the on-disk layout ML Privacy Meter reads when it
// audits models it did not train: `models/models_metadata.json` (one entry
// per model, keyed "0", "1", ...) and `models/memberships.npy` (models ×
// examples booleans, true = trained on it). memaudit adds the pool's
// dataset rows and the audit's own results next to them.
#ifndef MEMAUDIT_AUDITS_MEMBERSHIP_CLI_PRIVACY_METER_EXPORT_H_
#define MEMAUDIT_AUDITS_MEMBERSHIP_CLI_PRIVACY_METER_EXPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "memaudit/v1/audit.pb.h"
#include "memaudit/v1/results.pb.h"

namespace memaudit::cli {

// A NumPy .npy (format 1.0) file holding a C-order array of `shape` with
// element type `descr` ("|b1", "<u4", "<f8") and raw little-endian `data`.
std::string NpyFile(const std::string& descr, const std::vector<uint64_t>& shape,
                    const std::string& data);

// Writes DIR/models/models_metadata.json, DIR/models/memberships.npy,
// DIR/pool_indices.npy (dataset row of each pool example, <u4) and
// DIR/memaudit_results.json. FAILED_PRECONDITION for a non-membership audit.
absl::Status WritePrivacyMeterExport(const v1::Audit& audit, const v1::AuditResults& results,
                                     const std::string& dir);

}  // namespace memaudit::cli

#endif  // MEMAUDIT_AUDITS_MEMBERSHIP_CLI_PRIVACY_METER_EXPORT_H_
