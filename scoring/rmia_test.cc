#include "scoring/rmia.h"

#include <random>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace memaudit::scoring {
namespace {

// One candidate x: Pr(x|θ) = 0.8, reference OUT mean 0.5.
// Population: Pr(z|θ) = {0.5, 0.9, 0.2}, reference means {0.5, 0.9, 0.4}.
struct Fixture {
  std::vector<double> tx = {0.8};
  Matrix rx{2, 1, {0.4, 0.6}};
  std::vector<double> tz = {0.5, 0.9, 0.2};
  Matrix rz{2, 3, {0.4, 0.9, 0.3, 0.6, 0.9, 0.5}};
};

TEST(RmiaTest, OfflineHandComputed) {
  // a = 0.5: Pr(x) = ½(1.5·0.5 + 0.5) = 0.625, ratio 1.28. Population ratios:
  // 0.5/0.625 = 0.8, 0.9/0.925 ≈ 0.973, 0.2/0.55 ≈ 0.364.
  Fixture f;
  struct Case {
    double gamma, want;
  } cases[] = {{1.0, 1.0}, {1.5, 2.0 / 3.0}, {2.0, 1.0 / 3.0}, {4.0, 0.0}};
  for (const Case& c : cases) {
    RmiaOptions o;
    o.a = 0.5;
    o.gamma = c.gamma;
    auto r = RmiaScores(f.tx, f.rx, f.tz, f.rz, o);
    MEMAUDIT_ASSERT_OK(r);
    EXPECT_DOUBLE_EQ(r->scores[0], c.want) << c.gamma;
    EXPECT_DOUBLE_EQ(r->gamma, c.gamma);
    EXPECT_DOUBLE_EQ(r->a, 0.5);
    EXPECT_TRUE(r->offline);
    EXPECT_EQ(r->population_size, 3u);
  }
}

TEST(RmiaTest, OnlineUsesThePlainMeanAndTiesCount) {
  // Online: ratio x = 0.8/0.5 = 1.6; z: 1.0, 1.0, 0.5. With γ = 1.6 the
  // z at ratio 1.0 give exactly 1.6 >= γ (counted), so all three.
  Fixture f;
  RmiaOptions o;
  o.offline = false;
  o.gamma = 1.6;
  auto r = RmiaScores(f.tx, f.rx, f.tz, f.rz, o);
  MEMAUDIT_ASSERT_OK(r);
  EXPECT_DOUBLE_EQ(r->scores[0], 1.0);
  o.gamma = 1.7;
  EXPECT_DOUBLE_EQ(RmiaScores(f.tx, f.rx, f.tz, f.rz, o)->scores[0], 1.0 / 3.0);
}

TEST(RmiaTest, PropertySortedEqualsDense) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(0.01, 1.0);
  for (int trial = 0; trial < 20; ++trial) {
    const size_t refs = 1 + rng() % 4, n = 1 + rng() % 40, nz = 1 + rng() % 60;
    std::vector<double> tx(n), tz(nz);
    Matrix rx(refs, n), rz(refs, nz);
    for (auto& v : tx) v = u(rng);
    for (auto& v : tz) v = u(rng);
    for (auto& v : rx.data) v = u(rng);
    for (auto& v : rz.data) v = u(rng);
    RmiaOptions o;
    o.offline = trial % 2 == 0;
    o.a = 0.3;
    o.gamma = 0.5 + u(rng) * 2;
    auto fast = RmiaScores(tx, rx, tz, rz, o);
    auto dense = RmiaScoresDense(tx, rx, tz, rz, o);
    MEMAUDIT_ASSERT_OK(fast);
    MEMAUDIT_ASSERT_OK(dense);
    EXPECT_EQ(fast->scores, dense->scores);
  }
}

TEST(RmiaTest, RejectsBadInput) {
  Fixture f;
  RmiaOptions bad_gamma;
  bad_gamma.gamma = 0.0;
  EXPECT_FALSE(RmiaScores(f.tx, f.rx, f.tz, f.rz, bad_gamma).ok());
  RmiaOptions bad_a;
  bad_a.a = 1.5;
  EXPECT_FALSE(RmiaScores(f.tx, f.rx, f.tz, f.rz, bad_a).ok());
  EXPECT_FALSE(RmiaScores(std::vector<double>{0.0}, f.rx, f.tz, f.rz).ok());
  EXPECT_FALSE(RmiaScores(f.tx, f.rx, {}, Matrix(2, 0)).ok());
  EXPECT_FALSE(RmiaScores(f.tx, f.rx, f.tz, Matrix(3, 3, 0.5)).ok());  // model count
  EXPECT_FALSE(RmiaScores(std::vector<double>{0.8, 0.1}, f.rx, f.tz, f.rz).ok());
  EXPECT_FALSE(RmiaScoresDense(std::vector<double>{NAN}, f.rx, f.tz, f.rz).ok());
}

}  // namespace
}  // namespace memaudit::scoring
