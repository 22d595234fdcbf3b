#include "scoring/attack_classifier.h"

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scoring/roc.h"
#include "scoring/test_blobs.h"

namespace memaudit::scoring {
namespace {

using ::memaudit::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

using Data = LabeledBlobs;

Data Blobs(uint64_t seed, size_t n, double shift) { return scoring::Blobs(seed, n, shift, 3); }

std::unique_ptr<AttackClassifier> Make(const std::string& name) {
  auto c = MakeAttackClassifier(name);
  MEMAUDIT_EXPECT_OK(c);
  return c.ok() ? *std::move(c) : nullptr;
}

TEST(AttackClassifierTest, FactoryNames) {
  EXPECT_THAT(AttackClassifierNames(),
              ElementsAre("gradient_boosting", "random_forest", "logistic_regression"));
  for (const std::string& name : AttackClassifierNames()) {
    auto c = Make(name);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->name(), name);
  }
}

TEST(AttackClassifierTest, UnknownNameIsNamed) {
  auto c = MakeAttackClassifier("svm");
  EXPECT_THAT(c, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(c.status().message(), HasSubstr("\"svm\""));
  EXPECT_THAT(c.status().message(), HasSubstr("random_forest"));
}

TEST(AttackClassifierTest, InvalidOptionsNameTheClassifierAndField) {
  AttackClassifierOptions o;
  o.random_forest.subsample = 0.0;
  auto c = MakeAttackClassifier("random_forest", o);
  EXPECT_THAT(c, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(c.status().message(), HasSubstr("random_forest"));
  EXPECT_THAT(c.status().message(), HasSubstr("subsample"));
  MEMAUDIT_EXPECT_OK(MakeAttackClassifier("gradient_boosting", o));  // other entries unused
}

class AllClassifiersTest : public ::testing::TestWithParam<std::string> {};

TEST_P(AllClassifiersTest, SeparableDataGivesHighAuc) {
  const Data train = Blobs(21, 400, 5.0), test = Blobs(22, 400, 5.0);
  auto c = Make(GetParam());
  ASSERT_NE(c, nullptr);
  MEMAUDIT_ASSERT_OK(c->Fit(train.x, train.y));
  auto p = c->PredictProbability(test.x);
  MEMAUDIT_ASSERT_OK(p);
  ASSERT_EQ(p->size(), test.y.size());
  for (double v : *p) {
    EXPECT_GE(v, 0.0);
    EXPECT_LE(v, 1.0);
  }
  EXPECT_GT(*Auc(*p, test.y), 0.95);
}

TEST_P(AllClassifiersTest, NoiseLabelsGiveChanceAuc) {
  // Labels independent of the features: the AUC on fresh rows has standard
  // deviation ≈ sqrt((n + 1) / (3n²)) ≈ 0.013 for n = 2000, so ±0.1 is ~8σ.
  const Data train = Blobs(23, 600, 0.0), test = Blobs(24, 2000, 0.0);
  auto c = Make(GetParam());
  ASSERT_NE(c, nullptr);
  MEMAUDIT_ASSERT_OK(c->Fit(train.x, train.y));
  EXPECT_NEAR(*Auc(*c->PredictProbability(test.x), test.y), 0.5, 0.1);
}

TEST_P(AllClassifiersTest, TwoFitsGiveIdenticalPredictions) {
  const Data train = Blobs(25, 300, 1.0), test = Blobs(26, 200, 1.0);
  auto a = Make(GetParam()), b = Make(GetParam());
  MEMAUDIT_ASSERT_OK(a->Fit(train.x, train.y));
  MEMAUDIT_ASSERT_OK(b->Fit(train.x, train.y));
  const std::vector<double> pa = *a->PredictProbability(test.x);
  EXPECT_EQ(pa, *b->PredictProbability(test.x));
  // Refitting the same object on other data, then on the original, is also
  // bit-identical.
  const Data other = Blobs(27, 300, 2.0);
  MEMAUDIT_ASSERT_OK(a->Fit(other.x, other.y));
  MEMAUDIT_ASSERT_OK(a->Fit(train.x, train.y));
  EXPECT_EQ(pa, *a->PredictProbability(test.x));
}

TEST_P(AllClassifiersTest, ErrorsNameTheArgument) {
  const Data d = Blobs(28, 40, 1.0);
  auto c = Make(GetParam());
  ASSERT_NE(c, nullptr);
  auto before = c->PredictProbability(d.x);
  EXPECT_THAT(before, StatusIs(absl::StatusCode::kFailedPrecondition));

  auto expect_bad = [&](const Matrix& x, const std::vector<uint8_t>& y, const char* needle) {
    absl::Status s = c->Fit(x, y);
    EXPECT_THAT(s, StatusIs(absl::StatusCode::kInvalidArgument)) << needle;
    EXPECT_THAT(s.message(), HasSubstr(needle));
  };
  Matrix bad_shape = d.x;
  bad_shape.rows += 1;
  expect_bad(bad_shape, d.y, "features: data.size()");
  Matrix nan = d.x;
  nan.at(5, 0) = std::nan("");
  expect_bad(nan, d.y, "features.data[15]");
  Matrix inf = d.x;
  inf.at(0, 2) = INFINITY;
  expect_bad(inf, d.y, "features.data[2]");
  expect_bad(Matrix(d.x.rows, 0), d.y, "features cols");
  expect_bad(Matrix(0, 3), {}, "features rows");
  std::vector<uint8_t> long_labels = d.y;
  long_labels.push_back(0);
  expect_bad(d.x, long_labels, "labels");
  std::vector<uint8_t> not_binary = d.y;
  not_binary[4] = 2;
  expect_bad(d.x, not_binary, "labels[4]");
  expect_bad(d.x, std::vector<uint8_t>(d.y.size(), 0), "labels must contain both classes");
  // A failed fit leaves the classifier unfitted.
  EXPECT_THAT(c->PredictProbability(d.x), StatusIs(absl::StatusCode::kFailedPrecondition));

  MEMAUDIT_ASSERT_OK(c->Fit(d.x, d.y));
  auto wrong_cols = c->PredictProbability(Matrix(2, 4, 0.0));
  EXPECT_THAT(wrong_cols, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(wrong_cols.status().message(), HasSubstr("features.cols = 4"));
  auto predict_nan = c->PredictProbability(nan);
  EXPECT_THAT(predict_nan, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(predict_nan.status().message(), HasSubstr("features.data[15]"));
}

INSTANTIATE_TEST_SUITE_P(Names, AllClassifiersTest,
                         ::testing::Values("gradient_boosting", "random_forest",
                                           "logistic_regression"),
                         [](const auto& info) { return info.param; });

TEST(AttackClassifierTest, RandomForestDiffersFromBoosting) {
  const Data train = Blobs(29, 300, 1.0), test = Blobs(30, 200, 1.0);
  auto gb = Make("gradient_boosting"), rf = Make("random_forest");
  MEMAUDIT_ASSERT_OK(gb->Fit(train.x, train.y));
  MEMAUDIT_ASSERT_OK(rf->Fit(train.x, train.y));
  EXPECT_NE(*gb->PredictProbability(test.x), *rf->PredictProbability(test.x));
}

TEST(AttackClassifierTest, LogisticRegressionWrapsTheExistingModel) {
  const Data train = Blobs(31, 200, 1.0), test = Blobs(32, 50, 1.0);
  AttackClassifierOptions o;
  o.logistic_regression.l2 = 0.25;
  auto c = MakeAttackClassifier("logistic_regression", o);
  MEMAUDIT_ASSERT_OK(c);
  MEMAUDIT_ASSERT_OK((*c)->Fit(train.x, train.y));
  auto direct = LogisticRegression::Fit(train.x, train.y, o.logistic_regression);
  MEMAUDIT_ASSERT_OK(direct);
  EXPECT_EQ(*(*c)->PredictProbability(test.x), *direct->PredictProbability(test.x));
}

}  // namespace
}  // namespace memaudit::scoring
