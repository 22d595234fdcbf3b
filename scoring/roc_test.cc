#include "scoring/roc.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace memaudit::scoring {
namespace {

using ::memaudit::testing::StatusIs;

constexpr double kInf = std::numeric_limits<double>::infinity();

// Members 10, 9, 7, 5; non-members 8, 6, 4, 3, 2 (interleaved on purpose).
const std::vector<double> kScores = {10, 8, 9, 6, 7, 4, 5, 3, 2};
const std::vector<uint8_t> kMembers = {1, 0, 1, 0, 1, 0, 1, 0, 0};

TEST(AucTest, HandComputedWithoutTies) {
  // Member-beats-non-member pairs: 10→5, 9→5, 7→4, 5→3 = 17 of 20.
  EXPECT_DOUBLE_EQ(*Auc(kScores, kMembers), 17.0 / 20.0);
}

TEST(AucTest, HandComputedWithTiesCountingHalf) {
  // Members 0.9, 0.8, 0.3; non-members 0.8, 0.5, 0.8.
  // 0.9 beats all 3; 0.8 ties twice (½ each) and beats 0.5; 0.3 beats none.
  const std::vector<double> s = {0.9, 0.8, 0.8, 0.5, 0.3, 0.8};
  const std::vector<uint8_t> m = {1, 1, 0, 0, 1, 0};
  EXPECT_DOUBLE_EQ(*Auc(s, m), 5.0 / 9.0);
}

TEST(AucTest, ExtremesAndAllTied) {
  EXPECT_DOUBLE_EQ(*Auc(std::vector<double>{1, 2, 3, 4}, std::vector<uint8_t>{0, 0, 1, 1}), 1.0);
  EXPECT_DOUBLE_EQ(*Auc(std::vector<double>{4, 3, 2, 1}, std::vector<uint8_t>{0, 0, 1, 1}), 0.0);
  EXPECT_DOUBLE_EQ(*Auc(std::vector<double>{7, 7, 7}, std::vector<uint8_t>{1, 0, 0}), 0.5);
}

TEST(AucTest, InfiniteScoresOrderNormally) {
  EXPECT_DOUBLE_EQ(*Auc(std::vector<double>{kInf, -kInf, 0.0}, std::vector<uint8_t>{1, 0, 0}), 1.0);
}

double BruteForceAuc(const std::vector<double>& s, const std::vector<uint8_t>& m) {
  double wins = 0.0, pairs = 0.0;
  for (size_t i = 0; i < s.size(); ++i) {
    for (size_t k = 0; k < s.size(); ++k) {
      if (!m[i] || m[k]) continue;
      pairs += 1.0;
      wins += s[i] > s[k] ? 1.0 : (s[i] == s[k] ? 0.5 : 0.0);
    }
  }
  return wins / pairs;
}

TEST(AucTest, PropertyMatchesPairCountAndIsInvariantUnderMonotoneMaps) {
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 50; ++trial) {
    const size_t n = 5 + rng() % 200;
    std::vector<double> s(n);
    std::vector<uint8_t> m(n);
    std::normal_distribution<double> noise(0.0, 1.0);
    for (size_t i = 0; i < n; ++i) {
      m[i] = i < 2 ? static_cast<uint8_t>(i) : static_cast<uint8_t>(rng() % 2);
      // Rounding to a coarse grid creates many ties.
      s[i] = std::round(4.0 * (noise(rng) + 0.7 * m[i])) / 4.0;
    }
    const double auc = *Auc(s, m);
    EXPECT_NEAR(auc, BruteForceAuc(s, m), 1e-12);
    std::vector<double> t(n), neg(n);
    for (size_t i = 0; i < n; ++i) {
      t[i] = std::exp(s[i] / 3.0) + s[i] * s[i] * s[i];  // strictly increasing
      neg[i] = -s[i];
    }
    EXPECT_DOUBLE_EQ(*Auc(t, m), auc);
    EXPECT_NEAR(*Auc(neg, m), 1.0 - auc, 1e-12);
  }
}

TEST(RocCurveTest, OnePointPerDistinctScorePlusOrigin) {
  const std::vector<double> s = {0.9, 0.8, 0.8, 0.5, 0.3, 0.8};
  const std::vector<uint8_t> m = {1, 1, 0, 0, 1, 0};
  auto roc = ComputeRoc(s, m);
  MEMAUDIT_ASSERT_OK(roc);
  EXPECT_EQ(roc->positives, 3u);
  EXPECT_EQ(roc->negatives, 3u);
  EXPECT_EQ(roc->thresholds, (std::vector<double>{kInf, 0.9, 0.8, 0.5, 0.3}));
  EXPECT_EQ(roc->true_positives, (std::vector<size_t>{0, 1, 2, 2, 3}));
  EXPECT_EQ(roc->false_positives, (std::vector<size_t>{0, 0, 2, 3, 3}));
  EXPECT_DOUBLE_EQ(roc->fpr[2], 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(roc->tpr.back(), 1.0);
  EXPECT_DOUBLE_EQ(Auc(*roc), 5.0 / 9.0);
}

TEST(TprAtFprTest, HandCases) {
  // Curve (tp, fp) by threshold: 10:(1,0) 9:(2,0) 8:(2,1) 7:(3,1) 6:(3,2)
  // 5:(4,2) 4:(4,3) 3:(4,4) 2:(4,5); 4 positives, 5 negatives.
  struct Case {
    double target, tpr, fpr, threshold;
  } cases[] = {
      {0.0, 0.5, 0.0, 9},    // all-strict threshold: no false positive
      {0.1, 0.5, 0.0, 9},    // below 1/n_neg = 0.2: same
      {0.2, 0.75, 0.2, 7},   // FPR exactly at the target is allowed (≤)
      {0.39, 0.75, 0.2, 7},  //
      {0.4, 1.0, 0.4, 5},    //
      {1.0, 1.0, 0.4, 5},    // max TPR reached first at FPR 0.4
  };
  for (const Case& c : cases) {
    auto op = TprAtFpr(kScores, kMembers, c.target);
    MEMAUDIT_ASSERT_OK(op);
    EXPECT_DOUBLE_EQ(op->fpr_target, c.target);
    EXPECT_DOUBLE_EQ(op->tpr, c.tpr) << c.target;
    EXPECT_DOUBLE_EQ(op->fpr, c.fpr) << c.target;
    EXPECT_DOUBLE_EQ(op->threshold, c.threshold) << c.target;
    EXPECT_EQ(op->positives, 4u);
    EXPECT_EQ(op->negatives, 5u);
  }
  auto op = TprAtFpr(kScores, kMembers, 0.2);
  EXPECT_EQ(op->true_positives, 3u);
  EXPECT_EQ(op->false_positives, 1u);
}

TEST(TprAtFprTest, TiedThresholdTakesTheWholeTieGroup) {
  // At τ = 5 both members and one of two non-members are predicted member:
  // the tie cannot be split, so FPR jumps from 0 to 0.5.
  const std::vector<double> s = {5, 5, 5, 1};
  const std::vector<uint8_t> m = {1, 1, 0, 0};
  auto below = TprAtFpr(s, m, 0.4);
  EXPECT_DOUBLE_EQ(below->tpr, 0.0);
  EXPECT_DOUBLE_EQ(below->fpr, 0.0);
  EXPECT_EQ(below->threshold, kInf);
  auto at = TprAtFpr(s, m, 0.5);
  EXPECT_DOUBLE_EQ(at->tpr, 1.0);
  EXPECT_DOUBLE_EQ(at->fpr, 0.5);
  EXPECT_DOUBLE_EQ(at->threshold, 5.0);
}

TEST(TprAtFprTest, NoQualifyingThresholdGivesInfinityAndZero) {
  // The top score is a non-member, so any finite threshold has FPR >= 1/2.
  auto op = TprAtFpr(std::vector<double>{1, 2, 0}, std::vector<uint8_t>{1, 0, 0}, 0.1);
  MEMAUDIT_ASSERT_OK(op);
  EXPECT_EQ(op->threshold, kInf);
  EXPECT_DOUBLE_EQ(op->tpr, 0.0);
  EXPECT_DOUBLE_EQ(op->fpr, 0.0);
}

TEST(BalancedAccuracyTest, HandComputed) {
  // Best at τ = 5: TPR 1, FPR 0.4 → (1 + 0.6) / 2.
  EXPECT_DOUBLE_EQ(*BalancedAccuracy(kScores, kMembers), 0.8);
  // Perfectly wrong scores still give 0.5 (predict-all / predict-none).
  EXPECT_DOUBLE_EQ(*BalancedAccuracy(std::vector<double>{1, 2}, std::vector<uint8_t>{1, 0}), 0.5);
}

// One scan for many targets gives what one TprAtFpr per target gives, in
// any order of targets (increasing ones continue the scan, others restart).
TEST(TprAtFprsTest, EqualsTprAtFprAtEachTarget) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int> grid(0, 300);
  std::vector<double> s(5000);
  std::vector<uint8_t> m(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    m[i] = rng() % 2;
    s[i] = grid(rng) + 40.0 * m[i];  // ties, and a signal
  }
  auto roc = ComputeRoc(s, m);
  ASSERT_TRUE(roc.ok());
  std::vector<double> targets = {0.0};
  for (int i = 0; i <= 100; ++i) targets.push_back(std::pow(10.0, -5.0 * (1.0 - i / 100.0)));
  targets.insert(targets.end(), {0.3, 0.001, 0.001, 1.0, 0.0});
  auto points = TprAtFprs(*roc, targets);
  ASSERT_TRUE(points.ok()) << points.status();
  ASSERT_EQ(points->size(), targets.size());
  for (size_t i = 0; i < targets.size(); ++i) {
    auto one = TprAtFpr(*roc, targets[i]);
    ASSERT_TRUE(one.ok());
    const OperatingPoint& p = (*points)[i];
    EXPECT_EQ(p.fpr_target, one->fpr_target) << i;
    EXPECT_EQ(p.tpr, one->tpr) << i;
    EXPECT_EQ(p.fpr, one->fpr) << i;
    EXPECT_EQ(p.threshold, one->threshold) << i;
    EXPECT_EQ(p.true_positives, one->true_positives) << i;
    EXPECT_EQ(p.false_positives, one->false_positives) << i;
  }
  EXPECT_THAT(TprAtFprs(*roc, std::vector<double>{0.1, 1.5}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(TprAtFprs(RocCurve{}, std::vector<double>{0.1}),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(RocValidationTest, RejectsBadInput) {
  const std::vector<double> s = {1, 2, 3};
  EXPECT_THAT(Auc(s, std::vector<uint8_t>{1, 0}), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Auc({}, {}), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Auc(s, std::vector<uint8_t>{1, 1, 1}), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Auc(s, std::vector<uint8_t>{0, 0, 0}), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Auc(s, std::vector<uint8_t>{0, 2, 1}), StatusIs(absl::StatusCode::kInvalidArgument));
  auto nan = Auc(std::vector<double>{1, std::nan(""), 3}, std::vector<uint8_t>{0, 1, 1});
  EXPECT_THAT(nan, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_NE(nan.status().message().find("scores[1]"), std::string::npos);
  const std::vector<uint8_t> m = {0, 1, 1};
  EXPECT_THAT(TprAtFpr(s, m, 1.5), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(TprAtFpr(s, m, -0.1), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(TprAtFpr(s, m, std::nan("")), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(BalancedAccuracy(s, std::vector<uint8_t>{1}),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace memaudit::scoring
