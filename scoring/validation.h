// Argument checks shared by the scoring functions. Each returns
// InvalidArgumentError naming the argument and the rule it broke.
#ifndef MEMAUDIT_SCORING_VALIDATION_H_
#define MEMAUDIT_SCORING_VALIDATION_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace memaudit::scoring {

// `values` must not contain NaN (±inf is allowed: it still orders).
absl::Status CheckNoNaN(absl::string_view name, absl::Span<const double> values);
// `values` must be finite.
absl::Status CheckFinite(absl::string_view name, absl::Span<const double> values);
// Every entry of `flags` must be 0 or 1.
absl::Status CheckBinary(absl::string_view name, absl::Span<const uint8_t> flags);
absl::Status CheckNonEmpty(absl::string_view name, size_t size);
absl::Status CheckSameLength(absl::string_view name_a, size_t size_a, absl::string_view name_b,
                             size_t size_b);
// A probability in [0, 1] (NaN rejected).
absl::Status CheckProbability(absl::string_view name, double p);
// An interval's confidence level, strictly between 0 and 1.
absl::Status CheckConfidence(double confidence);
// A binomial count: trials >= 1 and successes <= trials.
absl::Status CheckCount(size_t successes, size_t trials);

// The standard check for (scores, is_member): equal lengths, no NaN score,
// binary labels, and at least one member and one non-member.
absl::Status CheckLabeledScores(absl::Span<const double> scores,
                                absl::Span<const uint8_t> is_member);

}  // namespace memaudit::scoring

#endif  // MEMAUDIT_SCORING_VALIDATION_H_
