// The HTML report's plots of a exposure audit, drawn from the results proto
// alone (so a report can be rebuilt from an archived results JSON). Each *Svg
// function returns one inline <svg>, or "" when the results hold nothing to
// draw.
#ifndef MEMAUDIT_AUDITS_EXPOSURE_CLI_PLOTS_H_
#define MEMAUDIT_AUDITS_EXPOSURE_CLI_PLOTS_H_

#include <string>

#include "memaudit/v1/results.pb.h"

namespace memaudit::cli {

// Exposure against insertions (log(1 + r) axis): every canary, the mean per
// insertion count for each estimator, the log2|R| and log2|S| ceilings.
std::string ExposureVsInsertionsSvg(const v1::ExposureResults& exposure);
// The reference sample's Px histogram, the skew-normal fit's density scaled
// to counts, and each canary's Px.
std::string ReferencePxSvg(const v1::ExposureResults& exposure);
// Exact exposure during training (spec eval_every_*): mean per insertion
// count and the controls' median at every evaluation point; "" without.
std::string ExposureCurveSvg(const v1::ExposureResults& exposure);
// The report's exposure plots with headings and captions.
std::string ExposurePlotsHtml(const v1::AuditResults& results);

}  // namespace memaudit::cli

#endif  // MEMAUDIT_AUDITS_EXPOSURE_CLI_PLOTS_H_
