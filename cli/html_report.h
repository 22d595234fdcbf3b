// A self-contained HTML report of an audit: inline SVG plots, every number in
// tables, the spec and seeds. No scripts and no network, so it opens anywhere
// and can be archived with the model it signs off.
#ifndef MEMAUDIT_CLI_HTML_REPORT_H_
#define MEMAUDIT_CLI_HTML_REPORT_H_

#include <string>

#include "memaudit/v1/audit.pb.h"
#include "memaudit/v1/results.pb.h"

namespace memaudit::cli {

std::string HtmlReport(const v1::Audit& audit, const v1::AuditResults& results);

}  // namespace memaudit::cli

#endif  // MEMAUDIT_CLI_HTML_REPORT_H_
