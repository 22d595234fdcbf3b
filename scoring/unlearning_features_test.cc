#include "scoring/unlearning_features.h"

#include <cmath>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace memaudit::scoring {
namespace {

using V = std::vector<double>;
// p_o sorted descending is classes (1, 2, 0); p_u follows that permutation.
const V kPo = {0.25, 0.5, 0.25};
const V kPu = {0.125, 0.375, 0.5};

V Features(UnlearningFeature k) { return *UnlearningFeatures(kPo, kPu, k); }

TEST(UnlearningFeaturesTest, AllKindsHandComputed) {
  EXPECT_EQ(Features(UnlearningFeature::kDirectConcat), (V{0.25, 0.5, 0.25, 0.125, 0.375, 0.5}));
  // Tie between classes 0 and 2 keeps class order: permutation (1, 0, 2).
  EXPECT_EQ(Features(UnlearningFeature::kSortedConcat), (V{0.5, 0.25, 0.25, 0.375, 0.125, 0.5}));
  EXPECT_EQ(Features(UnlearningFeature::kDirectDiff), (V{0.125, 0.125, -0.25}));
  EXPECT_EQ(Features(UnlearningFeature::kSortedDiff), (V{0.125, 0.125, -0.25}));
  EXPECT_NEAR(Features(UnlearningFeature::kEucDist)[0], std::sqrt(0.09375), 1e-15);
  EXPECT_EQ(Features(UnlearningFeature::kOriginalOnly), kPo);
}

TEST(UnlearningFeaturesTest, SortedDiffIsAPermutationOfDirectDiff) {
  const V po = {0.1, 0.7, 0.2}, pu = {0.3, 0.4, 0.3};
  // Order by p_o: (1, 2, 0); p_u is NOT re-sorted by its own values.
  EXPECT_EQ(*UnlearningFeatures(po, pu, UnlearningFeature::kSortedConcat),
            (V{0.7, 0.2, 0.1, 0.4, 0.3, 0.3}));
  auto sd = *UnlearningFeatures(po, pu, UnlearningFeature::kSortedDiff);
  EXPECT_NEAR(sd[0], 0.3, 1e-15);
  EXPECT_NEAR(sd[1], -0.1, 1e-15);
  EXPECT_NEAR(sd[2], -0.2, 1e-15);
}

TEST(UnlearningFeaturesTest, MatrixRowWise) {
  Matrix po(2, 2, {0.9, 0.1, 0.2, 0.8});
  Matrix pu(2, 2, {0.6, 0.4, 0.2, 0.8});
  auto m = UnlearningFeatureMatrix(po, pu, UnlearningFeature::kEucDist);
  MEMAUDIT_ASSERT_OK(m);
  EXPECT_EQ(m->rows, 2u);
  EXPECT_EQ(m->cols, 1u);
  EXPECT_NEAR(m->at(0, 0), std::sqrt(0.18), 1e-15);
  EXPECT_EQ(m->at(1, 0), 0.0);
  EXPECT_EQ(UnlearningFeatureMatrix(po, pu, UnlearningFeature::kSortedConcat)->cols, 4u);
}

TEST(UnlearningFeaturesTest, RejectsBadInput) {
  EXPECT_FALSE(UnlearningFeatures(V{0.5}, V{0.5, 0.5}, UnlearningFeature::kDirectDiff).ok());
  EXPECT_FALSE(UnlearningFeatures(V{}, V{}, UnlearningFeature::kDirectDiff).ok());
  EXPECT_FALSE(UnlearningFeatures(V{NAN}, V{0.5}, UnlearningFeature::kEucDist).ok());
  EXPECT_FALSE(
      UnlearningFeatureMatrix(Matrix(1, 2), Matrix(2, 2), UnlearningFeature::kEucDist).ok());
  EXPECT_FALSE(
      UnlearningFeatureMatrix(Matrix(0, 2), Matrix(0, 2), UnlearningFeature::kEucDist).ok());
}

}  // namespace
}  // namespace memaudit::scoring
