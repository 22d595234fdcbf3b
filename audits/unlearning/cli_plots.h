// The HTML report's plots of a unlearning audit, drawn from the results proto
// alone (so a report can be rebuilt from an archived results JSON). Each *Svg
// function returns one inline <svg>, or "" when the results hold nothing to
// draw.
#ifndef MEMAUDIT_AUDITS_UNLEARNING_CLI_PLOTS_H_
#define MEMAUDIT_AUDITS_UNLEARNING_CLI_PLOTS_H_

#include <string>

#include "memaudit/v1/results.pb.h"

namespace memaudit::cli {

// Unlearning, first classifier in the results: attack AUC per feature
// (baseline first), grouped by defense; and DegCount per feature.
std::string UnlearningAucSvg(const v1::UnlearningResults& unlearning);
std::string UnlearningDegCountSvg(const v1::UnlearningResults& unlearning);
// The report's unlearning plots with headings and captions.
std::string UnlearningPlotsHtml(const v1::AuditResults& results);

}  // namespace memaudit::cli

#endif  // MEMAUDIT_AUDITS_UNLEARNING_CLI_PLOTS_H_
