// L2-regularized binary logistic regression fitted by Newton's method, the
// attack classifier for the unlearning audit. Deterministic: no random
// initialization, no data shuffling.
#ifndef MEMAUDIT_SCORING_LOGISTIC_REGRESSION_H_
#define MEMAUDIT_SCORING_LOGISTIC_REGRESSION_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "scoring/matrix.h"

namespace memaudit::scoring {

struct LogisticRegressionOptions {
  // Minimizes Σ_i logloss_i + (l2/2)‖w‖² (intercept unpenalized): sklearn's
  // LogisticRegression(C = 1/l2). l2 >= 0; 0 may diverge on separable data.
  double l2 = 1.0;
  // Standardize features (population mean/std, as StandardScaler; constant
  // features are left unscaled) before fitting; the penalty then acts on the
  // standardized weights, and the model is reported in original units.
  bool standardize = true;
  size_t max_iterations = 100;
  double tolerance = 1e-10;  // on the largest Newton step component
};

class LogisticRegression {
 public:
  // x: samples × features, finite, >= 1 sample; y in {0, 1} with both
  // classes present (the unpenalized intercept diverges otherwise).
  static absl::StatusOr<LogisticRegression> Fit(const Matrix& x, absl::Span<const uint8_t> y,
                                                const LogisticRegressionOptions& options = {});

  // P(y = 1 | x) per row; x.cols must match the fitted features.
  absl::StatusOr<std::vector<double>> PredictProbability(const Matrix& x) const;

  // In original feature units: P(y = 1 | x) = σ(intercept + weights·x).
  const std::vector<double>& weights() const { return weights_; }
  double intercept() const { return intercept_; }
  size_t iterations() const { return iterations_; }
  bool converged() const { return converged_; }

 private:
  std::vector<double> weights_;
  double intercept_ = 0.0;
  size_t iterations_ = 0;
  bool converged_ = false;
};

}  // namespace memaudit::scoring

#endif  // MEMAUDIT_SCORING_LOGISTIC_REGRESSION_H_
