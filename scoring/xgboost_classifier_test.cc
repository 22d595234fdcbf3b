#include "scoring/xgboost_classifier.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scoring/roc.h"
#include "scoring/test_blobs.h"

namespace memaudit::scoring {
namespace {

using ::memaudit::testing::StatusIs;
using ::testing::HasSubstr;

using Data = LabeledBlobs;

Data Blobs(uint64_t seed, size_t n, double shift) { return scoring::Blobs(seed, n, shift, 4); }

TEST(XGBoostClassifierTest, LearnsSeparableData) {
  const Data train = Blobs(1, 400, 5.0), test = Blobs(2, 400, 5.0);
  for (const XGBoostOptions& o : {XGBoostOptions{}, RandomForestOptions()}) {
    auto m = XGBoostClassifier::Fit(train.x, train.y, o);
    MEMAUDIT_ASSERT_OK(m);
    EXPECT_EQ(m->num_features(), 4u);
    auto p = m->PredictProbability(test.x);
    MEMAUDIT_ASSERT_OK(p);
    ASSERT_EQ(p->size(), 400u);
    for (double v : *p) {
      EXPECT_GE(v, 0.0);
      EXPECT_LE(v, 1.0);
    }
    EXPECT_GT(*Auc(*p, test.y), 0.95) << "num_parallel_tree = " << o.num_parallel_tree;
  }
}

// Same data, same options: bit-identical probabilities, also when other
// boosters (with other seeds) were trained in between on the same thread.
TEST(XGBoostClassifierTest, DeterministicAcrossFits) {
  const Data train = Blobs(3, 300, 1.0), test = Blobs(4, 200, 1.0);
  XGBoostOptions hist = RandomForestOptions();
  hist.tree_method = "hist";
  XGBoostOptions sampled_boosting;  // boosting with row/column sampling
  sampled_boosting.subsample = 0.7;
  sampled_boosting.colsample_bynode = 0.5;
  for (const XGBoostOptions& o :
       {XGBoostOptions{}, RandomForestOptions(), hist, sampled_boosting}) {
    auto first = XGBoostClassifier::Fit(train.x, train.y, o);
    MEMAUDIT_ASSERT_OK(first);
    XGBoostOptions other = o;
    other.seed = 12345;
    MEMAUDIT_ASSERT_OK(XGBoostClassifier::Fit(train.x, train.y, other));
    auto second = XGBoostClassifier::Fit(train.x, train.y, o);
    MEMAUDIT_ASSERT_OK(second);
    const std::vector<double> a = *first->PredictProbability(test.x);
    const std::vector<double> b = *second->PredictProbability(test.x);
    EXPECT_EQ(a, b) << o.tree_method << " subsample " << o.subsample;
    EXPECT_EQ(a, *first->PredictProbability(test.x));  // prediction is repeatable too
  }
}

TEST(XGBoostClassifierTest, DeterministicWithTwoThreads) {
  const Data train = Blobs(5, 300, 1.0), test = Blobs(6, 200, 1.0);
  for (const char* method : {"exact", "hist"}) {
    XGBoostOptions o = RandomForestOptions();
    o.tree_method = method;
    o.nthread = 2;
    auto a = XGBoostClassifier::Fit(train.x, train.y, o);
    auto b = XGBoostClassifier::Fit(train.x, train.y, o);
    MEMAUDIT_ASSERT_OK(a);
    MEMAUDIT_ASSERT_OK(b);
    EXPECT_EQ(*a->PredictProbability(test.x), *b->PredictProbability(test.x)) << method;
  }
}

TEST(XGBoostClassifierTest, SeedDrivesTheSampling) {
  const Data train = Blobs(7, 300, 1.0), test = Blobs(8, 200, 1.0);
  XGBoostOptions o = RandomForestOptions();
  auto a = XGBoostClassifier::Fit(train.x, train.y, o);
  o.seed = 1;
  auto b = XGBoostClassifier::Fit(train.x, train.y, o);
  MEMAUDIT_ASSERT_OK(a);
  MEMAUDIT_ASSERT_OK(b);
  EXPECT_NE(*a->PredictProbability(test.x), *b->PredictProbability(test.x));
}

TEST(XGBoostClassifierTest, RandomForestModeDiffersFromBoosting) {
  const XGBoostOptions rf = RandomForestOptions();
  EXPECT_EQ(rf.rounds, 1);
  EXPECT_EQ(rf.num_parallel_tree, 100);
  EXPECT_EQ(rf.eta, 1.0);
  EXPECT_LT(rf.subsample, 1.0);
  EXPECT_LT(rf.colsample_bynode, 1.0);

  const Data train = Blobs(9, 300, 1.0), test = Blobs(10, 200, 1.0);
  auto boosted = XGBoostClassifier::Fit(train.x, train.y);
  auto forest = XGBoostClassifier::Fit(train.x, train.y, rf);
  MEMAUDIT_ASSERT_OK(boosted);
  MEMAUDIT_ASSERT_OK(forest);
  const std::vector<double> pb = *boosted->PredictProbability(test.x);
  const std::vector<double> pf = *forest->PredictProbability(test.x);
  EXPECT_NE(pb, pf);
  // 100 rounds of boosting fit the training rows far more tightly than one
  // round of averaged trees, whose leaves are damped towards 0.5.
  auto spread = [](const std::vector<double>& p) {
    double lo = 1.0, hi = 0.0;
    for (double v : p) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    return hi - lo;
  };
  EXPECT_GT(spread(*boosted->PredictProbability(train.x)),
            spread(*forest->PredictProbability(train.x)));
}

// EucDist features have one column; colsample_bynode = 0.8 must still keep it.
TEST(XGBoostClassifierTest, SingleFeatureWithColumnSampling) {
  const Data d = Blobs(13, 200, 4.0);
  Matrix one(d.x.rows, 1);
  for (size_t i = 0; i < d.x.rows; ++i) one.at(i, 0) = d.x.at(i, 0);
  auto m = XGBoostClassifier::Fit(one, d.y, RandomForestOptions());
  MEMAUDIT_ASSERT_OK(m);
  EXPECT_GT(*Auc(*m->PredictProbability(one), d.y), 0.95);
}

TEST(XGBoostClassifierTest, RejectsBadOptionsNamingTheField) {
  const Data d = Blobs(11, 20, 1.0);
  auto expect_bad = [&](XGBoostOptions o, const char* field) {
    auto m = XGBoostClassifier::Fit(d.x, d.y, o);
    EXPECT_THAT(m, StatusIs(absl::StatusCode::kInvalidArgument)) << field;
    EXPECT_THAT(m.status().message(), HasSubstr(field));
  };
  XGBoostOptions o;
  o.max_depth = 0;
  expect_bad(o, "max_depth");
  o = {};
  o.eta = 0.0;
  expect_bad(o, "eta");
  o = {};
  o.rounds = 0;
  expect_bad(o, "rounds");
  o = {};
  o.num_parallel_tree = 0;
  expect_bad(o, "num_parallel_tree");
  o = {};
  o.subsample = 1.5;
  expect_bad(o, "subsample");
  o = {};
  o.colsample_bynode = 0.0;
  expect_bad(o, "colsample_bynode");
  o = {};
  o.lambda = -1.0;
  expect_bad(o, "lambda");
  o = {};
  o.tree_method = "gpu_hist";
  expect_bad(o, "tree_method");
  o = {};
  o.nthread = 0;
  expect_bad(o, "nthread");
}

TEST(XGBoostClassifierTest, RejectsBadDataNamingTheArgument) {
  Data d = Blobs(12, 20, 1.0);
  Matrix bad_shape = d.x;
  bad_shape.data.pop_back();
  EXPECT_THAT(XGBoostClassifier::Fit(bad_shape, d.y).status().message(), HasSubstr("features"));
  Matrix nan = d.x;
  nan.at(3, 1) = std::nan("");
  EXPECT_THAT(XGBoostClassifier::Fit(nan, d.y).status().message(), HasSubstr("features.data"));
  Matrix too_big = d.x;  // finite as a double, +inf as a float
  too_big.at(2, 2) = 1e300;
  auto big = XGBoostClassifier::Fit(too_big, d.y);
  EXPECT_THAT(big, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(big.status().message(), HasSubstr("not finite as a float"));
  std::vector<uint8_t> short_labels(d.y.begin(), d.y.end() - 1);
  EXPECT_THAT(XGBoostClassifier::Fit(d.x, short_labels).status().message(), HasSubstr("labels"));
  std::vector<uint8_t> one_class(d.y.size(), 1);
  EXPECT_THAT(XGBoostClassifier::Fit(d.x, one_class).status().message(), HasSubstr("both classes"));

  auto m = XGBoostClassifier::Fit(d.x, d.y);
  MEMAUDIT_ASSERT_OK(m);
  auto wrong_cols = m->PredictProbability(Matrix(2, 3, 0.0));
  EXPECT_THAT(wrong_cols, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(wrong_cols.status().message(), HasSubstr("features.cols = 3"));
  EXPECT_THAT(m->PredictProbability(nan).status().message(), HasSubstr("features.data"));
}

}  // namespace
}  // namespace memaudit::scoring
