// Attack features for "When Machine Unlearning Jeopardizes Privacy" (Chen et
// al.): combine the posterior of the original model p_o and of the
// unlearned model p_u for one queried sample.
#ifndef MEMAUDIT_SCORING_UNLEARNING_FEATURES_H_
#define MEMAUDIT_SCORING_UNLEARNING_FEATURES_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "scoring/matrix.h"

namespace memaudit::scoring {

enum class UnlearningFeature {
  kDirectConcat,  // [p_o, p_u]                         (2ℓ)
  kSortedConcat,  // [sort↓(p_o), p_u in that order]    (2ℓ)
  kDirectDiff,    // p_o − p_u                          (ℓ)
  kSortedDiff,    // sort↓(p_o) − p_u in that order     (ℓ)
  kEucDist,       // ‖p_o − p_u‖₂                       (1)
  kOriginalOnly,  // p_o: the classical-MIA baseline    (ℓ)
};

// "Sorted" orders classes by p_o descending (ties keep class order) and
// applies the SAME permutation to p_u, which is not sorted by its own values.
// p_o and p_u: equal length >= 1, finite.
absl::StatusOr<std::vector<double>> UnlearningFeatures(absl::Span<const double> p_original,
                                                       absl::Span<const double> p_unlearned,
                                                       UnlearningFeature kind);

// Row-wise over samples × classes matrices; returns samples × feature-dim.
absl::StatusOr<Matrix> UnlearningFeatureMatrix(const Matrix& p_original, const Matrix& p_unlearned,
                                               UnlearningFeature kind);

}  // namespace memaudit::scoring

#endif  // MEMAUDIT_SCORING_UNLEARNING_FEATURES_H_
