// The HTML report's plots of a relational audit, drawn from the results proto
// alone (so a report can be rebuilt from an archived results JSON). Each *Svg
// function returns one inline <svg>, or "" when the results hold nothing to
// draw.
#ifndef MEMAUDIT_AUDITS_RELATIONAL_CLI_PLOTS_H_
#define MEMAUDIT_AUDITS_RELATIONAL_CLI_PLOTS_H_

#include <string>

#include "memaudit/v1/results.pb.h"

namespace memaudit::cli {

// Relational, one metric: RM_norm over steps, one line per curve (variant);
// and success on training (solid) and held-out (dashed) records.
std::string RelationalRmNormSvg(const v1::RelationalResults& relational, const std::string& metric);
std::string RelationalSuccessSvg(const v1::RelationalResults& relational,
                                 const std::string& metric);
// The report's relational plots with headings and captions.
std::string RelationalPlotsHtml(const v1::AuditResults& results);

}  // namespace memaudit::cli

#endif  // MEMAUDIT_AUDITS_RELATIONAL_CLI_PLOTS_H_
