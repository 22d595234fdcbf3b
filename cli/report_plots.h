// The HTML report's plots, one set per audit kind, drawn from the results
// protos alone (so a report can be rebuilt from an archived results JSON).
// Each *Svg function returns one inline <svg>, or "" when the results hold
// nothing to draw; each *PlotsHtml function wraps its plots with headings
// and a caption saying how to read them.
#ifndef MEMAUDIT_CLI_REPORT_PLOTS_H_
#define MEMAUDIT_CLI_REPORT_PLOTS_H_

#include <string>

#include "memaudit/v1/results.pb.h"

namespace memaudit::cli {

// Membership: ROC curves on log-log axes, chance and the FPR operating
// points marked.
std::string RocSvg(const v1::AuditResults& results);

// Forgetting: MI accuracy, AUC and TPR against steps since injection on a
// log(1 + steps) axis, each with its 95% trial interval as a band.
std::string ForgettingCurvesSvg(const v1::ForgettingResults& forgetting);
// Forgetting of LM canaries: mean exposure per insertion count against steps
// since injection, injected arm (with its trial band) and baseline arm.
std::string ForgettingExposureSvg(const v1::ForgettingResults& forgetting);

// Exposure against insertions (log(1 + r) axis): every canary, the mean per
// insertion count for each estimator, the log2|R| and log2|S| ceilings.
std::string ExposureVsInsertionsSvg(const v1::ExposureResults& exposure);
// The reference sample's Px histogram, the skew-normal fit's density scaled
// to counts, and each canary's Px.
std::string ReferencePxSvg(const v1::ExposureResults& exposure);
// Exact exposure during training (spec eval_every_*): mean per insertion
// count and the controls' median at every evaluation point; "" without.
std::string ExposureCurveSvg(const v1::ExposureResults& exposure);

// Unlearning, first classifier in the results: attack AUC per feature
// (baseline first), grouped by defense; and DegCount per feature.
std::string UnlearningAucSvg(const v1::UnlearningResults& unlearning);
std::string UnlearningDegCountSvg(const v1::UnlearningResults& unlearning);

// Relational, one metric: RM_norm over steps, one line per curve (variant);
// and success on training (solid) and held-out (dashed) records.
std::string RelationalRmNormSvg(const v1::RelationalResults& relational, const std::string& metric);
std::string RelationalSuccessSvg(const v1::RelationalResults& relational,
                                 const std::string& metric);

std::string ForgettingPlotsHtml(const v1::AuditResults& results);
std::string ExposurePlotsHtml(const v1::AuditResults& results);
std::string UnlearningPlotsHtml(const v1::AuditResults& results);
std::string RelationalPlotsHtml(const v1::AuditResults& results);

}  // namespace memaudit::cli

#endif  // MEMAUDIT_CLI_REPORT_PLOTS_H_
