// How the CLI shows `forgetting` audit results: the terminal table of the
// forgetting curve (LM canaries: of exposure by insertion count), the HTML
// report's section and CSV.
#ifndef MEMAUDIT_AUDITS_FORGETTING_CLI_RENDER_H_
#define MEMAUDIT_AUDITS_FORGETTING_CLI_RENDER_H_

#include <string>

#include "absl/status/status.h"
#include "cli/kind_handler.h"
#include "memaudit/v1/results.pb.h"

namespace memaudit::cli {

std::string ForgettingTable(const v1::AuditResults& results);
// The body of the report for complete forgetting results (no <html> wrapper).
std::string ForgettingHtmlSection(const v1::AuditResults& results);
// forgetting_curve.csv in `dir` (which exists); LM canaries:
// forgetting_exposure.csv, and with extractable forgetting_extractable.csv.
absl::Status WriteForgettingCsv(const v1::AuditResults& results, const std::string& dir);

}  // namespace memaudit::cli

#endif  // MEMAUDIT_AUDITS_FORGETTING_CLI_RENDER_H_
