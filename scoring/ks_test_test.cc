#include "scoring/ks_test.h"

#include <cmath>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace memaudit::scoring {
namespace {

TEST(KsTest, HandComputedStatistic) {
  auto uniform = [](double x) { return std::clamp(x, 0.0, 1.0); };
  // Sorted {0.1, 0.4, 0.6, 0.9}: the largest gap is 0.15 (e.g. 1/4 − 0.1).
  auto r = KsTest(std::vector<double>{0.9, 0.1, 0.6, 0.4}, uniform);
  MEMAUDIT_ASSERT_OK(r);
  EXPECT_NEAR(r->statistic, 0.15, 1e-15);
  // One sample at F = 0.3: D = max(1 − 0.3, 0.3) = 0.7.
  EXPECT_NEAR(KsTest(std::vector<double>{0.3}, uniform)->statistic, 0.7, 1e-15);
  EXPECT_FALSE(KsTest({}, uniform).ok());
  EXPECT_FALSE(KsTest(std::vector<double>{NAN}, uniform).ok());
}

TEST(KsTest, KolmogorovSurvivalKnownValues) {
  EXPECT_NEAR(KolmogorovSurvival(1.0), 0.26999967167735456, 1e-12);
  EXPECT_NEAR(KolmogorovSurvival(1.358), 0.05, 2e-4);  // the classic 5% point
  EXPECT_DOUBLE_EQ(KolmogorovSurvival(0.0), 1.0);
  EXPECT_NEAR(KolmogorovSurvival(3.0), 2 * std::exp(-18.0), 1e-15);
}

TEST(KsTest, PValueUsesStephensCorrection) {
  auto uniform = [](double x) { return std::clamp(x, 0.0, 1.0); };
  auto r = KsTest(std::vector<double>{0.9, 0.1, 0.6, 0.4}, uniform);
  const double lambda = (2.0 + 0.12 + 0.11 / 2.0) * 0.15;
  EXPECT_NEAR(r->p_value, KolmogorovSurvival(lambda), 1e-15);
  EXPECT_GT(r->p_value, 0.99);
}

}  // namespace
}  // namespace memaudit::scoring
