#include "scoring/one_run_audit.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "boost/math/distributions/binomial.hpp"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit::scoring {
namespace {

using ::memaudit::testing::StatusIs;
using ::testing::HasSubstr;

double Logistic(double eps) { return 1.0 / (1.0 + std::exp(-eps)); }

// The p-value straight from its definition, one Boost pdf call per term:
// slow but independent of the recurrence OneRunPValue uses.
double NaivePValue(uint64_t m, uint64_t r, uint64_t v, double eps, double delta) {
  if (v == 0) return 1.0;
  const boost::math::binomial_distribution<double> bin(static_cast<double>(r), Logistic(eps));
  const double beta = boost::math::cdf(boost::math::complement(bin, static_cast<double>(v - 1)));
  double sum = 0.0, alpha = 0.0;
  for (uint64_t i = 1; i <= v; ++i) {
    sum += boost::math::pdf(bin, static_cast<double>(v - i));
    alpha = std::max(alpha, sum / static_cast<double>(i));
  }
  return std::min(1.0, beta + alpha * delta * 2.0 * static_cast<double>(m));
}

TEST(OneRunPValueTest, PureDpAllCorrectIsQToTheR) {
  // δ = 0, r = v = m = 10: p = P[Binomial(10, q) >= 10] = q^10.
  for (double eps : {0.0, 0.5, 1.0, 2.0, 4.0}) {
    const double q = Logistic(eps);
    EXPECT_NEAR(OneRunPValue(10, 10, 10, eps, 0.0), std::pow(q, 10), 1e-14 * std::pow(q, 10))
        << eps;
  }
  EXPECT_DOUBLE_EQ(OneRunPValue(10, 10, 10, 0.0, 0.0), 1.0 / 1024.0);
}

TEST(OneRunPValueTest, SmallCaseWithDeltaMatchesExactSums) {
  // m = 20, r = 10, v = 9, ε = 1, δ = 1e-3; exact rational sums over the
  // double q (Python, fractions):
  //   q = F(1/(1+math.exp(-1))); pmf = lambda j: math.comb(10,j)*q**j*(1-q)**(10-j)
  //   β = sum(pmf(j) for j in (9, 10))                       = 0.20401201235612001
  //   α = max(sum(pmf(9-k) for k in range(1,i+1))/i for i in range(1,10))
  //                                                           = 0.26554940163734253
  //   p = β + α·1e-3·2·20                                     = 0.21463398842161371
  const double p = OneRunPValue(20, 10, 9, 1.0, 1e-3);
  EXPECT_NEAR(p, 0.21463398842161371, 1e-12 * 0.21463398842161371);
  // δ = 0 leaves β alone.
  EXPECT_NEAR(OneRunPValue(20, 10, 9, 1.0, 0.0), 0.20401201235612001, 1e-12 * 0.204);
}

TEST(OneRunPValueTest, LargerCasesMatchExactSums) {
  // Same exact computation (pmf by its ratio recurrence in fractions):
  // (m, r, v, ε, δ) = (400, 200, 150, 0.5, 1e-2): p = 0.2128995844826266;
  // (1000, 1000, 1000, 3, 1e-5): p = 0.0003264462004922959 (β = 7.92e-22);
  // (4000, 2000, 1995, 0.1, 1e-4): p = 0.0007948949129317417. In the last,
  // the pmf at v − 1 = 1994 is about e^{-1285}, far below the smallest
  // double, yet the terms near the mode (about 1050) carry α = 9.9e-4.
  EXPECT_NEAR(OneRunPValue(400, 200, 150, 0.5, 1e-2), 0.2128995844826266, 1e-11);
  EXPECT_NEAR(OneRunPValue(1000, 1000, 1000, 3.0, 1e-5), 0.0003264462004922959, 1e-15);
  EXPECT_NEAR(OneRunPValue(4000, 2000, 1995, 0.1, 1e-4), 0.0007948949129317417, 1e-14);
}

TEST(OneRunPValueTest, RecurrenceAgreesWithTermByTermSum) {
  struct Case {
    uint64_t m, r, v;
    double eps, delta;
  };
  for (const Case& c : std::vector<Case>{{100, 100, 100, 2.0, 1e-5},
                                         {100, 60, 40, 0.3, 1e-2},
                                         {1000, 500, 300, 0.0, 1e-3},
                                         {1000, 500, 20, 1.0, 1e-3},  // v far below the mode
                                         {10000, 10000, 9990, 0.1, 1e-5},
                                         {10000, 10000, 9990, 5.0, 1e-5},
                                         {10000, 2000, 2000, 7.0, 1e-6},
                                         {50, 30, 1, 0.7, 0.5}}) {
    const double naive = NaivePValue(c.m, c.r, c.v, c.eps, c.delta);
    EXPECT_NEAR(OneRunPValue(c.m, c.r, c.v, c.eps, c.delta), naive, 1e-10 * naive)
        << c.m << " " << c.r << " " << c.v << " " << c.eps << " " << c.delta;
  }
}

TEST(OneRunPValueTest, MonotoneInEpsilonAndDelta) {
  double prev = 0.0;
  for (double eps = 0.0; eps <= 8.0; eps += 0.25) {
    const double p = OneRunPValue(1000, 200, 180, eps, 1e-5);
    EXPECT_GE(p, prev) << eps;
    prev = p;
  }
  prev = 0.0;
  for (double delta : {0.0, 1e-8, 1e-6, 1e-4, 1e-2, 0.1, 1.0}) {
    const double p = OneRunPValue(1000, 200, 180, 2.0, delta);
    EXPECT_GE(p, prev) << delta;
    prev = p;
  }
  EXPECT_EQ(OneRunPValue(1000, 200, 180, 2.0, 1.0), 1.0);  // capped at 1
}

TEST(OneRunPValueTest, NoCorrectGuessesOrHugeEpsilonGiveOne) {
  EXPECT_EQ(OneRunPValue(10, 5, 0, 1.0, 1e-5), 1.0);
  EXPECT_EQ(OneRunPValue(10, 10, 10, 60.0, 0.0), 1.0);  // q rounds to 1
}

TEST(OneRunEpsilonTest, PureDpAllCorrectIsLogitOfRoot) {
  // q^10 <= 0.05 iff q <= x = 0.05^{1/10}, i.e. ε <= ln(x/(1−x)) = 1.051873233231709.
  const double x = std::pow(0.05, 0.1);
  EXPECT_NEAR(OneRunEpsilonLowerBound(10, 10, 10, 0.0, 0.05), std::log(x / (1 - x)), 1e-6);
  EXPECT_NEAR(OneRunEpsilonLowerBound(10, 10, 10, 0.0, 0.05), 1.051873233231709, 1e-6);
}

TEST(OneRunEpsilonTest, ReturnedEpsilonIsRejectedAndJustAboveIsNot) {
  struct Case {
    uint64_t m, r, v;
    double delta, significance;
  };
  for (const Case& c : std::vector<Case>{{1000, 1000, 1000, 1e-5, 0.05},
                                         {1000, 200, 190, 1e-5, 0.01},
                                         {10000, 100, 100, 1e-6, 0.05},
                                         {50, 20, 18, 0.0, 0.1}}) {
    const double eps = OneRunEpsilonLowerBound(c.m, c.r, c.v, c.delta, c.significance);
    EXPECT_GT(eps, 0.0);
    EXPECT_LE(OneRunPValue(c.m, c.r, c.v, eps, c.delta), c.significance);
    for (int k = 1; k <= 3; ++k) {
      EXPECT_GT(OneRunPValue(c.m, c.r, c.v, eps + 1e-6 * k, c.delta), c.significance)
          << c.m << " " << c.r << " " << c.v << " +" << k;
    }
  }
}

TEST(OneRunEpsilonTest, NoEvidenceGivesZero) {
  // At ε = 0, P[Binomial(r, 1/2) >= v] >= 1/2 when v <= r/2.
  EXPECT_EQ(OneRunEpsilonLowerBound(100, 100, 50, 1e-5, 0.05), 0.0);
  EXPECT_EQ(OneRunEpsilonLowerBound(100, 40, 3, 1e-5, 0.05), 0.0);
  EXPECT_EQ(OneRunEpsilonLowerBound(100, 40, 0, 0.0, 0.05), 0.0);
  // Some evidence, but not enough: 7/10 has p = 0.17 at ε = 0.
  EXPECT_EQ(OneRunEpsilonLowerBound(100, 10, 7, 0.0, 0.05), 0.0);
}

TEST(OneRunEpsilonTest, MoreCorrectOrLooserSignificanceGivesMore) {
  EXPECT_LT(OneRunEpsilonLowerBound(1000, 200, 170, 1e-5, 0.05),
            OneRunEpsilonLowerBound(1000, 200, 190, 1e-5, 0.05));
  EXPECT_LT(OneRunEpsilonLowerBound(1000, 200, 190, 1e-5, 0.001),
            OneRunEpsilonLowerBound(1000, 200, 190, 1e-5, 0.05));
  EXPECT_LT(OneRunEpsilonLowerBound(1000, 200, 190, 1e-3, 0.05),
            OneRunEpsilonLowerBound(1000, 200, 190, 1e-6, 0.05));
}

TEST(GdpTest, ChanceLevelCountsGiveZero) {
  EXPECT_FALSE(OneRunGdpRejects(1000, 100, 50, 0.0, 0.05));
  EXPECT_EQ(OneRunGdpMuLowerBound(1000, 100, 50, 0.05), 0.0);
  EXPECT_EQ(OneRunGdpMuLowerBound(1000, 1000, 500, 0.05), 0.0);
  EXPECT_EQ(OneRunGdpMuLowerBound(10, 10, 5, 0.05), 0.0);
}

TEST(GdpTest, HandRecursionAtMuZero) {
  // μ = 0: g(x) = x. m = r = v = 10, τ = 0.05: R = 0.05, H = 0;
  // i = 9: H' = 0.05, R = 0.05 + 9·0.05 = 0.5; i = 8: H' = 0.5,
  // R = min(0.5 + 4·0.45, 1) = 1; i = 7: H' = 1, R = 1; i = 6: stop.
  // R + H − r/m = 1 > 0: rejected (ten right in a row has chance 1/1024).
  EXPECT_TRUE(OneRunGdpRejects(10, 10, 10, 0.0, 0.05));
  // m = r = 10, v = 5: R = H = 0.025 and g(R) = H stops at once:
  // R + H − 1 < 0.
  EXPECT_FALSE(OneRunGdpRejects(10, 10, 5, 0.0, 0.05));
}

TEST(GdpTest, PerfectGuessesGrowWithCanaries) {
  double prev = 0.0;
  for (uint64_t m : {10, 100, 1000, 10000}) {
    const double mu = OneRunGdpMuLowerBound(m, m, m, 0.05);
    EXPECT_GT(mu, prev) << m;
    EXPECT_LT(mu, kOneRunMaxGdpMu);
    // The bound is rejected and a little more is not.
    EXPECT_TRUE(OneRunGdpRejects(m, m, m, mu, 0.05));
    EXPECT_FALSE(OneRunGdpRejects(m, m, m, mu + 1e-6, 0.05));
    prev = mu;
  }
}

TEST(GdpTest, MonotoneInMu) {
  // Rejected below the bound, not above: the bisection's premise.
  const double mu = OneRunGdpMuLowerBound(1000, 200, 180, 0.01);
  ASSERT_GT(mu, 0.0);
  for (double f : {0.0, 0.25, 0.5, 0.9, 0.999}) {
    EXPECT_TRUE(OneRunGdpRejects(1000, 200, 180, f * mu, 0.01)) << f;
  }
  for (double f : {1.001, 1.1, 2.0, 10.0}) {
    EXPECT_FALSE(OneRunGdpRejects(1000, 200, 180, f * mu, 0.01)) << f;
  }
}

TEST(GdpEpsilonTest, MatchesBisectionOfTheDeltaCurve) {
  // Python: Phi = lambda z: 0.5*math.erfc(-z/math.sqrt(2));
  // d = lambda e: Phi(-e + 0.5) - math.exp(e)*Phi(-e - 0.5); bisection of
  // d(e) = 1e-5 on [0, 10], 200 steps: 4.377178095681224.
  EXPECT_NEAR(GdpEpsilon(1.0, 1e-5), 4.377178095681224, 1e-8);
  EXPECT_EQ(GdpEpsilon(0.0, 1e-5), 0.0);
  EXPECT_EQ(GdpEpsilon(0.0, 0.0), 0.0);
  EXPECT_TRUE(std::isinf(GdpEpsilon(1.0, 0.0)));
  // δ(0) = 2Φ(μ/2) − 1 = 0.0399 for μ = 0.1: any δ above that costs no ε.
  EXPECT_EQ(GdpEpsilon(0.1, 0.05), 0.0);
  // Larger μ spends more; a smaller δ costs more.
  EXPECT_LT(GdpEpsilon(1.0, 1e-5), GdpEpsilon(2.0, 1e-5));
  EXPECT_LT(GdpEpsilon(1.0, 1e-5), GdpEpsilon(1.0, 1e-9));
  // Far tails stay finite (log space): μ = 0.05 at δ = 1e-12.
  EXPECT_TRUE(std::isfinite(GdpEpsilon(0.05, 1e-12)));
  EXPECT_GT(GdpEpsilon(0.05, 1e-12), 0.0);
}

TEST(DefaultGuessBudgetsTest, SmallGrids) {
  auto as_pairs = [](const std::vector<GuessBudget>& b) {
    std::vector<std::pair<uint32_t, uint32_t>> out;
    for (const auto& x : b) out.emplace_back(x.positives, x.negatives);
    return out;
  };
  using P = std::vector<std::pair<uint32_t, uint32_t>>;
  // m = 10: k in {1, 2, 5, 10}; (k, k) with 2k <= 10, (k, 0), all-guess (5, 5) (a
  // duplicate), all but the middle: k = ⌊5 − s·√10/2⌋ = 3, 1 (a duplicate), -.
  EXPECT_EQ(as_pairs(DefaultGuessBudgets(10)),
            (P{{1, 0}, {1, 1}, {2, 0}, {2, 2}, {5, 0}, {3, 3}, {5, 5}, {10, 0}}));
  // m = 7: all-guess (4, 3); all but the middle: k = ⌊3.5 − 1.32⌋ = 2 (a duplicate).
  EXPECT_EQ(as_pairs(DefaultGuessBudgets(7)), (P{{1, 0}, {1, 1}, {2, 0}, {2, 2}, {5, 0}, {4, 3}}));
  EXPECT_EQ(as_pairs(DefaultGuessBudgets(1)), (P{{1, 0}}));
  EXPECT_TRUE(DefaultGuessBudgets(0).empty());
  // ... and (484, 484), (468, 468), (452, 452); (4950, ...), (4900, ...), (4850, ...).
  EXPECT_EQ(DefaultGuessBudgets(1000).size(), 22u);
  EXPECT_EQ(DefaultGuessBudgets(10000).size(), 28u);
}

TEST(DefaultGuessBudgetsTest, ValidSortedAndCappedForAnyM) {
  for (uint64_t m : {uint64_t{2}, uint64_t{3}, uint64_t{999}, uint64_t{123456789},
                     std::numeric_limits<uint64_t>::max()}) {
    const auto b = DefaultGuessBudgets(m);
    ASSERT_FALSE(b.empty());
    EXPECT_LE(b.size(), kMaxGuessBudgets);
    // Strictly increasing in (guesses, positives): sorted, no duplicates.
    auto key = [](const GuessBudget& x) {
      return std::make_pair(uint64_t{x.positives} + x.negatives, x.positives);
    };
    for (size_t i = 0; i < b.size(); ++i) {
      EXPECT_GE(key(b[i]).first, 1u);
      EXPECT_LE(key(b[i]).first, m);
      if (i > 0) {
        EXPECT_LT(key(b[i - 1]), key(b[i])) << m << " " << i;
      }
    }
  }
}

// m canaries, the odd ones included, every included one scoring above every
// excluded one.
void PerfectScores(size_t m, std::vector<double>& scores, std::vector<uint8_t>& included) {
  scores.resize(m);
  included.resize(m);
  for (size_t i = 0; i < m; ++i) {
    included[i] = i % 2;
    scores[i] = included[i] ? 2.0 + 1e-3 * i : -1.0 - 1e-3 * i;
  }
}

TEST(AuditOneRunTest, PerfectScoresReachTheLargestCertifiableEpsilon) {
  std::vector<double> scores;
  std::vector<uint8_t> included;
  PerfectScores(1000, scores, included);
  const auto budgets = DefaultGuessBudgets(1000);
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(auto res, AuditOneRun(scores, included, budgets, 1e-5, 0.95));
  EXPECT_DOUBLE_EQ(res.significance_per_budget, (1.0 - 0.95) / (2.0 * budgets.size()));
  double best = 0.0, best_mu = 0.0;
  for (size_t i = 0; i < budgets.size(); ++i) {
    const BudgetOutcome& o = res.budgets[i];
    const uint64_t r = uint64_t{budgets[i].positives} + budgets[i].negatives;
    EXPECT_EQ(o.guesses, r);
    // All-IN (1000, 0) is right for the 500 included only; every other budget is all right.
    EXPECT_EQ(o.correct, budgets[i].negatives == 0 && r > 500 ? 500u : r) << i;
    best = std::max(best, OneRunEpsilonLowerBound(1000, r, r, 1e-5, res.significance_per_budget));
    best_mu = std::max(best_mu, OneRunGdpMuLowerBound(1000, r, r, res.significance_per_budget));
  }
  EXPECT_EQ(res.epsilon_lower, best);
  EXPECT_EQ(res.budgets[res.best].epsilon_lower, best);
  EXPECT_EQ(res.gdp_mu_lower, best_mu);
  EXPECT_GT(res.epsilon_lower, 0.0);
  EXPECT_GT(res.gdp_mu_lower, 0.0);
  EXPECT_EQ(res.gdp_epsilon_lower, GdpEpsilon(res.gdp_mu_lower, 1e-5));
}

TEST(AuditOneRunTest, RandomScoresCertifyNothing) {
  // Scores that ignore inclusion: a fixed pseudo-random permutation.
  const size_t m = 1000;
  std::vector<double> scores(m);
  std::vector<uint8_t> included(m);
  for (size_t i = 0; i < m; ++i) {
    scores[i] = static_cast<double>((i * 7919) % m);
    included[i] = ((i * 2654435761u) >> 7) & 1;
  }
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(auto res,
                                AuditOneRun(scores, included, DefaultGuessBudgets(m), 1e-5, 0.95));
  EXPECT_EQ(res.epsilon_lower, 0.0);
  EXPECT_EQ(res.gdp_mu_lower, 0.0);
}

TEST(AuditOneRunTest, RankingAndTies) {
  // Ranked by score, lower index first on ties: 1 (0.9), 4 (0.9), 0, 2, 5 (0.5), 3 (0.1).
  const std::vector<double> scores = {0.5, 0.9, 0.5, 0.1, 0.9, 0.5};
  const std::vector<uint8_t> included = {1, 1, 0, 0, 0, 1};
  const std::vector<GuessBudget> budgets = {{1, 0}, {2, 0}, {3, 0}, {0, 1},
                                            {0, 2}, {2, 2}, {3, 3}, {0, 4}};
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(auto res, AuditOneRun(scores, included, budgets, 0.0, 0.9));
  ASSERT_EQ(res.budgets.size(), budgets.size());
  struct Want {
    uint64_t guesses, correct;
  };
  const std::vector<Want> want = {
      {1, 1},  // IN {1}: included. (Higher index first would guess 4: wrong.)
      {2, 1},  // IN {1, 4}: 1 + 0
      {3, 2},  // IN {1, 4, 0}: 1 + 0 + 1
      {1, 1},  // OUT {3}: excluded
      {2, 1},  // OUT {5, 3}: included, excluded
      {4, 2},  // IN {1, 4}: 1; OUT {5, 3}: 1
      {6, 4},  // IN {1, 4, 0}: 2; OUT {2, 5, 3}: 2
      {4, 2},  // OUT {0, 2, 5, 3}: 2 and 3 excluded
  };
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(res.budgets[i].guesses, want[i].guesses) << i;
    EXPECT_EQ(res.budgets[i].correct, want[i].correct) << i;
  }
  // Six canaries certify nothing at 90% over 8 budgets.
  EXPECT_EQ(res.epsilon_lower, 0.0);
  EXPECT_EQ(res.best, 0u);  // first on ties
}

TEST(AuditOneRunTest, BestIsFirstOfTheLargest) {
  std::vector<double> scores;
  std::vector<uint8_t> included;
  PerfectScores(200, scores, included);
  // Two identical budgets: the first one wins; a weak one in front loses.
  const std::vector<GuessBudget> budgets = {{1, 0}, {50, 50}, {50, 50}};
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(auto res, AuditOneRun(scores, included, budgets, 1e-5, 0.95));
  EXPECT_EQ(res.best, 1u);
  EXPECT_EQ(res.best_gdp, 1u);
  EXPECT_EQ(res.budgets[1].epsilon_lower, res.budgets[2].epsilon_lower);
  EXPECT_GT(res.epsilon_lower, res.budgets[0].epsilon_lower);
}

TEST(AuditOneRunTest, InvalidArgumentsNameTheirField) {
  const std::vector<double> s = {0.1, 0.2, 0.3, 0.4};
  const std::vector<uint8_t> in = {0, 1, 0, 1};
  const std::vector<GuessBudget> b = {{1, 1}};
  auto bad = [](auto status_or, const char* field) {
    EXPECT_THAT(status_or, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(field))) << field;
  };
  MEMAUDIT_EXPECT_OK(AuditOneRun(s, in, b, 1e-5, 0.95));
  bad(AuditOneRun({}, {}, b, 1e-5, 0.95), "scores");
  bad(AuditOneRun(s, std::vector<uint8_t>{0, 1}, b, 1e-5, 0.95), "included");
  bad(AuditOneRun(std::vector<double>{0.1, NAN, 0.3, 0.4}, in, b, 1e-5, 0.95), "scores[1]");
  bad(AuditOneRun(std::vector<double>{0.1, 0.2, INFINITY, 0.4}, in, b, 1e-5, 0.95), "scores[2]");
  bad(AuditOneRun(s, std::vector<uint8_t>{0, 1, 2, 1}, b, 1e-5, 0.95), "included[2]");
  bad(AuditOneRun(s, in, {}, 1e-5, 0.95), "budgets");
  bad(AuditOneRun(s, in, std::vector<GuessBudget>(kMaxGuessBudgets + 1, {1, 0}), 1e-5, 0.95),
      "budgets");
  bad(AuditOneRun(s, in, std::vector<GuessBudget>{{1, 0}, {0, 0}}, 1e-5, 0.95), "budgets[1]");
  bad(AuditOneRun(s, in, std::vector<GuessBudget>{{3, 2}}, 1e-5, 0.95), "budgets[0]");
  // 2^32 − 1 + 1 must not wrap around to pass the check.
  bad(AuditOneRun(s, in, std::vector<GuessBudget>{{1, 1}, {4294967295u, 1}}, 1e-5, 0.95),
      "budgets[1]");
  for (double d : {-1e-9, 1.0, static_cast<double>(NAN)}) {
    bad(AuditOneRun(s, in, b, d, 0.95), "delta");
  }
  for (double c : {0.0, 1.0, -0.5, static_cast<double>(NAN)}) {
    bad(AuditOneRun(s, in, b, 1e-5, c), "confidence");
  }
  // At the limit, kMaxGuessBudgets budgets are fine.
  MEMAUDIT_EXPECT_OK(
      AuditOneRun(s, in, std::vector<GuessBudget>(kMaxGuessBudgets, {1, 0}), 1e-5, 0.95));
}

}  // namespace
}  // namespace memaudit::scoring
