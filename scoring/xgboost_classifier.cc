#include "scoring/xgboost_classifier.h"

#include <xgboost/c_api.h>

#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "common/base/status_macros.h"
#include "scoring/attack_classifier.h"

namespace memaudit::scoring {
namespace {

absl::Status XgbCheck(int rc, absl::string_view call) {
  if (rc == 0) return absl::OkStatus();
  const char* error = XGBGetLastError();
  return absl::InternalError(
      absl::StrCat("XGBoost ", call, " failed: ", error != nullptr ? error : "(no message)"));
}

struct DMatrixDeleter {
  void operator()(void* dmatrix) const { XGDMatrixFree(dmatrix); }
};
using DMatrixPtr = std::unique_ptr<void, DMatrixDeleter>;

// Converts to XGBoost's float32 storage; NaN would mean "missing" to XGBoost
// and ±inf is rejected by it, so every value must stay finite as a float.
absl::StatusOr<DMatrixPtr> MakeDMatrix(absl::string_view name, const Matrix& features,
                                       int nthread) {
  std::vector<float> values(features.data.size());
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = static_cast<float>(features.data[i]);
    if (!std::isfinite(values[i])) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, ": value ", features.data[i], " at row ", i / features.cols, ", column ",
          i % features.cols, " is not finite as a float (XGBoost stores float32)"));
    }
  }
  DMatrixHandle handle = nullptr;
  absl::Status s = XgbCheck(
      XGDMatrixCreateFromMat_omp(values.data(), features.rows, features.cols,
                                 std::numeric_limits<float>::quiet_NaN(), &handle, nthread),
      "XGDMatrixCreateFromMat_omp");
  DMatrixPtr out(handle);  // owns the handle even if creation reported failure
  if (!s.ok()) return s;
  if (out == nullptr) return absl::InternalError("XGBoost returned a null DMatrix");
  return out;
}

std::string Num(double v) { return absl::StrFormat("%.17g", v); }

}  // namespace

void XGBoostClassifier::BoosterDeleter::operator()(void* booster) const { XGBoosterFree(booster); }

XGBoostOptions RandomForestOptions() {
  XGBoostOptions o;
  o.rounds = 1;
  o.num_parallel_tree = 100;
  o.eta = 1.0;
  o.subsample = 0.8;
  o.colsample_bynode = 0.8;
  o.lambda = 1e-5;
  return o;
}

absl::Status ValidateXGBoostOptions(const XGBoostOptions& o) {
  auto bad = [](absl::string_view field, auto value, absl::string_view rule) {
    return absl::InvalidArgumentError(
        absl::StrCat("XGBoostOptions.", field, " = ", value, "; must be ", rule));
  };
  if (o.max_depth < 1) return bad("max_depth", o.max_depth, ">= 1");
  if (!(o.eta > 0.0) || !std::isfinite(o.eta)) return bad("eta", o.eta, "finite and > 0");
  if (o.rounds < 1) return bad("rounds", o.rounds, ">= 1");
  if (o.num_parallel_tree < 1) return bad("num_parallel_tree", o.num_parallel_tree, ">= 1");
  if (!(o.subsample > 0.0 && o.subsample <= 1.0)) {
    return bad("subsample", o.subsample, "in (0, 1]");
  }
  if (!(o.colsample_bynode > 0.0 && o.colsample_bynode <= 1.0)) {
    return bad("colsample_bynode", o.colsample_bynode, "in (0, 1]");
  }
  if (!(o.min_child_weight >= 0.0) || !std::isfinite(o.min_child_weight)) {
    return bad("min_child_weight", o.min_child_weight, "finite and >= 0");
  }
  if (!(o.lambda >= 0.0) || !std::isfinite(o.lambda)) {
    return bad("lambda", o.lambda, "finite and >= 0");
  }
  if (o.tree_method != "exact" && o.tree_method != "hist") {
    return bad("tree_method", absl::StrCat("\"", o.tree_method, "\""), "\"exact\" or \"hist\"");
  }
  if (o.max_bin < 2) return bad("max_bin", o.max_bin, ">= 2");
  if (o.nthread < 1) return bad("nthread", o.nthread, ">= 1");
  return absl::OkStatus();
}

absl::StatusOr<XGBoostClassifier> XGBoostClassifier::Fit(const Matrix& features,
                                                         absl::Span<const uint8_t> labels,
                                                         const XGBoostOptions& o) {
  MEMAUDIT_RETURN_IF_ERROR(ValidateXGBoostOptions(o));
  MEMAUDIT_RETURN_IF_ERROR(CheckAttackTrainingData("features", features, "labels", labels));
  MEMAUDIT_ASSIGN_OR_RETURN(DMatrixPtr train, MakeDMatrix("features", features, o.nthread));
  const std::vector<float> float_labels(labels.begin(), labels.end());
  MEMAUDIT_RETURN_IF_ERROR(XgbCheck(
      XGDMatrixSetFloatInfo(train.get(), "label", float_labels.data(), float_labels.size()),
      "XGDMatrixSetFloatInfo(label)"));

  XGBoostClassifier model;
  model.options_ = o;
  model.num_features_ = features.cols;
  DMatrixHandle dmats[] = {train.get()};
  BoosterHandle booster = nullptr;
  absl::Status created = XgbCheck(XGBoosterCreate(dmats, 1, &booster), "XGBoosterCreate");
  model.booster_.reset(booster);
  if (!created.ok()) return created;

  // Everything that could vary between runs is pinned: XGBoost 1.x seeds its
  // global PRNG at configuration, which another booster on the same thread
  // could advance, so seed_per_iteration reseeds it from (seed, round).
  std::vector<std::pair<std::string, std::string>> params = {
      {"verbosity", "0"},
      {"booster", "gbtree"},
      {"objective", "binary:logistic"},
      {"base_score", "0.5"},
      {"nthread", absl::StrCat(o.nthread)},
      {"seed", absl::StrCat(o.seed)},
      {"seed_per_iteration", "1"},
      {"tree_method", o.tree_method},
      {"max_depth", absl::StrCat(o.max_depth)},
      {"eta", Num(o.eta)},
      {"num_parallel_tree", absl::StrCat(o.num_parallel_tree)},
      {"subsample", Num(o.subsample)},
      {"colsample_bynode", Num(o.colsample_bynode)},
      {"min_child_weight", Num(o.min_child_weight)},
      {"lambda", Num(o.lambda)},
  };
  if (o.tree_method == "hist") params.emplace_back("max_bin", absl::StrCat(o.max_bin));
  for (const auto& [key, value] : params) {
    MEMAUDIT_RETURN_IF_ERROR(XgbCheck(XGBoosterSetParam(booster, key.c_str(), value.c_str()),
                                      absl::StrCat("XGBoosterSetParam(", key, "=", value, ")")));
  }
  for (int round = 0; round < o.rounds; ++round) {
    MEMAUDIT_RETURN_IF_ERROR(XgbCheck(XGBoosterUpdateOneIter(booster, round, train.get()),
                                      absl::StrCat("XGBoosterUpdateOneIter(round ", round, ")")));
  }
  return model;
}

absl::StatusOr<std::vector<double>> XGBoostClassifier::PredictProbability(
    const Matrix& features) const {
  if (booster_ == nullptr) {
    return absl::FailedPreconditionError("XGBoostClassifier: PredictProbability before Fit");
  }
  MEMAUDIT_RETURN_IF_ERROR(CheckAttackFeatures("features", features));
  if (features.cols != num_features_) {
    return absl::InvalidArgumentError(absl::StrCat("features.cols = ", features.cols,
                                                   " but the model was fitted on ", num_features_,
                                                   " features"));
  }
  MEMAUDIT_ASSIGN_OR_RETURN(DMatrixPtr data, MakeDMatrix("features", features, options_.nthread));
  const char* config = R"({"type": 0, "training": false, "iteration_begin": 0, "iteration_end": 0,)"
                       R"( "strict_shape": false})";
  const bst_ulong* shape = nullptr;
  bst_ulong dim = 0;
  const float* result = nullptr;
  MEMAUDIT_RETURN_IF_ERROR(XgbCheck(
      XGBoosterPredictFromDMatrix(booster_.get(), data.get(), config, &shape, &dim, &result),
      "XGBoosterPredictFromDMatrix"));
  if (dim != 1 || shape == nullptr || shape[0] != features.rows || result == nullptr) {
    return absl::InternalError(absl::StrCat("XGBoost prediction has ", dim,
                                            " dimensions; expected one of length ", features.rows));
  }
  // The result buffer belongs to the booster; copy it out now.
  std::vector<double> p(result, result + features.rows);
  for (double v : p) {
    if (!(v >= 0.0 && v <= 1.0)) {
      return absl::InternalError(absl::StrCat("XGBoost predicted probability ", v));
    }
  }
  return p;
}

}  // namespace memaudit::scoring
