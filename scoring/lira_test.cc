#include "scoring/lira.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "boost/math/distributions/normal.hpp"
#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace memaudit::scoring {
namespace {

using ::memaudit::testing::StatusIs;
using Center = LiraOptions::Center;

// Gaussian log-density written out in full, independent of the library.
double LogGauss(double x, double mu, double sd) {
  return std::log(std::exp(-(x - mu) * (x - mu) / (2 * sd * sd)) / (sd * std::sqrt(2 * M_PI)));
}

// 5 models × 1 example; model 0 is the target.
// IN (models 1, 2) = {1, 3}: median 2, std 1. OUT (3, 4) = {0, -2}: median -1, std 1.
Matrix OneColumn(double target_phi) { return Matrix(5, 1, {target_phi, 1.0, 3.0, 0.0, -2.0}); }
KeepMatrix OneColumnKeep() { return KeepMatrix(5, 1, {1, 1, 1, 0, 0}); }

TEST(LiraTest, OnlineHandComputed) {
  // log N(2; 2, 1) − log N(2; −1, 1) = 0 − (−9/2).
  auto s = LiraScores(OneColumn(2.0), OneColumnKeep(), 0);
  MEMAUDIT_ASSERT_OK(s);
  EXPECT_NEAR((*s)[0], 4.5, 1e-12);
}

TEST(LiraTest, OnlineEqualsDirectGaussianLikelihoodRatio) {
  // Odd IN set, so median ≠ mean: IN = {1, 2, 6} (median 2, std √(14/3)),
  // OUT = {0, 4} (median 2, std 2), target φ = 3.5.
  Matrix phi(6, 2,
             {3.5, -1.0,  //
              1.0, 0.0,   //
              2.0, 0.5,   //
              6.0, 0.25,  //
              0.0, 3.0,   //
              4.0, 5.0});
  KeepMatrix keep(6, 2,
                  {1, 0,  //
                   1, 1,  //
                   1, 1,  //
                   1, 1,  //
                   0, 0,  //
                   0, 0});
  auto s = LiraScores(phi, keep, 0);
  MEMAUDIT_ASSERT_OK(s);
  EXPECT_NEAR((*s)[0], LogGauss(3.5, 2.0, std::sqrt(14.0 / 3.0)) - LogGauss(3.5, 2.0, 2.0), 1e-12);
  // Example 1: IN = {0, 0.5, 0.25} median 0.25 std √(1/24); OUT = {3, 5}.
  EXPECT_NEAR((*s)[1], LogGauss(-1.0, 0.25, std::sqrt(1.0 / 24.0)) - LogGauss(-1.0, 4.0, 1.0),
              1e-9);
  // Mean centre: IN mean 3.
  LiraOptions mean_opts;
  mean_opts.center = Center::kMean;
  auto m = LiraScores(phi, keep, 0, mean_opts);
  EXPECT_NEAR((*m)[0], LogGauss(3.5, 3.0, std::sqrt(14.0 / 3.0)) - LogGauss(3.5, 2.0, 2.0), 1e-12);
}

TEST(LiraTest, OfflineIsLogNormalCdfAgainstOut) {
  const boost::math::normal_distribution<double> n01;
  LiraOptions off;
  off.online = false;
  for (double x : {-3.0, -1.0, 0.5, 2.0}) {
    auto s = LiraScores(OneColumn(x), OneColumnKeep(), 0, off);
    MEMAUDIT_ASSERT_OK(s);
    EXPECT_NEAR((*s)[0], std::log(boost::math::cdf(n01, x + 1.0)), 1e-12) << x;
  }
  // z = −40: Φ underflows, the log-space score does not.
  auto far = LiraScores(OneColumn(-41.0), OneColumnKeep(), 0, off);
  ASSERT_TRUE(std::isfinite((*far)[0]));
  EXPECT_NEAR((*far)[0], -804.6084420137538, 1e-9);
}

// The reference code's offline test: −log N(φ; μ_out, σ_out). OUT = {0, −2}:
// median −1, std 1, so the score is (φ + 1)² / 2 + log √(2π), the same on
// both sides of OUT's centre (where the one-sided test is not).
TEST(LiraTest, OfflineTwoSidedIsTheNegatedOutDensity) {
  LiraOptions two;
  two.online = false;
  two.two_sided = true;
  for (double x : {-3.0, -1.0, 0.5, 2.0}) {
    auto s = LiraScores(OneColumn(x), OneColumnKeep(), 0, two);
    MEMAUDIT_ASSERT_OK(s);
    EXPECT_NEAR((*s)[0], -LogGauss(x, -1.0, 1.0), 1e-12) << x;
    EXPECT_NEAR((*s)[0], 0.5 * (x + 1) * (x + 1) + 0.5 * std::log(2 * M_PI), 1e-12) << x;
  }
  auto below = LiraScores(OneColumn(-3.0), OneColumnKeep(), 0, two);
  auto above = LiraScores(OneColumn(1.0), OneColumnKeep(), 0, two);
  EXPECT_DOUBLE_EQ((*below)[0], (*above)[0]) << "symmetric about μ_out = −1";
  // All targets at once equals the direct per-target computation.
  auto all = LiraScoresAllTargets(OneColumn(0.5), OneColumnKeep(), two);
  MEMAUDIT_ASSERT_OK(all);
  for (size_t t = 0; t < 5; ++t) {
    auto direct = LiraScores(OneColumn(0.5), OneColumnKeep(), t, two);
    EXPECT_NEAR((*all)[t], (*direct)[0], 1e-12) << t;
  }
}

// The reference code's fix_variance: one σ, the std of every raw IN value
// of the references (not residuals), for IN and OUT alike.
TEST(LiraTest, ReferenceVarianceIsTheStdOfRawInValuesHandComputed) {
  // 5 models × 2 examples; target 0. IN of the references (models 1-4):
  // example 0 {1, 3}, example 1 {5, 7}: raw values {1, 3, 5, 7}, mean 4,
  // population std √5 (residual pooling would give 1).
  Matrix phi(5, 2,
             {2.0, 6.0,  //
              1.0, 5.0,  //
              3.0, 7.0,  //
              0.0, 4.0,  //
              -2.0, 2.0});
  KeepMatrix keep(5, 2,
                  {1, 1,  //
                   1, 1,  //
                   1, 1,  //
                   0, 0,  //
                   0, 0});
  LiraOptions ref;
  ref.reference_variance = true;
  LiraDiagnostics diag;
  auto s = LiraScores(phi, keep, 0, ref, &diag);
  MEMAUDIT_ASSERT_OK(s);
  const double sigma = std::sqrt(5.0);
  ASSERT_EQ(diag.pooled_sigma_in.size(), 1u);
  EXPECT_NEAR(diag.pooled_sigma_in[0], sigma, 1e-12);
  EXPECT_NEAR(diag.pooled_sigma_out[0], sigma, 1e-12);
  // Example 0: IN median 2, OUT {0, −2} median −1; example 1: IN 6, OUT 3.
  EXPECT_NEAR((*s)[0], LogGauss(2.0, 2.0, sigma) - LogGauss(2.0, -1.0, sigma), 1e-12);
  EXPECT_NEAR((*s)[1], LogGauss(6.0, 6.0, sigma) - LogGauss(6.0, 3.0, sigma), 1e-12);
  auto all = LiraScoresAllTargets(phi, keep, ref);
  MEMAUDIT_ASSERT_OK(all);
  EXPECT_NEAR((*all)[0], (*s)[0], 1e-12);
  EXPECT_NEAR((*all)[1], (*s)[1], 1e-12);
}

TEST(LiraTest, FixedVariancePoolsResidualsHandComputed) {
  // Target 0. IN residuals about medians: ex0 {1,3}→±1, ex1 {10,14}→±2, so
  // σ_in = √(10/4). OUT: ex0 {0,−2}→±1, ex1 {5,5}→0,0, so σ_out = √(2/4).
  Matrix phi(5, 2, {2.0, 12.0, 1.0, 10.0, 3.0, 14.0, 0.0, 5.0, -2.0, 5.0});
  KeepMatrix keep(5, 2, {1, 1, 1, 1, 1, 1, 0, 0, 0, 0});
  LiraOptions fixed;
  fixed.fixed_variance = true;
  LiraDiagnostics diag;
  auto s = LiraScores(phi, keep, 0, fixed, &diag);
  MEMAUDIT_ASSERT_OK(s);
  ASSERT_EQ(diag.pooled_sigma_in.size(), 1u);
  EXPECT_NEAR(diag.pooled_sigma_in[0], std::sqrt(2.5), 1e-12);
  EXPECT_NEAR(diag.pooled_sigma_out[0], std::sqrt(0.5), 1e-12);
  const double si = std::sqrt(2.5), so = std::sqrt(0.5);
  EXPECT_NEAR((*s)[0], LogGauss(2.0, 2.0, si) - LogGauss(2.0, -1.0, so), 1e-12);
  EXPECT_NEAR((*s)[1], LogGauss(12.0, 12.0, si) - LogGauss(12.0, 5.0, so), 1e-12);
}

TEST(LiraTest, EmptyReferenceSetScoresZeroAndIsCounted) {
  // Every other model trained on the example: OUT is empty.
  Matrix phi(3, 2, {1.0, 1.0, 2.0, 0.0, 3.0, 2.0});
  KeepMatrix keep(3, 2, {0, 1, 1, 0, 1, 1});
  LiraDiagnostics diag;
  auto s = LiraScores(phi, keep, 0, {}, &diag);
  MEMAUDIT_ASSERT_OK(s);
  EXPECT_EQ((*s)[0], 0.0);
  EXPECT_EQ(diag.skipped, 1u);
  // Offline needs only OUT; single-value sets get the floored σ and stay finite.
  LiraOptions off;
  off.online = false;
  auto o = LiraScoresAllTargets(phi, keep, off, &diag);
  MEMAUDIT_ASSERT_OK(o);
  EXPECT_TRUE(std::all_of(o->begin(), o->end(), [](double v) { return std::isfinite(v); }));
}

TEST(LiraTest, ConstantReferenceValuesGiveFiniteScores) {
  Matrix phi(4, 1, {0.5, 1.0, 1.0, 1.0});
  KeepMatrix keep(4, 1, {0, 1, 0, 0});
  for (bool online : {true, false}) {
    LiraOptions o;
    o.online = online;
    auto s = LiraScoresAllTargets(phi, keep, o);
    MEMAUDIT_ASSERT_OK(s);
    for (double v : *s) EXPECT_TRUE(std::isfinite(v));
  }
}

void ExpectClose(const std::vector<double>& a, const std::vector<double>& b, const char* what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_NEAR(a[i], b[i], 1e-9 * std::max(1.0, std::abs(b[i]))) << what << " at " << i;
  }
}

TEST(LiraTest, PropertyAllTargetsEqualsPerTargetDirect) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0.0, 1.0);
  for (int trial = 0; trial < 4; ++trial) {
    const size_t n = 8, m = 50 + 70 * (trial % 2);  // 120 crosses a block edge
    Matrix phi(n, m);
    KeepMatrix keep(n, m);
    for (size_t j = 0; j < m; ++j) {
      const double base = 3.0 * noise(rng);
      for (size_t r = 0; r < n; ++r) {
        keep.at(r, j) = static_cast<uint8_t>(rng() % 2);
        double v = base + noise(rng) + 1.5 * keep.at(r, j);
        if (j % 5 == 0) v = std::round(2.0 * v) / 2.0;  // ties in the median
        phi.at(r, j) = v;
      }
    }
    for (size_t r = 0; r < n; ++r) keep.at(r, 3) = 1;       // empty OUT set
    for (size_t r = 0; r < n; ++r) keep.at(r, 4) = r == 2;  // IN = one model
    for (Center c : {Center::kMedian, Center::kMean}) {
      for (bool fixed : {false, true}) {
        // online, offline, offline two-sided, online with the reference σ
        for (int variant : {0, 1, 2, 3}) {
          const bool online = variant == 0 || variant == 3;
          LiraOptions o;
          o.online = online;
          o.two_sided = variant == 2;
          o.reference_variance = variant == 3;
          o.fixed_variance = fixed;
          o.center = c;
          LiraDiagnostics fast_diag;
          auto all = LiraScoresAllTargets(phi, keep, o, &fast_diag);
          MEMAUDIT_ASSERT_OK(all);
          ASSERT_EQ(all->size(), n * m);
          size_t skipped = 0;
          for (size_t t = 0; t < n; ++t) {
            LiraDiagnostics d;
            auto one = LiraScores(phi, keep, t, o, &d);
            MEMAUDIT_ASSERT_OK(one);
            std::vector<double> row(all->begin() + t * m, all->begin() + (t + 1) * m);
            ExpectClose(row, *one, "row");
            skipped += d.skipped;
            if (fixed) {
              EXPECT_NEAR(fast_diag.pooled_sigma_in[t], d.pooled_sigma_in[0], 1e-12);
              EXPECT_NEAR(fast_diag.pooled_sigma_out[t], d.pooled_sigma_out[0], 1e-12);
            }
          }
          EXPECT_EQ(fast_diag.skipped, skipped);
          EXPECT_GT(skipped, 0u);
        }
      }
    }
  }
}

TEST(LiraTest, RejectsBadInput) {
  const KeepMatrix keep = OneColumnKeep();
  EXPECT_THAT(LiraScores(OneColumn(0), keep, 5), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(LiraScores(OneColumn(NAN), keep, 0), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(LiraScoresAllTargets(OneColumn(0), KeepMatrix(5, 2)),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(LiraScoresAllTargets(OneColumn(0), KeepMatrix(5, 1, {0, 1, 2, 0, 1})),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(LiraScoresAllTargets(Matrix(1, 1, 0.0), KeepMatrix(1, 1)),
              StatusIs(absl::StatusCode::kInvalidArgument));
  Matrix broken(5, 1);
  broken.data.pop_back();
  EXPECT_THAT(LiraScores(broken, keep, 0), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(LossScoresTest, NegatesAndRejectsNaN) {
  EXPECT_EQ(*LossScores(std::vector<double>{0.5, 2.0}), (std::vector<double>{-0.5, -2.0}));
  EXPECT_THAT(LossScores(std::vector<double>{NAN}), StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace memaudit::scoring
