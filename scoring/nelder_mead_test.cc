#include "scoring/nelder_mead.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace memaudit::scoring {
namespace {

TEST(NelderMeadTest, FindsTheMinimumOfAQuadratic) {
  auto f = [](const std::vector<double>& x) {
    return (x[0] - 3) * (x[0] - 3) + 10 * (x[1] + 1) * (x[1] + 1) + 7;
  };
  auto r = NelderMead(f, {0.0, 0.0}, {1.0, 1.0});
  EXPECT_TRUE(r.converged);
  EXPECT_NEAR(r.x[0], 3.0, 1e-4);
  EXPECT_NEAR(r.x[1], -1.0, 1e-4);
  EXPECT_NEAR(r.value, 7.0, 1e-9);
}

TEST(NelderMeadTest, RosenbrockAndInfeasibleRegion) {
  auto f = [](const std::vector<double>& x) {
    if (x[0] < -1.5) return std::numeric_limits<double>::infinity();
    return 100 * std::pow(x[1] - x[0] * x[0], 2) + std::pow(1 - x[0], 2);
  };
  NelderMeadOptions o;
  o.max_evaluations = 20000;
  auto r = NelderMead(f, {-1.2, 1.0}, {0.5, 0.5}, o);
  EXPECT_NEAR(r.x[0], 1.0, 1e-3);
  EXPECT_NEAR(r.x[1], 1.0, 2e-3);
}

TEST(NelderMeadTest, StopsAtTheEvaluationBudget) {
  auto f = [](const std::vector<double>& x) { return x[0]; };  // unbounded below
  NelderMeadOptions o;
  o.max_evaluations = 50;
  auto r = NelderMead(f, {0.0}, {1.0}, o);
  EXPECT_FALSE(r.converged);
  EXPECT_LE(r.evaluations, 52u);
}

}  // namespace
}  // namespace memaudit::scoring
