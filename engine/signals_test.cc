#include "engine/signals.h"

#include <cmath>

#include "gtest/gtest.h"

namespace memaudit::engine {
namespace {

TEST(SignalsTest, PhiAndLossMatchHandComputation) {
  torch::Tensor logits = torch::tensor({{1.0, 2.0, 3.0}, {0.0, 0.0, 0.0}});
  torch::Tensor labels = torch::tensor({2, 0});
  torch::Tensor phi = LogitScaledConfidence(logits, labels);
  torch::Tensor loss = CrossEntropyPerExample(logits, labels);
  ASSERT_EQ(phi.scalar_type(), torch::kFloat64);
  // Row 0: 3 - log(e^1 + e^2); row 1: 0 - log 2.
  EXPECT_NEAR(phi[0].item<double>(), 3.0 - std::log(std::exp(1.0) + std::exp(2.0)), 1e-12);
  EXPECT_NEAR(phi[1].item<double>(), -std::log(2.0), 1e-12);
  EXPECT_NEAR(loss[0].item<double>(), std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 3.0,
              1e-12);
  // phi is the log-odds of p_y.
  const double p = std::exp(-loss[0].item<double>());
  EXPECT_NEAR(phi[0].item<double>(), std::log(p / (1 - p)), 1e-9);
}

TEST(SignalsTest, PhiStaysFiniteWhenConfidenceRoundsToOne) {
  torch::Tensor logits = torch::tensor({{100.0, 0.0}});
  torch::Tensor phi = LogitScaledConfidence(logits, torch::tensor({0}));
  EXPECT_NEAR(phi[0].item<double>(), 100.0, 1e-9);
}

}  // namespace
}  // namespace memaudit::engine
