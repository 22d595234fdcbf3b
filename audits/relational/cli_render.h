// How the CLI shows `relational` audit results: the terminal table of the
// RM_norm curves, the HTML report's numbers table and CSV.
#ifndef MEMAUDIT_AUDITS_RELATIONAL_CLI_RENDER_H_
#define MEMAUDIT_AUDITS_RELATIONAL_CLI_RENDER_H_

#include <string>

#include "absl/status/status.h"
#include "cli/kind_handler.h"
#include "memaudit/v1/results.pb.h"

namespace memaudit::cli {

// One row per (variant, step) with s_train, s_val and RM_norm per metric;
// long curves are thinned to about 12 steps (the CSV has every one).
std::string RelationalTable(const v1::AuditResults& results);
// The body of the report for relational results (no <html> wrapper).
std::string RelationalHtmlSection(const v1::AuditResults& results);
// relational_curve.csv in `dir` (which exists).
absl::Status WriteRelationalCsv(const v1::AuditResults& results, const std::string& dir);

}  // namespace memaudit::cli

#endif  // MEMAUDIT_AUDITS_RELATIONAL_CLI_RENDER_H_
