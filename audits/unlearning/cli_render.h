// How the CLI shows `unlearning` audit results: the terminal table of attack
// AUC / DegCount / DegRate per (defense, feature, classifier), the HTML
// report's numbers section and CSV.
#ifndef MEMAUDIT_AUDITS_UNLEARNING_CLI_RENDER_H_
#define MEMAUDIT_AUDITS_UNLEARNING_CLI_RENDER_H_

#include <string>

#include "absl/status/status.h"
#include "cli/kind_handler.h"
#include "memaudit/v1/results.pb.h"

namespace memaudit::cli {

std::string UnlearningTable(const v1::AuditResults& results);
// The numbers section of the report for complete unlearning results (no
// <html> wrapper; plots are drawn elsewhere).
std::string UnlearningHtmlSection(const v1::AuditResults& results);
// unlearning_attacks.csv and unlearning_summary.csv in `dir` (which exists).
absl::Status WriteUnlearningCsv(const v1::AuditResults& results, const std::string& dir);

}  // namespace memaudit::cli

#endif  // MEMAUDIT_AUDITS_UNLEARNING_CLI_RENDER_H_
