#include "scoring/normal.h"

#include <cmath>

#include "boost/math/distributions/normal.hpp"
#include "gtest/gtest.h"

namespace memaudit::scoring {
namespace {

TEST(NormalQuantileTest, MatchesTabulatedQuantiles) {
  // Phi^-1(0.975) = 1.959963984540054 (kZ95), Phi^-1(0.95) = 1.644853626951473,
  // Phi^-1(0.995) = 2.575829303548901; symmetric about 0.5.
  EXPECT_NEAR(NormalQuantile(0.975), 1.959963984540054, 1e-12);
  EXPECT_NEAR(NormalQuantile(0.95), 1.644853626951473, 1e-12);
  EXPECT_NEAR(NormalQuantile(0.995), 2.575829303548901, 1e-12);
  EXPECT_NEAR(NormalQuantile(0.025), -1.959963984540054, 1e-12);
  EXPECT_NEAR(NormalQuantile(0.5), 0.0, 1e-15);
}

TEST(LogNormalCdfTest, MatchesBoostAcrossTheRange) {
  const boost::math::normal_distribution<double> n01;
  for (double z = -30.0; z <= 8.0; z += 0.37) {
    const double want = std::log(boost::math::cdf(n01, z));
    EXPECT_NEAR(LogNormalCdf(z), want, 1e-12 * std::max(1.0, std::abs(want))) << z;
  }
}

TEST(LogNormalCdfTest, FarLeftTailIsFiniteAndAccurate) {
  // Φ(-40) underflows double; long double still holds it.
  const boost::math::normal_distribution<long double> n01;
  for (double z : {-30.5, -40.0, -100.0, -1e3}) {
    const double got = LogNormalCdf(z);
    ASSERT_TRUE(std::isfinite(got)) << z;
    if (z > -150) {
      const double want = static_cast<double>(std::log(boost::math::cdf(n01, (long double)z)));
      EXPECT_NEAR(got, want, 1e-12 * std::abs(want)) << z;
    }
  }
  EXPECT_NEAR(LogNormalCdf(-40.0), -804.6084420137538, 1e-9);
}

TEST(LogNormalCdfTest, ContinuousAtTheSeriesSwitch) {
  EXPECT_NEAR(LogNormalCdf(-30.0), LogNormalCdf(std::nextafter(-30.0, -31.0)), 1e-11);
}

TEST(LogNormalCdfTest, Limits) {
  EXPECT_EQ(LogNormalCdf(-INFINITY), -INFINITY);
  EXPECT_EQ(LogNormalCdf(INFINITY), 0.0);
  EXPECT_TRUE(std::isnan(LogNormalCdf(NAN)));
  EXPECT_NEAR(LogNormalCdf(0.0), std::log(0.5), 1e-15);
  // Right tail: log Φ(10) ≈ -Q(10) = -7.6198530241605e-24.
  EXPECT_NEAR(LogNormalCdf(10.0) / -7.6198530241605e-24, 1.0, 1e-10);
}

TEST(LogNormalPdfTest, HandValue) {
  EXPECT_NEAR(LogNormalPdf(1.0, 0.0, 2.0), -0.125 - std::log(2.0) - 0.5 * std::log(2 * M_PI),
              1e-15);
}

}  // namespace
}  // namespace memaudit::scoring
