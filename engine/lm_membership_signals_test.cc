#include "engine/lm_membership_signals.h"

#include <cmath>
#include <string>

#include "gtest/gtest.h"

namespace memaudit::engine {
namespace {

// Hand-computed: 5 tokens, so the lowest 20% is the lowest one.
TEST(LmMembershipSignalsTest, TheFourScoresOfAHandComputedText) {
  TokenLogProbs t;
  t.log_prob = {-0.1, -2.0, -0.5, -4.0, -0.4};
  t.mean = {-1.0, -1.0, -1.0, -2.0, -1.0};
  t.stddev = {0.5, 0.5, 0.0, 1.0, 2.0};
  const std::string text = "hello";
  const LmMembershipScores s = MembershipScores(t, text);
  EXPECT_DOUBLE_EQ(s.loss, -7.0 / 5);
  EXPECT_DOUBLE_EQ(s.zlib, -7.0 / static_cast<double>(ZlibBytes(text)));
  EXPECT_DOUBLE_EQ(s.min_k, -4.0);
  // z = {1.8, -2, 0 (stddev 0), -2, 0.3}: the lowest is -2.
  EXPECT_DOUBLE_EQ(s.min_k_plus, -2.0);
}

TEST(LmMembershipSignalsTest, MeanOfLowestTakesTheCeilingAndAtLeastOne) {
  EXPECT_DOUBLE_EQ(MeanOfLowest({3, 1, 2, 5, 4, 6}, 0.2), 1.5);  // ceil(1.2) = 2
  EXPECT_DOUBLE_EQ(MeanOfLowest({3, 1, 2}, 0.01), 1.0);
  EXPECT_DOUBLE_EQ(MeanOfLowest({3, 1, 2}, 1.0), 2.0);
  EXPECT_DOUBLE_EQ(MeanOfLowest({}, 0.2), 0.0);
}

TEST(LmMembershipSignalsTest, ZlibCompressesRepetitionBelowItsLength) {
  const std::string repeated(400, 'a');
  EXPECT_LT(ZlibBytes(repeated), 20u);
  EXPECT_GT(ZlibBytes("q7#Lz"), 5u) << "a short random text only grows";
}

}  // namespace
}  // namespace memaudit::engine
