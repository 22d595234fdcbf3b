// Relational memorization (Differential Relational Privacy): with every
// digit removed from the context, a model that still produces the answer
// must have memorized the relation. RM_norm = s_train − s_val, where s is
// the success rate of that reconstruction on corrupted inputs; subtracting
// the validation rate removes what is answerable without memorization.
#ifndef MEMAUDIT_SCORING_RELATIONAL_H_
#define MEMAUDIT_SCORING_RELATIONAL_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace memaudit::scoring {

// The corruption: delete every ASCII digit, keep everything else
// ("23.5%" → ".%").
std::string RemoveDigits(absl::string_view text);
bool ContainsDigit(absl::string_view text);

// SQuAD answer normalization: lowercase, drop ASCII punctuation, drop the
// articles a/an/the, collapse whitespace.
std::string NormalizeAnswer(absl::string_view text);

enum class SuccessMetric {
  kExactMatch,  // 1 if the normalized strings are equal
  kDigitF1,     // F1 over the multiset of digit characters (order ignored)
  kTokenF1,     // SQuAD F1 over the multiset of normalized tokens
};

// Success of one prediction: the max over its references (validation sets
// often carry several). F1 with no units on both sides is 1 (exact match of
// nothing), on one side 0. references must be non-empty.
absl::StatusOr<double> AnswerSuccess(absl::string_view prediction,
                                     absl::Span<const std::string> references,
                                     SuccessMetric metric);

struct QaPrediction {
  std::string prediction;               // model output on the corrupted input
  std::vector<std::string> references;  // gold answers
};

struct RelationalMemorization {
  double success_train = 0.0;  // mean success on corrupted training inputs
  double success_val = 0.0;    // mean success on corrupted validation inputs
  double rm_norm = 0.0;        // success_train − success_val, in [−1, 1]
};

// Each prediction's AnswerSuccess, in order: what the means above average,
// for their intervals (difference_intervals.h). Needs non-empty references.
absl::StatusOr<std::vector<double>> RecordSuccesses(absl::Span<const QaPrediction> set,
                                                    SuccessMetric metric);

absl::StatusOr<RelationalMemorization> ComputeRelationalMemorization(
    absl::Span<const QaPrediction> train, absl::Span<const QaPrediction> validation,
    SuccessMetric metric);

}  // namespace memaudit::scoring

#endif  // MEMAUDIT_SCORING_RELATIONAL_H_
