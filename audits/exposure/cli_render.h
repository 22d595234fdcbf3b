// How the CLI shows `exposure` audit results: the terminal table, the HTML
// report's canary table (its plots are in cli_plots.h) and CSV.
#ifndef MEMAUDIT_AUDITS_EXPOSURE_CLI_RENDER_H_
#define MEMAUDIT_AUDITS_EXPOSURE_CLI_RENDER_H_

#include <string>

#include "absl/status/status.h"
#include "cli/kind_handler.h"
#include "memaudit/v1/results.pb.h"

namespace memaudit::cli {

// Whether `estimator` ("exact", "sampled", "extrapolated") ran.
bool HasEstimator(const v1::ExposureResults& x, const std::string& estimator);

std::string ExposureTable(const v1::AuditResults& results);
// The body of the report for complete exposure results (no <html> wrapper).
std::string ExposureHtmlSection(const v1::AuditResults& results);
// canaries.csv and exposure_by_repeats.csv in `dir` (which exists), rows of
// every variant; with a sweep also exposure_variants.csv, one per variant;
// with replicates also exposure_replicates.csv and
// exposure_replicate_canaries.csv (cli_replicates_render.h).
absl::Status WriteExposureCsv(const v1::AuditResults& results, const std::string& dir);

}  // namespace memaudit::cli

#endif  // MEMAUDIT_AUDITS_EXPOSURE_CLI_RENDER_H_
