// Binary attack classifiers over per-sample feature rows (e.g. the unlearning
// features of unlearning_features.h): label 1 = member (the positive class,
// ⟨in,out⟩ in the unlearning attack), 0 = non-member. Every implementation
// is deterministic: the same data and options give the same probabilities.
#ifndef MEMAUDIT_SCORING_ATTACK_CLASSIFIER_H_
#define MEMAUDIT_SCORING_ATTACK_CLASSIFIER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "scoring/logistic_regression.h"
#include "scoring/matrix.h"
#include "scoring/xgboost_classifier.h"

namespace memaudit::scoring {

class AttackClassifier {
 public:
  virtual ~AttackClassifier() = default;

  // features: samples × features, >= 1 row and >= 1 column, finite; labels:
  // one 0/1 per row with both classes present. Errors are InvalidArgument
  // naming "features" or "labels". A second Fit replaces the model; a failed
  // Fit leaves the object unfitted.
  virtual absl::Status Fit(const Matrix& features, absl::Span<const uint8_t> labels) = 0;

  // P(label = 1 | row), one per row, in [0, 1]: higher = more likely member.
  // FailedPrecondition before a successful Fit; InvalidArgument naming
  // "features" on a bad shape, a column count other than the fitted one, or a
  // non-finite value.
  virtual absl::StatusOr<std::vector<double>> PredictProbability(const Matrix& features) const = 0;

  // The factory name ("gradient_boosting", ...).
  virtual absl::string_view name() const = 0;
};

// Hyper-parameters for every classifier the factory can build; only the one
// matching the requested name is used.
struct AttackClassifierOptions {
  // "gradient_boosting": XGBoost gbtree with XGBoost's own defaults.
  XGBoostOptions gradient_boosting;
  // "random_forest": XGBoost's random-forest mode.
  XGBoostOptions random_forest = RandomForestOptions();
  // "logistic_regression": l2 = 1 with standardization (sklearn C = 1 with
  // StandardScaler, as in the paper's code).
  LogisticRegressionOptions logistic_regression;
};

// {"gradient_boosting", "random_forest", "logistic_regression"}.
std::vector<std::string> AttackClassifierNames();

// Builds an unfitted classifier. An unknown name is InvalidArgument naming
// it and listing the known ones; invalid options are InvalidArgument naming
// the field.
absl::StatusOr<std::unique_ptr<AttackClassifier>> MakeAttackClassifier(
    absl::string_view name, const AttackClassifierOptions& options = {});

// The input checks behind the contract above, for implementations and
// callers that want other argument names in the messages.
absl::Status CheckAttackFeatures(absl::string_view features_name, const Matrix& features);
absl::Status CheckAttackTrainingData(absl::string_view features_name, const Matrix& features,
                                     absl::string_view labels_name,
                                     absl::Span<const uint8_t> labels);

}  // namespace memaudit::scoring

#endif  // MEMAUDIT_SCORING_ATTACK_CLASSIFIER_H_
