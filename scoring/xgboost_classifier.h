// Binary classifier backed by XGBoost's C API (objective binary:logistic):
// boosted trees, or XGBoost's random-forest mode. Training is deterministic:
// the same data and options give bit-identical probabilities (the seed is
// reapplied every round, the thread count is explicit, base_score is pinned,
// and the tree method is fixed).
#ifndef MEMAUDIT_SCORING_XGBOOST_CLASSIFIER_H_
#define MEMAUDIT_SCORING_XGBOOST_CLASSIFIER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "scoring/matrix.h"

namespace memaudit::scoring {

// Hyper-parameters, passed to XGBoost under the names in brackets. The
// defaults are XGBoost's own with 100 rounds (xgboost.XGBClassifier());
// RandomForestOptions() gives the forest preset.
struct XGBoostOptions {
  int max_depth = 6;                  // [max_depth] >= 1
  double eta = 0.3;                   // [eta] learning rate, > 0
  int rounds = 100;                   // boosting rounds, >= 1
  int num_parallel_tree = 1;          // [num_parallel_tree] trees per round, >= 1
  double subsample = 1.0;             // [subsample] rows per tree, in (0, 1]
  double colsample_bynode = 1.0;      // [colsample_bynode] columns per split, in (0, 1]
  double min_child_weight = 1.0;      // [min_child_weight] min hessian per leaf, >= 0
  double lambda = 1.0;                // [lambda] L2 on leaf weights, >= 0
  std::string tree_method = "exact";  // [tree_method] "exact" or "hist"
  int max_bin = 256;                  // [max_bin] "hist" only, >= 2
  int64_t seed = 0;                   // [seed] drives the subsample/colsample draws
  int nthread = 1;                    // [nthread] >= 1 (never "all cores")
};

// XGBoost's random-forest mode, as xgboost.XGBRFClassifier(n_estimators=100):
// rounds = 1, num_parallel_tree = 100 (the paper's RF has 100 trees),
// eta = 1, subsample = colsample_bynode = 0.8, lambda = 1e-5; the rest as
// XGBoostOptions.
XGBoostOptions RandomForestOptions();

// InvalidArgument naming the first field out of range.
absl::Status ValidateXGBoostOptions(const XGBoostOptions& options);

class XGBoostClassifier {
 public:
  // features: samples × features (>= 1 row, >= 1 column), finite as floats
  // (XGBoost stores float32, so doubles closer than float resolution become
  // equal); labels: one 0/1 per row, both classes present. Errors are
  // InvalidArgument naming "features", "labels" or the option; an XGBoost
  // failure is Internal with XGBGetLastError()'s text.
  static absl::StatusOr<XGBoostClassifier> Fit(const Matrix& features,
                                               absl::Span<const uint8_t> labels,
                                               const XGBoostOptions& options = {});

  // P(label = 1 | row) per row; features.cols must equal num_features().
  // Not safe to call concurrently on one object.
  absl::StatusOr<std::vector<double>> PredictProbability(const Matrix& features) const;

  size_t num_features() const { return num_features_; }
  const XGBoostOptions& options() const { return options_; }

  struct BoosterDeleter {
    void operator()(void* booster) const;  // XGBoosterFree
  };

 private:
  XGBoostClassifier() = default;

  XGBoostOptions options_;
  size_t num_features_ = 0;
  std::unique_ptr<void, BoosterDeleter> booster_;
};

}  // namespace memaudit::scoring

#endif  // MEMAUDIT_SCORING_XGBOOST_CLASSIFIER_H_
