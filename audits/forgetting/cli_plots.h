// The HTML report's plots of a forgetting audit, drawn from the results proto
// alone (so a report can be rebuilt from an archived results JSON). Each *Svg
// function returns one inline <svg>, or "" when the results hold nothing to
// draw.
#ifndef MEMAUDIT_AUDITS_FORGETTING_CLI_PLOTS_H_
#define MEMAUDIT_AUDITS_FORGETTING_CLI_PLOTS_H_

#include <string>

#include "memaudit/v1/results.pb.h"

namespace memaudit::cli {

// Forgetting: MI accuracy, AUC and TPR against steps since injection on a
// log(1 + steps) axis, each with its 95% trial interval as a band.
std::string ForgettingCurvesSvg(const v1::ForgettingResults& forgetting);
// Forgetting of LM canaries: mean exposure per insertion count against steps
// since injection, injected arm (with its trial band) and baseline arm.
std::string ForgettingExposureSvg(const v1::ForgettingResults& forgetting);
// The report's forgetting plots with headings and captions.
std::string ForgettingPlotsHtml(const v1::AuditResults& results);

}  // namespace memaudit::cli

#endif  // MEMAUDIT_AUDITS_FORGETTING_CLI_PLOTS_H_
