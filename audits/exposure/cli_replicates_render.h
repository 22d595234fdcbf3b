// How the CLI shows an exposure audit's replicates (spec replicates > 1):
// per insertion count, each estimator's mean across replicate canary models
// with its 95% interval, in the table, the HTML report and CSV. Every
// function gives nothing for results without replicates.
#ifndef MEMAUDIT_AUDITS_EXPOSURE_CLI_REPLICATES_RENDER_H_
#define MEMAUDIT_AUDITS_EXPOSURE_CLI_REPLICATES_RENDER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "memaudit/v1/results.pb.h"

namespace memaudit::cli {

// Lines under one model's "exposure vs insertions".
std::string ReplicatesText(const v1::ExposureResults& x);
// A table and a sentence on the method, under one model's canary table.
std::string ReplicatesHtml(const v1::ExposureResults& x);
// exposure_replicates.csv (one row per variant, insertion count and
// estimator) and exposure_replicate_canaries.csv (one row per variant,
// replicate and canary) in `dir`, when a variant has replicates.
absl::Status WriteReplicatesCsv(const std::string& audit_id,
                                const std::vector<v1::ExposureVariantResult>& variants,
                                const std::string& dir);

}  // namespace memaudit::cli

#endif  // MEMAUDIT_AUDITS_EXPOSURE_CLI_REPLICATES_RENDER_H_
