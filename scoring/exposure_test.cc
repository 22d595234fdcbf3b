#include "scoring/exposure.h"

#include <cmath>
#include <limits>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace memaudit::scoring {
namespace {

using ::memaudit::testing::StatusIs;

std::vector<double> OneToSixteen() {
  std::vector<double> v;
  for (int i = 1; i <= 16; ++i) v.push_back(i);
  return v;
}

TEST(SampledExposureTest, PinnedVectors) {
  const std::vector<double> refs = OneToSixteen();
  auto below_all = SampledExposure(refs, 0.0);  // no reference lower: "≥ 4"
  MEMAUDIT_ASSERT_OK(below_all);
  EXPECT_DOUBLE_EQ(below_all->exposure, 4.0);
  EXPECT_EQ(below_all->rank, 1u);
  EXPECT_TRUE(below_all->lower_bound);
  EXPECT_DOUBLE_EQ(below_all->log2_space, 4.0);

  auto mid = SampledExposure(refs, 3.5);  // 3 lower → rank 4
  EXPECT_DOUBLE_EQ(mid->exposure, 2.0);
  EXPECT_EQ(mid->rank, 4u);
  EXPECT_FALSE(mid->lower_bound);

  auto tie = SampledExposure(refs, 1.0);  // the tie counts against the secret
  EXPECT_DOUBLE_EQ(tie->exposure, 3.0);
  EXPECT_EQ(tie->rank, 2u);
  EXPECT_FALSE(tie->lower_bound);

  auto above_all = SampledExposure(refs, 20.0);  // rank 17
  EXPECT_NEAR(above_all->exposure, -0.0875, 5e-5);
  EXPECT_DOUBLE_EQ(above_all->exposure, 4.0 - std::log2(17.0));
}

// The interval: Clopper-Pearson on |{s <= secret}| of |S| (computed
// independently by bisection on the binomial CDF), through -log2.
TEST(SampledExposureTest, IntervalFromTheClopperPearsonFraction) {
  const std::vector<double> refs = OneToSixteen();
  auto mid = SampledExposure(refs, 3.5);  // 3 of 16: p in [0.040474, 0.456457]
  MEMAUDIT_ASSERT_OK(mid);
  EXPECT_NEAR(mid->low, 1.1314506, 1e-6);
  EXPECT_NEAR(mid->high, 4.6268702, 1e-6);
  auto below_all = SampledExposure(refs, 0.0);  // 0 of 16: p in [0, 0.205907]
  EXPECT_NEAR(below_all->low, 2.2799337, 1e-6);
  EXPECT_EQ(below_all->high, std::numeric_limits<double>::infinity());
  // 16 of 16: p in [0.794093, 1]; the interval still holds the estimate,
  // which dips just below 0.
  auto above_all = SampledExposure(refs, 20.0);
  EXPECT_EQ(above_all->low, above_all->exposure);
  EXPECT_NEAR(above_all->high, 0.3326205, 1e-6);
  for (double secret : {0.5, 1.0, 2.5, 7.0, 15.5}) {
    auto e = SampledExposure(refs, secret);
    EXPECT_LE(e->low, e->exposure) << secret;
    EXPECT_GE(e->high, e->exposure) << secret;
  }
}

TEST(ExactExposureTest, CanaryCountsItselfAndTiesCountAgainstIt) {
  // Space of 8 with the canary (index 2, Px 1.0) tied with one other.
  const std::vector<double> space = {5, 1.0, 1.0, 7, 3, 9, 2, 4};
  auto e = ExactExposure(space, 2);
  MEMAUDIT_ASSERT_OK(e);
  EXPECT_EQ(e->rank, 2u);
  EXPECT_DOUBLE_EQ(e->log2_space, 3.0);
  EXPECT_DOUBLE_EQ(e->exposure, 2.0);
  // Most likely candidate: rank 1, exposure log2|R|.
  EXPECT_DOUBLE_EQ(ExactExposure(space, 6)->exposure, 3.0 - std::log2(3.0));
  EXPECT_DOUBLE_EQ(ExactExposure(std::vector<double>{0.5, 2, 3, 4}, 0)->exposure, 2.0);
  // Least likely: rank |R|, exposure 0.
  EXPECT_DOUBLE_EQ(ExactExposure(space, 5)->exposure, 0.0);
}

TEST(ExposureFromRankTest, HugeSpace) {
  auto e = ExposureFromRank(9.0 * std::log2(10.0), 1000);
  MEMAUDIT_ASSERT_OK(e);
  EXPECT_NEAR(e->exposure, 6.0 * std::log2(10.0), 1e-12);
  EXPECT_FALSE(ExposureFromRank(3.0, 0).ok());
  EXPECT_FALSE(ExposureFromRank(3.0, 9).ok());
  MEMAUDIT_EXPECT_OK(ExposureFromRank(3.0, 8));
  EXPECT_FALSE(ExposureFromRank(NAN, 1).ok());
}

TEST(CalibrationTest, SubtractsMeanReferencePxPerCandidate) {
  Matrix refs(2, 3,
              {1.0, 10.0, 4.0,  //
               3.0, 20.0, 4.0});
  auto cal = CalibrateByReferenceMean(std::vector<double>{5.0, 12.0, 1.0}, refs);
  MEMAUDIT_ASSERT_OK(cal);
  EXPECT_EQ(*cal, (std::vector<double>{3.0, -3.0, -3.0}));
  EXPECT_FALSE(CalibrateByReferenceMean(std::vector<double>{1.0}, refs).ok());
  EXPECT_FALSE(CalibrateByReferenceMean(std::vector<double>{1.0}, Matrix(0, 1)).ok());
}

TEST(CalibrationTest, ExactCalibratedRanksEveryCandidateCalibrated) {
  // |R| = 4. Target Px {10, 12, 9, 20}; reference means {9, 15, 8, 11};
  // calibrated Px' {1, -3, 1, 9}.
  Matrix refs(2, 4,
              {8.0, 14.0, 9.0, 10.0,  //
               10.0, 16.0, 7.0, 12.0});
  const std::vector<double> target = {10.0, 12.0, 9.0, 20.0};
  auto x = CalibratedExactExposure(target, refs, std::vector<uint64_t>{1, 0, 2, 3});
  MEMAUDIT_ASSERT_OK(x);
  ASSERT_EQ(x->size(), 4u);
  // Candidate 1: rank 3 uncalibrated (9, 10, 12), but -3 is the lowest Px':
  // rank 1, exposure log2 4 - log2 1 = 2.
  EXPECT_EQ((*x)[0].rank, 1u);
  EXPECT_DOUBLE_EQ((*x)[0].exposure, 2.0);
  EXPECT_DOUBLE_EQ((*x)[0].log2_space, 2.0);
  // Candidates 0 and 2 tie at 1: each counts the other (-3, 1, 1): rank 3.
  EXPECT_EQ((*x)[1].rank, 3u);
  EXPECT_NEAR((*x)[1].exposure, 2.0 - std::log2(3.0), 1e-12);
  EXPECT_EQ((*x)[2].rank, 3u);
  // Candidate 3 at 9, the highest: rank 4, exposure 0.
  EXPECT_EQ((*x)[3].rank, 4u);
  EXPECT_DOUBLE_EQ((*x)[3].exposure, 0.0);
  // The same as ExactExposure on the calibrated values.
  auto calibrated = CalibrateByReferenceMean(target, refs);
  MEMAUDIT_ASSERT_OK(calibrated);
  for (uint64_t i = 0; i < 4; ++i) {
    auto exact = ExactExposure(*calibrated, i);
    auto one = CalibratedExactExposure(target, refs, std::vector<uint64_t>{i});
    MEMAUDIT_ASSERT_OK(exact);
    MEMAUDIT_ASSERT_OK(one);
    EXPECT_EQ((*one)[0].rank, exact->rank) << i;
  }
  EXPECT_FALSE(CalibratedExactExposure(target, refs, std::vector<uint64_t>{4}).ok());
  EXPECT_FALSE(CalibratedExactExposure(std::vector<double>{1.0}, refs, {}).ok());
  EXPECT_FALSE(CalibratedExactExposure({}, Matrix(1, 0), {}).ok());
}

TEST(ExposureValidationTest, RejectsBadInput) {
  EXPECT_THAT(SampledExposure({}, 1.0), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_FALSE(SampledExposure(std::vector<double>{1.0}, NAN).ok());
  EXPECT_FALSE(SampledExposure(std::vector<double>{NAN}, 1.0).ok());
  EXPECT_FALSE(ExactExposure(std::vector<double>{1.0, 2.0}, 2).ok());
  EXPECT_FALSE(ExactExposure({}, 0).ok());
}

}  // namespace
}  // namespace memaudit::scoring
