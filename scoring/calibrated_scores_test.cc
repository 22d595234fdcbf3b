#include "scoring/calibrated_scores.h"

#include <cmath>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace memaudit::scoring {
namespace {

TEST(LogitScaledConfidenceTest, EqualsLogOddsOfTheSoftmax) {
  // p = softmax(1, 2, 0.5); φ = log(p_1 / (1 − p_1)) = 2 − log(e^1 + e^0.5).
  auto phi = LogitScaledConfidence(std::vector<double>{1.0, 2.0, 0.5}, 1);
  MEMAUDIT_ASSERT_OK(phi);
  EXPECT_NEAR(*phi, 2.0 - std::log(std::exp(1.0) + std::exp(0.5)), 1e-14);
  // Huge logits do not overflow: two classes give z_y − z_other.
  EXPECT_NEAR(*LogitScaledConfidence(std::vector<double>{1000.0, 1030.0}, 1), 30.0, 1e-12);
  EXPECT_FALSE(LogitScaledConfidence(std::vector<double>{1.0}, 0).ok());
  EXPECT_FALSE(LogitScaledConfidence(std::vector<double>{1.0, 2.0}, 2).ok());
  EXPECT_FALSE(LogitScaledConfidence(std::vector<double>{1.0, NAN}, 0).ok());
}

TEST(CalibratedScoresTest, HandComputed) {
  EXPECT_EQ(
      *CheckpointCalibratedScores(std::vector<double>{3.0, -1.0}, std::vector<double>{1.0, 0.5}),
      (std::vector<double>{2.0, -1.5}));
  // Loss fell from 2.0 to 0.5 ⇒ +1.5 (member-like); rose 0.25 → 0.75 ⇒ −0.5.
  EXPECT_EQ(*CalibratedLossScores(std::vector<double>{0.5, 0.75}, std::vector<double>{2.0, 0.25}),
            (std::vector<double>{1.5, -0.5}));
  EXPECT_EQ(*ConfidenceScores(std::vector<double>{0.25, 1.0}), (std::vector<double>{0.25, 1.0}));
  EXPECT_EQ(*CalibratedConfidenceScores(std::vector<double>{0.75}, std::vector<double>{0.5}),
            (std::vector<double>{0.25}));
}

TEST(CalibratedScoresTest, RejectsBadInput) {
  EXPECT_FALSE(CheckpointCalibratedScores(std::vector<double>{1.0}, {}).ok());
  EXPECT_FALSE(CalibratedLossScores(std::vector<double>{NAN}, std::vector<double>{1.0}).ok());
  EXPECT_FALSE(ConfidenceScores(std::vector<double>{1.5}).ok());
  EXPECT_FALSE(
      CalibratedConfidenceScores(std::vector<double>{0.5}, std::vector<double>{-0.1}).ok());
}

}  // namespace
}  // namespace memaudit::scoring
