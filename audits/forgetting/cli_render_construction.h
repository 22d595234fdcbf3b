// How the CLI shows a forgetting construction's results: the fixed
// adversary's guesses per point as a terminal table, an HTML section and
// forgetting_construction.csv.
#ifndef MEMAUDIT_AUDITS_FORGETTING_CLI_RENDER_CONSTRUCTION_H_
#define MEMAUDIT_AUDITS_FORGETTING_CLI_RENDER_CONSTRUCTION_H_

#include <string>

#include "absl/status/status.h"
#include "memaudit/v1/results.pb.h"

namespace memaudit::cli {

inline bool IsConstruction(const v1::ForgettingResults& f) { return !f.construction().empty(); }
std::string ConstructionTable(const v1::AuditResults& results);
std::string ConstructionHtml(const v1::AuditResults& results);
absl::Status WriteConstructionCsv(const v1::AuditResults& results, const std::string& dir);

}  // namespace memaudit::cli

#endif  // MEMAUDIT_AUDITS_FORGETTING_CLI_RENDER_CONSTRUCTION_H_
