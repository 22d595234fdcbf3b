// Results as CSV files for spreadsheets and plotting scripts.
#ifndef MEMAUDIT_CLI_CSV_EXPORT_H_
#define MEMAUDIT_CLI_CSV_EXPORT_H_

#include <string>

#include "absl/status/status.h"
#include "memaudit/v1/results.pb.h"

namespace memaudit::cli {

// Writes attacks.csv, operating_points.csv and roc.csv into `dir` (created).
absl::Status WriteResultsCsv(const v1::AuditResults& results, const std::string& dir);

}  // namespace memaudit::cli

#endif  // MEMAUDIT_CLI_CSV_EXPORT_H_
