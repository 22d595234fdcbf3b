// Defaults, validation and the step count of an `exposure` audit (The Secret
// Sharer), kept apart from spec_validator.cc so each audit kind stays small.
#ifndef MEMAUDIT_AUDITS_EXPOSURE_SPEC_H_
#define MEMAUDIT_AUDITS_EXPOSURE_SPEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "memaudit/v1/spec.pb.h"
#include "spec/kind_handler.h"
#include "spec/spec_validator.h"

namespace memaudit::spec {

void ApplyExposureDefaults(v1::ExposureAudit* e);
void ValidateExposure(const v1::ExposureAudit& e, std::vector<SpecProblem>* problems);

// The characters (UTF-8 sequences) of `text`; one per lead byte.
std::vector<std::string> Utf8Chars(const std::string& text);

// log2|R| of the canary format: digits * log2 10, or the sum of log2 of each
// alphabet's size.
double ExposureLog2Space(const v1::ExposureAudit& e);

// Training steps of one canary model: epochs * ceil(windows / batch_size),
// windows = (characters after insertion - 1) / window. Exact for an inline
// corpus; for a file corpus it assumes max_chars characters (an upper bound
// when the file is longer, as the cut falls at a line end).
uint64_t ExposureSteps(const v1::ExposureAudit& e);
// The same for any task: the batch size and epochs of sweep variant
// `variant` (exposure::ResolveVariant), and the corpus with or without the
// canaries (baseline and reference models train without them).
uint64_t ExposureTaskSteps(const v1::ExposureAudit& e, uint32_t variant, bool with_canaries);
// The same for an explicit batch size and epoch count.
uint64_t ExposureRecipeSteps(const v1::ExposureAudit& e, uint32_t batch_size, uint32_t epochs,
                             bool with_canaries);

}  // namespace memaudit::spec

#endif  // MEMAUDIT_AUDITS_EXPOSURE_SPEC_H_
