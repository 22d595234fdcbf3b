#include "scoring/attack_classifier.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/status_macros.h"
#include "scoring/validation.h"

namespace memaudit::scoring {
namespace {

constexpr absl::string_view kGradientBoosting = "gradient_boosting";
constexpr absl::string_view kRandomForest = "random_forest";
constexpr absl::string_view kLogisticRegression = "logistic_regression";

class XGBoostAttack final : public AttackClassifier {
 public:
  XGBoostAttack(absl::string_view name, const XGBoostOptions& options)
      : name_(name), options_(options) {}

  absl::Status Fit(const Matrix& features, absl::Span<const uint8_t> labels) override {
    model_.reset();
    MEMAUDIT_ASSIGN_OR_RETURN(XGBoostClassifier m,
                              XGBoostClassifier::Fit(features, labels, options_));
    model_.emplace(std::move(m));
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<double>> PredictProbability(const Matrix& features) const override {
    if (!model_.has_value()) {
      return absl::FailedPreconditionError(
          absl::StrCat(name_, ": PredictProbability before a successful Fit"));
    }
    return model_->PredictProbability(features);
  }

  absl::string_view name() const override { return name_; }

 private:
  absl::string_view name_;  // one of the constants above
  XGBoostOptions options_;
  std::optional<XGBoostClassifier> model_;
};

class LogisticRegressionAttack final : public AttackClassifier {
 public:
  explicit LogisticRegressionAttack(const LogisticRegressionOptions& options) : options_(options) {}

  absl::Status Fit(const Matrix& features, absl::Span<const uint8_t> labels) override {
    model_.reset();
    // Checked here so messages use the interface's argument names.
    MEMAUDIT_RETURN_IF_ERROR(CheckAttackTrainingData("features", features, "labels", labels));
    MEMAUDIT_ASSIGN_OR_RETURN(LogisticRegression m,
                              LogisticRegression::Fit(features, labels, options_));
    model_.emplace(std::move(m));
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<double>> PredictProbability(const Matrix& features) const override {
    if (!model_.has_value()) {
      return absl::FailedPreconditionError(
          absl::StrCat(kLogisticRegression, ": PredictProbability before a successful Fit"));
    }
    MEMAUDIT_RETURN_IF_ERROR(CheckAttackFeatures("features", features));
    if (features.cols != model_->weights().size()) {
      return absl::InvalidArgumentError(absl::StrCat("features.cols = ", features.cols,
                                                     " but the model was fitted on ",
                                                     model_->weights().size(), " features"));
    }
    return model_->PredictProbability(features);
  }

  absl::string_view name() const override { return kLogisticRegression; }

 private:
  LogisticRegressionOptions options_;
  std::optional<LogisticRegression> model_;
};

}  // namespace

std::vector<std::string> AttackClassifierNames() {
  return {std::string(kGradientBoosting), std::string(kRandomForest),
          std::string(kLogisticRegression)};
}

absl::StatusOr<std::unique_ptr<AttackClassifier>> MakeAttackClassifier(
    absl::string_view name, const AttackClassifierOptions& options) {
  if (name == kGradientBoosting || name == kRandomForest) {
    const XGBoostOptions& o =
        name == kGradientBoosting ? options.gradient_boosting : options.random_forest;
    if (auto s = ValidateXGBoostOptions(o); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("AttackClassifierOptions.", name, ": ", s.message()));
    }
    return std::make_unique<XGBoostAttack>(
        name == kGradientBoosting ? kGradientBoosting : kRandomForest, o);
  }
  if (name == kLogisticRegression) {
    return std::make_unique<LogisticRegressionAttack>(options.logistic_regression);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown attack classifier \"", name,
                   "\"; known: ", absl::StrJoin(AttackClassifierNames(), ", ")));
}

absl::Status CheckAttackFeatures(absl::string_view features_name, const Matrix& features) {
  MEMAUDIT_RETURN_IF_ERROR(features.CheckShape(std::string(features_name)));
  MEMAUDIT_RETURN_IF_ERROR(
      CheckNonEmpty(absl::StrCat(features_name, " rows (samples)"), features.rows));
  MEMAUDIT_RETURN_IF_ERROR(
      CheckNonEmpty(absl::StrCat(features_name, " cols (features)"), features.cols));
  return CheckFinite(absl::StrCat(features_name, ".data"), features.data);
}

absl::Status CheckAttackTrainingData(absl::string_view features_name, const Matrix& features,
                                     absl::string_view labels_name,
                                     absl::Span<const uint8_t> labels) {
  MEMAUDIT_RETURN_IF_ERROR(CheckAttackFeatures(features_name, features));
  MEMAUDIT_RETURN_IF_ERROR(CheckSameLength(absl::StrCat(features_name, " rows"), features.rows,
                                           labels_name, labels.size()));
  MEMAUDIT_RETURN_IF_ERROR(CheckBinary(labels_name, labels));
  size_t positives = 0;
  for (uint8_t v : labels) positives += v;
  if (positives == 0 || positives == labels.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(labels_name, " must contain both classes (0 and 1); got ", positives, " of ",
                     labels.size(), " equal to 1"));
  }
  return absl::OkStatus();
}

}  // namespace memaudit::scoring
