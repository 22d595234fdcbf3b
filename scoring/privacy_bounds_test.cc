#include "scoring/privacy_bounds.h"

#include <cmath>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace memaudit::scoring {
namespace {

OperatingPoint Op(size_t tp, size_t pos, size_t fp, size_t neg) {
  OperatingPoint op;
  op.true_positives = tp;
  op.positives = pos;
  op.false_positives = fp;
  op.negatives = neg;
  op.tpr = static_cast<double>(tp) / pos;
  op.fpr = static_cast<double>(fp) / neg;
  return op;
}

TEST(EpsilonTest, PointAndIntervalBound) {
  auto e = EpsilonLowerBound(Op(90, 100, 2, 100));
  MEMAUDIT_ASSERT_OK(e);
  EXPECT_NEAR(e->point, std::log(0.9 / 0.02), 1e-12);
  EXPECT_FALSE(e->fpr_zero);
  EXPECT_DOUBLE_EQ(e->clamped, e->point);
  // Clopper–Pearson: TPR_lo(90/100) = 0.82378, FPR_hi(2/100) = 0.07038 (mpmath).
  EXPECT_NEAR(e->tpr_ci.lo, 0.823777402259977320, 1e-10);
  EXPECT_NEAR(e->fpr_ci.hi, 0.070383932471070119, 1e-10);
  EXPECT_NEAR(e->lower, 2.45993534535583573, 1e-9);
}

TEST(EpsilonTest, ZeroFalsePositivesIsFlaggedInfinite) {
  auto e = EpsilonLowerBound(Op(90, 100, 0, 100));
  MEMAUDIT_ASSERT_OK(e);
  EXPECT_TRUE(e->fpr_zero);
  EXPECT_TRUE(std::isinf(e->point));
  EXPECT_NEAR(e->clamped, std::log(0.9 / 0.01), 1e-12);  // FPR clamped to 1/|OUT|
  EXPECT_NEAR(e->lower, 3.12438021518372158, 1e-9);      // FPR_hi = 1 − 0.025^{1/100}
  EXPECT_TRUE(std::isfinite(e->lower));
}

TEST(EpsilonTest, NoAdvantageGivesZero) {
  for (auto op : {Op(1, 10, 3, 10), Op(2, 10, 2, 10), Op(0, 10, 0, 10)}) {
    auto e = EpsilonLowerBound(op);
    MEMAUDIT_ASSERT_OK(e);
    EXPECT_EQ(e->point, 0.0);
    EXPECT_EQ(e->clamped, 0.0);
    EXPECT_EQ(e->lower, 0.0);
    EXPECT_FALSE(e->fpr_zero);
  }
  // Small samples: a point estimate of ln(3.75) but no interval evidence.
  auto small = EpsilonLowerBound(Op(3, 4, 1, 5));
  EXPECT_NEAR(small->point, std::log(3.75), 1e-12);
  EXPECT_EQ(small->lower, 0.0);  // TPR_lo 0.194 < FPR_hi 0.716
}

TEST(EpsilonTest, RejectsInconsistentCounts) {
  EXPECT_FALSE(EpsilonLowerBound(Op(1, 0, 0, 1)).ok());
  EXPECT_FALSE(EpsilonLowerBound(Op(3, 2, 0, 1)).ok());
  EXPECT_FALSE(EpsilonLowerBound(Op(1, 2, 0, 1), 1.5).ok());
}

TEST(PrecisionTest, AtThresholdAndOperatingPoint) {
  // Members 10, 9, 7, 5; non-members 8, 6, 4, 3, 2.
  const std::vector<double> s = {10, 8, 9, 6, 7, 4, 5, 3, 2};
  const std::vector<uint8_t> m = {1, 0, 1, 0, 1, 0, 1, 0, 0};
  auto p = PrecisionAtThreshold(s, m, 7.0);  // predicted: 10, 9, 8, 7
  MEMAUDIT_ASSERT_OK(p);
  EXPECT_TRUE(p->defined);
  EXPECT_DOUBLE_EQ(p->precision, 0.75);
  auto none = PrecisionAtThreshold(s, m, 11.0);
  EXPECT_FALSE(none->defined);
  EXPECT_EQ(none->precision, 0.0);
  auto op = TprAtFpr(s, m, 0.2);
  EXPECT_DOUBLE_EQ(PrecisionAt(*op).precision, 0.75);
  EXPECT_FALSE(PrecisionAtThreshold(s, m, NAN).ok());
}

}  // namespace
}  // namespace memaudit::scoring
