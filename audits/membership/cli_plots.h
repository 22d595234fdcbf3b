// The HTML report's plots of a membership audit, drawn from the results proto
// alone (so a report can be rebuilt from an archived results JSON). Each *Svg
// function returns one inline <svg>, or "" when the results hold nothing to
// draw.
#ifndef MEMAUDIT_AUDITS_MEMBERSHIP_CLI_PLOTS_H_
#define MEMAUDIT_AUDITS_MEMBERSHIP_CLI_PLOTS_H_

#include <string>

#include "memaudit/v1/results.pb.h"

namespace memaudit::cli {

// Membership: ROC curves on log-log axes, chance and the FPR operating
// points marked.
std::string RocSvg(const v1::AuditResults& results);

}  // namespace memaudit::cli

#endif  // MEMAUDIT_AUDITS_MEMBERSHIP_CLI_PLOTS_H_
