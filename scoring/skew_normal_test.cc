#include "scoring/skew_normal.h"

#include <cmath>
#include <random>
#include <vector>

#include "boost/math/distributions/skew_normal.hpp"
#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"
#include "scoring/normal.h"

namespace memaudit::scoring {
namespace {

TEST(SkewNormalLogCdfTest, MatchesBoostWhereTheCdfIsRepresentable) {
  for (double shape : {-3.0, 0.0, 0.5, 2.0, 5.0}) {
    const SkewNormalParams p{1.0, 2.0, shape};
    const boost::math::skew_normal_distribution<double> d(1.0, 2.0, shape);
    for (double x = -6.0; x <= 8.0; x += 0.25) {
      const double f = boost::math::cdf(d, x);
      // Owen's-T cancellation makes Boost itself unreliable for tiny F at α > 0.
      if (f < 1e-8) continue;
      EXPECT_NEAR(SkewNormalLogCdf(x, p), std::log(f), 1e-8 * std::max(1.0, -std::log(f)))
          << "shape " << shape << " x " << x;
    }
  }
}

TEST(SkewNormalLogCdfTest, FarLeftTailMatchesHighPrecisionValues) {
  // log F from mpmath at 50 digits (quadrature with breakpoints on the
  // integrand's decay scale; α = −3 at −40 also equals log 2 + log Φ(−40)).
  struct Case {
    double x, xi, omega, alpha, want;
  } cases[] = {
      {-10, 0, 1, 2, -258.05893624079136277},    {-30, 0, 1, 2, -2260.2504313527107721},
      {-40, 0, 1, -3, -803.91529483319613877},   {-5, 0, 1, 5, -334.23579181789172168},
      {20, 100, 5, 2, -648.99502395593240695},   {-2, 0, 1, 2, -14.972721272081709522},
      {-1.5, 0, 1, 0.5, -3.7812452741005967195},
  };
  for (const Case& c : cases) {
    const double got = SkewNormalLogCdf(c.x, {c.xi, c.omega, c.alpha});
    ASSERT_TRUE(std::isfinite(got));
    EXPECT_NEAR(got, c.want, 1e-9 * std::abs(c.want)) << c.x << " " << c.alpha;
  }
  // α = 0 is the normal.
  EXPECT_NEAR(SkewNormalLogCdf(-40.0, {0, 1, 0}), LogNormalCdf(-40.0), 1e-9);
}

TEST(SkewNormalMomentsTest, RecoversTheMomentsOfKnownParameters) {
  // Population moments of SN(ξ=2, ω=3, α=4) reproduce the parameters.
  const double delta = 4.0 / std::sqrt(17.0);
  const double mean = 2.0 + 3.0 * delta * std::sqrt(2.0 / M_PI);
  const double var = 9.0 * (1.0 - 2.0 * delta * delta / M_PI);
  const boost::math::skew_normal_distribution<double> d(2.0, 3.0, 4.0);
  EXPECT_NEAR(boost::math::mean(d), mean, 1e-12);
  EXPECT_NEAR(boost::math::variance(d), var, 1e-12);
  // A three-point sample with zero skewness gives α = 0, ω = sd.
  auto p = SkewNormalMoments(std::vector<double>{-1.0, 0.0, 1.0});
  MEMAUDIT_ASSERT_OK(p);
  EXPECT_NEAR(p->shape, 0.0, 1e-12);
  EXPECT_NEAR(p->scale, std::sqrt(2.0 / 3.0), 1e-12);
  EXPECT_NEAR(p->location, 0.0, 1e-12);
  EXPECT_FALSE(SkewNormalMoments(std::vector<double>{1.0, 1.0, 1.0}).ok());
  EXPECT_FALSE(SkewNormalMoments(std::vector<double>{1.0, 2.0}).ok());
  EXPECT_FALSE(SkewNormalMoments(std::vector<double>{1.0, 2.0, NAN}).ok());
}

std::vector<double> SampleSkewNormal(const SkewNormalParams& p, size_t n, uint64_t seed) {
  // X = ξ + ω (δ|U0| + √(1 − δ²) U1).
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g;
  const double delta = p.shape / std::sqrt(1.0 + p.shape * p.shape);
  std::vector<double> x(n);
  for (auto& v : x) {
    const double u0 = std::abs(g(rng)), u1 = g(rng);
    v = p.location + p.scale * (delta * u0 + std::sqrt(1.0 - delta * delta) * u1);
  }
  return x;
}

double LogLik(const std::vector<double>& x, const SkewNormalParams& p) {
  double s = 0.0;
  for (double v : x) s += SkewNormalLogPdf(v, p);
  return s;
}

TEST(FitSkewNormalTest, RecoversParametersAndBeatsTheStartingPoints) {
  const SkewNormalParams truth{50.0, 8.0, 3.0};
  const std::vector<double> x = SampleSkewNormal(truth, 5000, 11);
  auto fit = FitSkewNormal(x);
  MEMAUDIT_ASSERT_OK(fit);
  EXPECT_NEAR(fit->params.location, 50.0, 0.6);
  EXPECT_NEAR(fit->params.scale, 8.0, 0.5);
  EXPECT_NEAR(fit->params.shape, 3.0, 0.6);
  // The MLE must be at least as likely as the truth and as the moments.
  EXPECT_NEAR(fit->log_likelihood, LogLik(x, fit->params), 1e-6 * std::abs(LogLik(x, truth)));
  EXPECT_GE(fit->log_likelihood, LogLik(x, truth) - 1e-6);
  EXPECT_GE(fit->log_likelihood, LogLik(x, *SkewNormalMoments(x)) - 1e-6);
  // ... and no nearby point beats it (a stationary point in all directions).
  for (int k = 0; k < 3; ++k) {
    for (double h : {-1e-3, 1e-3}) {
      SkewNormalParams q = fit->params;
      (k == 0 ? q.location : k == 1 ? q.scale : q.shape) += h;
      EXPECT_LE(LogLik(x, q), fit->log_likelihood + 1e-6);
    }
  }
  EXPECT_TRUE(fit->converged);
  EXPECT_GT(fit->ks.p_value, 0.01);
  EXPECT_LT(fit->ks.statistic, 0.03);
}

TEST(FitSkewNormalTest, KsRejectsAClearlyWrongShape) {
  // Uniform samples are far from any skew-normal at n = 4000.
  std::vector<double> u(4000);
  for (size_t i = 0; i < u.size(); ++i) u[i] = (i + 0.5) / u.size();
  auto fit = FitSkewNormal(u);
  MEMAUDIT_ASSERT_OK(fit);
  EXPECT_LT(fit->ks.p_value, 1e-3);
}

TEST(ExtrapolatedExposureTest, IsMinusLog2CdfAndFiniteFarInTheTail) {
  const SkewNormalParams p{0.0, 1.0, 2.0};
  EXPECT_NEAR(ExtrapolatedExposure(p, -2.0), 14.972721272081709522 / std::log(2.0), 1e-8);
  const double far = ExtrapolatedExposure(p, -30.0);
  EXPECT_TRUE(std::isfinite(far));
  EXPECT_GT(far, 1000.0);  // well past any log2|R|: "by far the most likely"
  // At the median of the fit exposure is 1 bit.
  const boost::math::skew_normal_distribution<double> d(0.0, 1.0, 2.0);
  EXPECT_NEAR(ExtrapolatedExposure(p, boost::math::quantile(d, 0.5)), 1.0, 1e-9);

  const std::vector<double> refs = SampleSkewNormal({100.0, 10.0, 1.5}, 2000, 3);
  auto r = ExtrapolatedExposureFromReferences(refs, 20.0);
  MEMAUDIT_ASSERT_OK(r);
  EXPECT_NEAR(r->exposure, ExtrapolatedExposure(r->fit.params, 20.0), 1e-12);
  EXPECT_GT(r->exposure, std::log2(2000.0));  // beyond what sampling can show
  EXPECT_FALSE(ExtrapolatedExposureFromReferences(refs, NAN).ok());
}

}  // namespace
}  // namespace memaudit::scoring
