#include "scoring/intervals.h"

#include <cmath>
#include <random>
#include <vector>

#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace memaudit::scoring {
namespace {

TEST(ClopperPearsonTest, KnownValues) {
  auto half = ClopperPearson(5, 10);  // the textbook (0.1871, 0.8129)
  MEMAUDIT_ASSERT_OK(half);
  EXPECT_NEAR(half->lo, 0.187086028447398534, 1e-12);
  EXPECT_NEAR(half->hi, 0.812913971552601428, 1e-12);
  // k = 0: closed form hi = 1 − (α/2)^{1/n}; k = n mirrors it.
  auto none = ClopperPearson(0, 10);
  EXPECT_EQ(none->lo, 0.0);
  EXPECT_NEAR(none->hi, 0.308497107818760820, 1e-12);
  auto all = ClopperPearson(10, 10);
  EXPECT_NEAR(all->lo, 1.0 - 0.308497107818760820, 1e-12);
  EXPECT_EQ(all->hi, 1.0);
  auto one = ClopperPearson(1, 1, 0.9);
  EXPECT_NEAR(one->lo, 0.05, 1e-12);
}

TEST(ClopperPearsonTest, RejectsBadInput) {
  EXPECT_FALSE(ClopperPearson(0, 0).ok());
  EXPECT_FALSE(ClopperPearson(3, 2).ok());
  EXPECT_FALSE(ClopperPearson(1, 2, 1.0).ok());
  EXPECT_FALSE(ClopperPearson(1, 2, NAN).ok());
}

TEST(SummarizeMeanTest, StudentTInterval) {
  auto s = SummarizeMean(std::vector<double>{1.0, 2.0, 3.0});
  MEMAUDIT_ASSERT_OK(s);
  EXPECT_DOUBLE_EQ(s->mean, 2.0);
  EXPECT_DOUBLE_EQ(s->stddev, 1.0);
  // df = 2 has a closed form: t_p = (2p − 1) / √(2p(1 − p)) = 4.30265 at p = .975.
  const double t = 0.95 / std::sqrt(2 * 0.975 * 0.025);
  const double half = t / std::sqrt(3.0);
  EXPECT_NEAR(s->interval.lo, 2.0 - half, 1e-12);
  EXPECT_NEAR(s->interval.hi, 2.0 + half, 1e-12);
  // Another run's mean of 3: the difference has sd·√(2/3), so √2 · half.
  EXPECT_NEAR(s->rerun.lo, 2.0 - t * std::sqrt(2.0 / 3.0), 1e-12);
  EXPECT_NEAR(s->rerun.hi, 2.0 + t * std::sqrt(2.0 / 3.0), 1e-12);
  auto single = SummarizeMean(std::vector<double>{0.7});
  EXPECT_EQ(single->n, 1u);
  EXPECT_DOUBLE_EQ(single->interval.lo, 0.7);
  EXPECT_DOUBLE_EQ(single->interval.hi, 0.7);
  EXPECT_DOUBLE_EQ(single->rerun.lo, 0.7);
  EXPECT_DOUBLE_EQ(single->rerun.hi, 0.7);
  EXPECT_FALSE(SummarizeMean({}).ok());
  EXPECT_FALSE(SummarizeMean(std::vector<double>{INFINITY}).ok());
}

// The re-run interval holds the mean of another run of 3 trials in 95% of
// pairs (normal trials, 20,000 pairs: 95% ± 0.5%); the interval of the
// expectation holds it less often (about 91% at 3 trials).
TEST(SummarizeMeanTest, TheReRunIntervalHoldsAnotherRunsMean) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> trial(0.3, 0.05);
  auto run = [&] {
    std::vector<double> v(3);
    for (double& x : v) x = trial(rng);
    return v;
  };
  int rerun_covers = 0, mean_covers = 0;
  constexpr int kPairs = 20000;
  for (int i = 0; i < kPairs; ++i) {
    const MeanSummary first = *SummarizeMean(run());
    const double other = SummarizeMean(run())->mean;
    rerun_covers += first.rerun.lo <= other && other <= first.rerun.hi;
    mean_covers += first.interval.lo <= other && other <= first.interval.hi;
  }
  EXPECT_NEAR(rerun_covers / double(kPairs), 0.95, 0.006);
  EXPECT_LT(mean_covers / double(kPairs), 0.93);
}

}  // namespace
// Two trials: mean 0.875, sd 0.106, t(1) = 12.706, so the unclipped
// interval is 0.875 +- 0.953 = [-0.078, 1.828]; a rate's stays in [0, 1].
TEST(SummarizeMeanTest, ARateIntervalStaysInsideItsRange) {
  auto open = SummarizeMean(std::vector<double>{0.8, 0.95});
  ASSERT_TRUE(open.ok());
  EXPECT_NEAR(open->interval.lo, -0.078, 1e-3);
  EXPECT_NEAR(open->interval.hi, 1.828, 1e-3);
  auto rate = SummarizeMean(std::vector<double>{0.8, 0.95}, 0.95, kUnitInterval);
  ASSERT_TRUE(rate.ok());
  EXPECT_EQ(rate->interval.lo, 0.0);
  EXPECT_EQ(rate->interval.hi, 1.0);
  EXPECT_DOUBLE_EQ(rate->mean, 0.875);
}

}  // namespace memaudit::scoring
