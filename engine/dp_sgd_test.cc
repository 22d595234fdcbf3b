#include "engine/dp_sgd.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>

#include "engine/rdp_accountant.h"
#include "gtest/gtest.h"

namespace memaudit::engine {
namespace {

TEST(DpSgdTest, ClipsEachExampleAndMatchesManualComputation) {
  ModelSpec spec;
  spec.kind = ModelKind::kLogReg;
  spec.inputs = 5;
  spec.classes = 3;
  auto model = BuildModel(spec, 1);
  ASSERT_TRUE(model.ok());
  TensorDataset data = SyntheticBlobs(6, 5, 3, 3.0, 2);
  Batch batch = data.Gather({0, 1, 2, 3, 4, 5});
  DpSgdOptions dp;
  dp.clip_norm = 0.5;
  dp.noise_multiplier = 0;  // no noise: the result is exactly the clipped mean
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(1);
  DpGradientStats stats = PrivateGradient(**model, batch, dp, gen);
  ASSERT_EQ(stats.norms.size(), 6u);

  // Reference: per-example gradients one at a time, clipped by hand.
  auto params = (*model)->parameters();
  std::vector<torch::Tensor> expected;
  for (auto& p : params) expected.push_back(torch::zeros_like(p, torch::kFloat64));
  for (int i = 0; i < 6; ++i) {
    torch::Tensor loss =
        (*model)->PerExampleLoss(batch.x.slice(0, i, i + 1), batch.y.slice(0, i, i + 1)).sum();
    auto grads = torch::autograd::grad({loss}, params);
    double sq = 0;
    for (auto& g : grads) sq += g.to(torch::kFloat64).pow(2).sum().item<double>();
    EXPECT_NEAR(stats.norms[i], std::sqrt(sq), 1e-9);
    const double scale = std::min(1.0, dp.clip_norm / std::sqrt(sq));
    for (size_t k = 0; k < params.size(); ++k) expected[k] += grads[k].to(torch::kFloat64) * scale;
  }
  int clipped = 0;
  for (double n : stats.norms) clipped += n > dp.clip_norm;
  EXPECT_GT(clipped, 0) << "the test needs some examples above the clip norm";
  for (size_t k = 0; k < params.size(); ++k) {
    EXPECT_TRUE(torch::allclose(params[k].grad().to(torch::kFloat64), expected[k] / 6, 1e-6, 1e-7));
  }

  // With noise the gradient moves by about sigma * C / n per coordinate, and
  // the same generator seed gives the same noise.
  dp.noise_multiplier = 2.0;
  at::Generator g1 = at::make_generator<at::CPUGeneratorImpl>(7);
  PrivateGradient(**model, batch, dp, g1);
  torch::Tensor noisy1 = params[0].grad().clone();
  at::Generator g2 = at::make_generator<at::CPUGeneratorImpl>(7);
  PrivateGradient(**model, batch, dp, g2);
  EXPECT_TRUE(torch::equal(noisy1, params[0].grad()));
  const double spread = (noisy1.to(torch::kFloat64) - expected[0] / 6).std().item<double>();
  EXPECT_NEAR(spread, 2.0 * 0.5 / 6, 0.1);
}

// Published vectors: TF-Privacy's tutorials/README.md (tensorflow/privacy),
// "compute_dp_sgd_privacy.py --N=60000 --batch_size=256 --noise_multiplier=1.1
// --epochs=60 --delta=1e-5 ... eps = 3.01", and its parameter table
// (sigma 1.3 / 15 epochs -> 1.19; sigma 0.7 / 45 epochs -> 7.10), computed with
// the classic RDP-to-DP conversion and orders 1.1..10.9, 12..63.
TEST(RdpAccountantTest, MatchesTfPrivacyPublishedValues) {
  struct Case {
    double sigma, epochs, eps;
  };
  for (const Case& c : {Case{1.1, 60, 3.01}, Case{1.3, 15, 1.19}, Case{0.7, 45, 7.10}}) {
    auto e = DpSgdEpsilonForEpochs(60000, 256, c.sigma, c.epochs, 1e-5, RdpConversion::kClassic);
    ASSERT_TRUE(e.ok());
    EXPECT_NEAR(e->epsilon, c.eps, 0.006) << "sigma " << c.sigma;
    auto better =
        DpSgdEpsilonForEpochs(60000, 256, c.sigma, c.epochs, 1e-5, RdpConversion::kImproved);
    EXPECT_LE(better->epsilon, e->epsilon);
  }
  // The improved conversion on the tutorial setting: a regression value of
  // ours (2.597), not a published one; it must stay below the classic 3.01.
  auto improved = DpSgdEpsilonForEpochs(60000, 256, 1.1, 60, 1e-5, RdpConversion::kImproved);
  EXPECT_NEAR(improved->epsilon, 2.597, 0.005);
}

TEST(RdpAccountantTest, NoiseMultiplierForEpsilonInvertsTheAccountant) {
  const auto epsilon = [](double sigma) {
    return ComputeDpSgdEpsilon(0.01, sigma, 10000, 1e-5, DefaultRdpOrders(),
                               RdpConversion::kImproved)
        ->epsilon;
  };
  for (double target : {0.5, 1.0, 4.0, 8.0}) {
    auto sigma = NoiseMultiplierForEpsilon(epsilon, target);
    ASSERT_TRUE(sigma.ok()) << sigma.status();
    EXPECT_LE(epsilon(*sigma), target);
    EXPECT_GT(epsilon(*sigma * (1 - 1e-5)), target) << "the smallest sigma that reaches it";
  }
  EXPECT_EQ(NoiseMultiplierForEpsilon(epsilon, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(NoiseMultiplierForEpsilon([](double) { return 1e9; }, 1.0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(RdpAccountantTest, LimitsAndOrders) {
  EXPECT_EQ(SampledGaussianRdp(0, 1, 2), 0);
  EXPECT_DOUBLE_EQ(SampledGaussianRdp(1, 2, 3), 3.0 / 8);  // alpha / (2 sigma^2)
  // Fractional orders interpolate their integer neighbours monotonically.
  const double r2 = SampledGaussianRdp(0.01, 1, 2), r25 = SampledGaussianRdp(0.01, 1, 2.5),
               r3 = SampledGaussianRdp(0.01, 1, 3);
  EXPECT_LT(r2, r25);
  EXPECT_LT(r25, r3);
  // Order 2 has a closed form: log(1 + q^2 (e^{1/sigma^2} - 1)).
  for (double q : {1e-3, 0.01, 0.3}) {
    for (double sigma : {0.8, 4.0}) {
      EXPECT_NEAR(SampledGaussianRdp(q, sigma, 2),
                  std::log1p(q * q * std::expm1(1 / (sigma * sigma))), 1e-12);
    }
  }
  EXPECT_FALSE(
      ComputeDpSgdEpsilon(0.1, 0, 10, 1e-5, DefaultRdpOrders(), RdpConversion::kClassic).ok());
}

}  // namespace
}  // namespace memaudit::engine
