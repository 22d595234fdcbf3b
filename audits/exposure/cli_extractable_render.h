// How the CLI shows an exposure audit's extractable memorization (spec
// extractable): per group of held-out sequences, the fraction the canary
// model reproduced exactly with its 95% interval, in the table, the HTML
// report and CSV. Every function gives nothing for results without it.
#ifndef MEMAUDIT_AUDITS_EXPOSURE_CLI_EXTRACTABLE_RENDER_H_
#define MEMAUDIT_AUDITS_EXPOSURE_CLI_EXTRACTABLE_RENDER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "memaudit/v1/results.pb.h"

namespace memaudit::cli {

// Lines under one model's canary table.
std::string ExtractableText(const v1::ExposureResults& x);
// A table and a sentence on the method, under one model's canary table.
std::string ExtractableHtml(const v1::ExposureResults& x);
// The fraction extracted against insertions, with its interval as a band
// (an inline <svg>); "" without extractable memorization.
std::string ExtractableSvg(const v1::ExposureResults& x);
// extractable.csv (one row per variant and group) and
// extractable_membership.csv (one per variant, inserted group and attack) in
// `dir`, when a variant measured it.
absl::Status WriteExtractableCsv(const std::string& audit_id,
                                 const std::vector<v1::ExposureVariantResult>& variants,
                                 const std::string& dir);

}  // namespace memaudit::cli

#endif  // MEMAUDIT_AUDITS_EXPOSURE_CLI_EXTRACTABLE_RENDER_H_
