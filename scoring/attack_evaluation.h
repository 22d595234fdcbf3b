// The shadow-model attack pipeline of "When Machine Unlearning Jeopardizes
// Privacy": fit an attack classifier on shadow-side feature rows, then score
// the target-side rows and report the attack AUC there.
#ifndef MEMAUDIT_SCORING_ATTACK_EVALUATION_H_
#define MEMAUDIT_SCORING_ATTACK_EVALUATION_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "scoring/attack_classifier.h"
#include "scoring/matrix.h"

namespace memaudit::scoring {

struct AttackEvaluation {
  // Mann–Whitney AUC (roc.h) of `target_probabilities` against the target
  // labels; 0.5 = chance.
  double auc = 0.0;
  // The attack's P(member) for each target row, in row order: the "p_u"
  // confidences that DegCount/DegRate (degradation.h) take.
  std::vector<double> target_probabilities;
};

// Fits `classifier` on (shadow_features, shadow_labels), replacing any model
// it held, then predicts target_features. Both sides: finite features with
// >= 1 row, 0/1 labels one per row with both classes present; the two
// feature matrices must have equal column counts. Every input is checked
// before fitting; errors are InvalidArgument naming the argument
// ("shadow_features", "target_labels", ...).
absl::StatusOr<AttackEvaluation> EvaluateAttack(AttackClassifier& classifier,
                                                const Matrix& shadow_features,
                                                absl::Span<const uint8_t> shadow_labels,
                                                const Matrix& target_features,
                                                absl::Span<const uint8_t> target_labels);

// Same, with a fresh classifier from MakeAttackClassifier(classifier_name,
// options).
absl::StatusOr<AttackEvaluation> EvaluateAttack(absl::string_view classifier_name,
                                                const Matrix& shadow_features,
                                                absl::Span<const uint8_t> shadow_labels,
                                                const Matrix& target_features,
                                                absl::Span<const uint8_t> target_labels,
                                                const AttackClassifierOptions& options = {});

}  // namespace memaudit::scoring

#endif  // MEMAUDIT_SCORING_ATTACK_EVALUATION_H_
