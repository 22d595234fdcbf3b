// Warnings a kind's results carry when a setting makes a number undefined or
// too noisy to read at face value (docs/results.md, "Warnings"). Pure
// functions of the spec; each kind's handler calls its own.
#ifndef MEMAUDIT_SERVICES_SCORER_RESULT_WARNINGS_H_
#define MEMAUDIT_SERVICES_SCORER_RESULT_WARNINGS_H_

#include <vector>

#include "memaudit/v1/results.pb.h"
#include "memaudit/v1/spec.pb.h"

namespace memaudit::scorer {

// "few_reference_models" below kFewReferenceModels; "attacks_left_out" when
// a default attack is undefined at the spec's reference_models.
std::vector<v1::ResultWarning> MembershipWarnings(const v1::MembershipAudit& m);

// "few_trials" below kFewTrials: a Student-t interval on fewer means has
// t >= 4.3 and spans much of the metric's range.
inline constexpr uint32_t kFewTrials = 3;
std::vector<v1::ResultWarning> ForgettingWarnings(const v1::ForgettingAudit& f);

// "few_replicates" at exposure or relational replicates = 2 (kFewTrials):
// the interval across 2 replicate means uses t = 12.7. One replicate shows
// no interval, so it warns of nothing.
std::vector<v1::ResultWarning> ExposureWarnings(const v1::ExposureAudit& e);
std::vector<v1::ResultWarning> RelationalWarnings(const v1::RelationalAudit& r);

}  // namespace memaudit::scorer

#endif  // MEMAUDIT_SERVICES_SCORER_RESULT_WARNINGS_H_
