#include "scoring/attack_evaluation.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "scoring/roc.h"

namespace memaudit::scoring {

absl::StatusOr<AttackEvaluation> EvaluateAttack(AttackClassifier& classifier,
                                                const Matrix& shadow_features,
                                                absl::Span<const uint8_t> shadow_labels,
                                                const Matrix& target_features,
                                                absl::Span<const uint8_t> target_labels) {
  if (auto s = CheckAttackTrainingData("shadow_features", shadow_features, "shadow_labels",
                                       shadow_labels);
      !s.ok()) {
    return s;
  }
  if (auto s = CheckAttackTrainingData("target_features", target_features, "target_labels",
                                       target_labels);
      !s.ok()) {
    return s;
  }
  if (shadow_features.cols != target_features.cols) {
    return absl::InvalidArgumentError(
        absl::StrCat("target_features.cols = ", target_features.cols,
                     " must equal shadow_features.cols = ", shadow_features.cols));
  }
  if (auto s = classifier.Fit(shadow_features, shadow_labels); !s.ok()) return s;
  absl::StatusOr<std::vector<double>> p = classifier.PredictProbability(target_features);
  if (!p.ok()) return p.status();
  absl::StatusOr<double> auc = Auc(*p, target_labels);
  if (!auc.ok()) return auc.status();
  AttackEvaluation out;
  out.auc = *auc;
  out.target_probabilities = *std::move(p);
  return out;
}

absl::StatusOr<AttackEvaluation> EvaluateAttack(absl::string_view classifier_name,
                                                const Matrix& shadow_features,
                                                absl::Span<const uint8_t> shadow_labels,
                                                const Matrix& target_features,
                                                absl::Span<const uint8_t> target_labels,
                                                const AttackClassifierOptions& options) {
  absl::StatusOr<std::unique_ptr<AttackClassifier>> classifier =
      MakeAttackClassifier(classifier_name, options);
  if (!classifier.ok()) return classifier.status();
  return EvaluateAttack(**classifier, shadow_features, shadow_labels, target_features,
                        target_labels);
}

}  // namespace memaudit::scoring
