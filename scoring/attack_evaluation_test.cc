#include "scoring/attack_evaluation.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scoring/roc.h"
#include "scoring/unlearning_features.h"

namespace memaudit::scoring {
namespace {

using ::memaudit::testing::StatusIs;
using ::testing::HasSubstr;

struct Side {
  Matrix features;
  std::vector<uint8_t> labels;
};

// A toy version of the unlearning attack on 3-class posteriors: p_o is a
// random softmax; for a deleted sample (label 1) the unlearned model's
// confidence in the top class drops by `drop`, for a sample in neither
// model (label 0) p_u is p_o plus small noise. Features: SortedDiff.
Side UnlearningSide(uint64_t seed, size_t n, double drop) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g;
  Matrix po(n, 3), pu(n, 3);
  std::vector<uint8_t> labels(n);
  for (size_t i = 0; i < n; ++i) {
    labels[i] = i % 2;
    double z[3], zu[3], s = 0.0, su = 0.0;
    size_t top = 0;
    for (size_t c = 0; c < 3; ++c) {
      z[c] = 2.0 * g(rng);
      if (z[c] > z[top]) top = c;
    }
    for (size_t c = 0; c < 3; ++c) {
      zu[c] = z[c] + 0.05 * g(rng) - (labels[i] == 1 && c == top ? drop : 0.0);
      s += std::exp(z[c]);
      su += std::exp(zu[c]);
    }
    for (size_t c = 0; c < 3; ++c) {
      po.at(i, c) = std::exp(z[c]) / s;
      pu.at(i, c) = std::exp(zu[c]) / su;
    }
  }
  auto f = UnlearningFeatureMatrix(po, pu, UnlearningFeature::kSortedDiff);
  MEMAUDIT_EXPECT_OK(f);
  return Side{*std::move(f), std::move(labels)};
}

class EvaluateAttackTest : public ::testing::TestWithParam<std::string> {};

TEST_P(EvaluateAttackTest, DetectsDeletionFromShadowTraining) {
  const Side shadow = UnlearningSide(41, 400, 1.5), target = UnlearningSide(42, 400, 1.5);
  auto e =
      EvaluateAttack(GetParam(), shadow.features, shadow.labels, target.features, target.labels);
  MEMAUDIT_ASSERT_OK(e);
  ASSERT_EQ(e->target_probabilities.size(), target.labels.size());
  EXPECT_EQ(e->auc, *Auc(e->target_probabilities, target.labels));
  EXPECT_GT(e->auc, 0.95);
}

TEST_P(EvaluateAttackTest, NoSignalGivesChance) {
  const Side shadow = UnlearningSide(43, 600, 0.0), target = UnlearningSide(44, 2000, 0.0);
  auto e =
      EvaluateAttack(GetParam(), shadow.features, shadow.labels, target.features, target.labels);
  MEMAUDIT_ASSERT_OK(e);
  EXPECT_NEAR(e->auc, 0.5, 0.1);
}

TEST_P(EvaluateAttackTest, IsDeterministic) {
  const Side shadow = UnlearningSide(45, 300, 0.3), target = UnlearningSide(46, 300, 0.3);
  auto a =
      EvaluateAttack(GetParam(), shadow.features, shadow.labels, target.features, target.labels);
  auto b =
      EvaluateAttack(GetParam(), shadow.features, shadow.labels, target.features, target.labels);
  MEMAUDIT_ASSERT_OK(a);
  MEMAUDIT_ASSERT_OK(b);
  EXPECT_EQ(a->target_probabilities, b->target_probabilities);
  EXPECT_EQ(a->auc, b->auc);
}

INSTANTIATE_TEST_SUITE_P(Names, EvaluateAttackTest,
                         ::testing::Values("gradient_boosting", "random_forest",
                                           "logistic_regression"),
                         [](const auto& info) { return info.param; });

TEST(EvaluateAttackErrorsTest, NameTheArgument) {
  const Side shadow = UnlearningSide(47, 40, 1.0), target = UnlearningSide(48, 40, 1.0);
  auto expect_bad = [](const absl::StatusOr<AttackEvaluation>& e, const char* needle) {
    EXPECT_THAT(e, StatusIs(absl::StatusCode::kInvalidArgument)) << needle;
    EXPECT_THAT(e.status().message(), HasSubstr(needle));
  };
  Matrix nan = target.features;
  nan.at(1, 1) = std::nan("");
  expect_bad(EvaluateAttack("random_forest", shadow.features, shadow.labels, nan, target.labels),
             "target_features.data[4]");
  Matrix bad_shape = shadow.features;
  bad_shape.data.push_back(0.0);
  expect_bad(
      EvaluateAttack("random_forest", bad_shape, shadow.labels, target.features, target.labels),
      "shadow_features: data.size()");
  std::vector<uint8_t> short_labels(shadow.labels.begin(), shadow.labels.end() - 1);
  expect_bad(EvaluateAttack("gradient_boosting", shadow.features, short_labels, target.features,
                            target.labels),
             "shadow_labels");
  expect_bad(EvaluateAttack("gradient_boosting", shadow.features, shadow.labels, target.features,
                            std::vector<uint8_t>(target.labels.size(), 1)),
             "target_labels must contain both classes");
  expect_bad(EvaluateAttack("logistic_regression", shadow.features, shadow.labels,
                            Matrix(target.features.rows, 2, 0.0), target.labels),
             "target_features.cols = 2 must equal shadow_features.cols = 3");
  expect_bad(EvaluateAttack("mlp", shadow.features, shadow.labels, target.features, target.labels),
             "\"mlp\"");
}

TEST(EvaluateAttackErrorsTest, ReusesAGivenClassifier) {
  const Side shadow = UnlearningSide(49, 200, 1.5), target = UnlearningSide(50, 200, 1.5);
  auto c = MakeAttackClassifier("random_forest");
  MEMAUDIT_ASSERT_OK(c);
  auto e = EvaluateAttack(**c, shadow.features, shadow.labels, target.features, target.labels);
  MEMAUDIT_ASSERT_OK(e);
  // The classifier stays fitted on the shadow rows.
  EXPECT_EQ(*(*c)->PredictProbability(target.features), e->target_probabilities);
}

}  // namespace
}  // namespace memaudit::scoring
