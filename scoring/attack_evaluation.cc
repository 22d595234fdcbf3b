#include "scoring/attack_evaluation.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "scoring/roc.h"

namespace memaudit::scoring {

absl::StatusOr<AttackEvaluation> EvaluateAttack(AttackClassifier& classifier,
                                                const Matrix& shadow_features,
                                                absl::Span<const uint8_t> shadow_labels,
                                                const Matrix& target_features,
                                                absl::Span<const uint8_t> target_labels) {
  MEMAUDIT_RETURN_IF_ERROR(
      CheckAttackTrainingData("shadow_features", shadow_features, "shadow_labels", shadow_labels));
  MEMAUDIT_RETURN_IF_ERROR(
      CheckAttackTrainingData("target_features", target_features, "target_labels", target_labels));
  if (shadow_features.cols != target_features.cols) {
    return absl::InvalidArgumentError(
        absl::StrCat("target_features.cols = ", target_features.cols,
                     " must equal shadow_features.cols = ", shadow_features.cols));
  }
  MEMAUDIT_RETURN_IF_ERROR(classifier.Fit(shadow_features, shadow_labels));
  MEMAUDIT_ASSIGN_OR_RETURN(std::vector<double> p, classifier.PredictProbability(target_features));
  MEMAUDIT_ASSIGN_OR_RETURN(double auc, Auc(p, target_labels));
  AttackEvaluation out;
  out.auc = auc;
  out.target_probabilities = std::move(p);
  return out;
}

absl::StatusOr<AttackEvaluation> EvaluateAttack(absl::string_view classifier_name,
                                                const Matrix& shadow_features,
                                                absl::Span<const uint8_t> shadow_labels,
                                                const Matrix& target_features,
                                                absl::Span<const uint8_t> target_labels,
                                                const AttackClassifierOptions& options) {
  MEMAUDIT_ASSIGN_OR_RETURN(std::unique_ptr<AttackClassifier> classifier,
                            MakeAttackClassifier(classifier_name, options));
  return EvaluateAttack(*classifier, shadow_features, shadow_labels, target_features,
                        target_labels);
}

}  // namespace memaudit::scoring
