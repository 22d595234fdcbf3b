#include "scoring/logistic_regression.h"

#include <cmath>
#include <random>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace memaudit::scoring {
namespace {

double Sigma(double t) { return 1.0 / (1.0 + std::exp(-t)); }

TEST(LogisticRegressionTest, SymmetricHandCase) {
  // x = {−1, +1}, y = {0, 1}, l2 = 1: by symmetry b = 0 and the optimum of
  // 2·log(1 + e^{−w}) + w²/2 solves w = 2σ(−w).
  LogisticRegressionOptions o;
  o.standardize = false;
  auto m = LogisticRegression::Fit(Matrix(2, 1, {-1.0, 1.0}), std::vector<uint8_t>{0, 1}, o);
  MEMAUDIT_ASSERT_OK(m);
  double lo = 0.0, hi = 2.0;  // bisection on w − 2σ(−w), increasing in w
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (mid - 2.0 * Sigma(-mid) > 0 ? hi : lo) = mid;
  }
  EXPECT_NEAR(m->weights()[0], lo, 1e-10);
  EXPECT_NEAR(m->intercept(), 0.0, 1e-12);
  EXPECT_TRUE(m->converged());
}

struct Data {
  Matrix x;
  std::vector<uint8_t> y;
};

Data Random(uint64_t seed, size_t n) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g;
  Data d{Matrix(n, 3), std::vector<uint8_t>(n)};
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < 3; ++j) d.x.at(i, j) = g(rng) * (j + 1) + j;
    const double t = 0.8 * d.x.at(i, 0) - 0.5 * d.x.at(i, 1) + 0.3;
    d.y[i] = std::uniform_real_distribution<double>(0, 1)(rng) < Sigma(t) ? 1 : 0;
  }
  return d;
}

TEST(LogisticRegressionTest, GradientVanishesAtTheSolution) {
  const Data d = Random(3, 300);
  LogisticRegressionOptions o;
  o.standardize = false;
  o.l2 = 0.5;
  auto m = LogisticRegression::Fit(d.x, d.y, o);
  MEMAUDIT_ASSERT_OK(m);
  // ∂/∂b = Σ (p − y); ∂/∂w_j = Σ (p − y) x_j + l2·w_j, computed here directly.
  auto p = *m->PredictProbability(d.x);
  double gb = 0.0, gw[3] = {0, 0, 0};
  for (size_t i = 0; i < d.y.size(); ++i) {
    gb += p[i] - d.y[i];
    for (int j = 0; j < 3; ++j) gw[j] += (p[i] - d.y[i]) * d.x.at(i, j);
  }
  EXPECT_NEAR(gb, 0.0, 1e-8);
  for (int j = 0; j < 3; ++j) EXPECT_NEAR(gw[j] + 0.5 * m->weights()[j], 0.0, 1e-8);
  EXPECT_GT(m->weights()[0], 0.3);  // recovers the sign of the truth
  EXPECT_LT(m->weights()[1], -0.1);
}

TEST(LogisticRegressionTest, StandardizedFitIgnoresAffineRescaling) {
  const Data d = Random(4, 200);
  Matrix scaled = d.x;
  for (auto& v : scaled.data) v = 10.0 * v + 3.0;
  auto a = LogisticRegression::Fit(d.x, d.y);
  auto b = LogisticRegression::Fit(scaled, d.y);
  MEMAUDIT_ASSERT_OK(a);
  MEMAUDIT_ASSERT_OK(b);
  auto pa = *a->PredictProbability(d.x), pb = *b->PredictProbability(scaled);
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_NEAR(pa[i], pb[i], 1e-9);
}

TEST(LogisticRegressionTest, SeparableDataStaysFiniteAndIsDeterministic) {
  Matrix x(4, 1, {-2.0, -1.0, 1.0, 2.0});
  std::vector<uint8_t> y = {0, 0, 1, 1};
  auto a = LogisticRegression::Fit(x, y);
  auto b = LogisticRegression::Fit(x, y);
  MEMAUDIT_ASSERT_OK(a);
  EXPECT_TRUE(std::isfinite(a->weights()[0]));
  EXPECT_TRUE(a->converged());
  EXPECT_EQ(a->weights(), b->weights());
  EXPECT_EQ(a->intercept(), b->intercept());
  auto p = *a->PredictProbability(x);
  EXPECT_LT(p[0], 0.5);
  EXPECT_GT(p[3], 0.5);
}

TEST(LogisticRegressionTest, RejectsBadInput) {
  Matrix x(2, 1, {0.0, 1.0});
  EXPECT_FALSE(LogisticRegression::Fit(x, std::vector<uint8_t>{1, 1}).ok());
  EXPECT_FALSE(LogisticRegression::Fit(x, std::vector<uint8_t>{1}).ok());
  EXPECT_FALSE(LogisticRegression::Fit(x, std::vector<uint8_t>{1, 2}).ok());
  EXPECT_FALSE(LogisticRegression::Fit(Matrix(2, 1, {0.0, NAN}), std::vector<uint8_t>{0, 1}).ok());
  LogisticRegressionOptions neg;
  neg.l2 = -1;
  EXPECT_FALSE(LogisticRegression::Fit(x, std::vector<uint8_t>{0, 1}, neg).ok());
  auto m = LogisticRegression::Fit(x, std::vector<uint8_t>{0, 1});
  MEMAUDIT_ASSERT_OK(m);
  EXPECT_FALSE(m->PredictProbability(Matrix(1, 2)).ok());
}

}  // namespace
}  // namespace memaudit::scoring
