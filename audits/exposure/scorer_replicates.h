// Across-seed replication of an exposure audit's canary model (spec
// replicates = k): every replicate's per-canary numbers and, per insertion
// count and estimator, the mean across replicates with its Student-t 95%
// interval (scoring::SummarizeMean, the forgetting curves' trial means).
#ifndef MEMAUDIT_AUDITS_EXPOSURE_SCORER_REPLICATES_H_
#define MEMAUDIT_AUDITS_EXPOSURE_SCORER_REPLICATES_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "common/metrics/metrics.h"
#include "memaudit/v1/results.pb.h"

namespace memaudit::scorer {

// `replicates`: every replicate canary model of one variant scored as the
// canary model is (same canaries, same estimators), replicate 0 first; `x`
// holds replicate 0's results with its by_repeats. With k >= 2 sets
// x->replicates and every by_repeats group's across_replicates: per
// replicate the mean over the group's canaries, then SummarizeMean over the
// k means, cut to the estimator's range. Does nothing for k < 2, so an audit
// without replicates scores as before.
absl::Status AddAcrossReplicates(const std::vector<v1::ExposureResults>& replicates,
                                 v1::ExposureResults* x);

// memaudit_exposure_replicated_log2{audit, team, variant, insertions,
// estimator} (the mean across replicates) and its 95% interval's ends
// memaudit_exposure_replicated_low_log2 / _high_log2, labelled alike; no
// family when no variant has replicates. `variants`: (name, results).
void PublishExposureReplicates(
    prometheus::Registry& metrics, const std::string& audit, const std::string& team,
    const std::vector<std::pair<std::string, const v1::ExposureResults*>>& variants);

}  // namespace memaudit::scorer

#endif  // MEMAUDIT_AUDITS_EXPOSURE_SCORER_REPLICATES_H_
