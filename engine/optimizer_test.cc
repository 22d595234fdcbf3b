#include "engine/optimizer.h"

#include <cstring>
#include <vector>

#include "gtest/gtest.h"

namespace memaudit::engine {
namespace {

// Parameters of sizes around the vector widths (tails of every length) and
// one past a parallel chunk of ATen's.
std::vector<torch::Tensor> Parameters(uint64_t seed) {
  torch::manual_seed(seed);
  std::vector<torch::Tensor> params;
  for (int64_t n : {1, 7, 15, 16, 17, 33, 1000, 70001, 200003}) {
    params.push_back(torch::randn({n}).requires_grad_());
  }
  params.push_back(torch::randn({32, 13, 27}).requires_grad_());
  return params;
}

bool SameBits(const torch::Tensor& a, const torch::Tensor& b) {
  return a.sizes() == b.sizes() &&
         std::memcmp(a.data_ptr<float>(), b.data_ptr<float>(), a.numel() * sizeof(float)) == 0;
}

// Steps two copies of the same parameters with the same gradients, one by
// LibTorch's step(), one by OptimizerStep, and compares every bit after
// each step (momenta included, through the parameters they move).
// `one_pass`: whether OptimizerStep should take its one-pass update after
// the first step (the first of momentum SGD is LibTorch's: it makes the buffers).
void ExpectSameSteps(const OptimizerSpec& spec, bool one_pass) {
  std::vector<torch::Tensor> theirs = Parameters(1), ours = Parameters(1);
  auto by_torch = MakeOptimizer(theirs, spec), by_us = MakeOptimizer(ours, spec);
  ASSERT_TRUE(by_torch.ok() && by_us.ok());
  for (int step = 0; step < 5; ++step) {
    torch::manual_seed(100 + step);
    for (size_t i = 0; i < ours.size(); ++i) {
      const torch::Tensor g = torch::randn(ours[i].sizes()) * 3;
      theirs[i].mutable_grad() = g.clone();
      ours[i].mutable_grad() = g.clone();
    }
    SetLearningRate(**by_torch, 0.05 * (step + 1));
    SetLearningRate(**by_us, 0.05 * (step + 1));
    {
      torch::NoGradGuard no_grad;
      (*by_torch)->step();
    }
    const bool first_is_torchs = spec.kind == OptimizerKind::kMomentum && step == 0;
    EXPECT_EQ(OptimizerStep(**by_us), one_pass && !first_is_torchs) << "step " << step;
    for (size_t i = 0; i < ours.size(); ++i) {
      ASSERT_TRUE(SameBits(theirs[i].detach(), ours[i].detach()))
          << "parameter " << i << " (" << ours[i].numel() << " values) after step " << step;
    }
  }
}

OptimizerSpec Spec(OptimizerKind kind, double learning_rate, double momentum = 0,
                   double weight_decay = 0) {
  OptimizerSpec spec;
  spec.kind = kind;
  spec.learning_rate = learning_rate;
  spec.momentum = momentum;
  spec.weight_decay = weight_decay;
  return spec;
}

TEST(OptimizerStepTest, MomentumSgdMatchesLibTorchToTheBit) {
  ExpectSameSteps(Spec(OptimizerKind::kMomentum, 0.05, 0.9, 0), /*one_pass=*/true);
}

TEST(OptimizerStepTest, MomentumSgdWithWeightDecayMatchesLibTorchToTheBit) {
  ExpectSameSteps(Spec(OptimizerKind::kMomentum, 0.1, 0.7, 5e-4), /*one_pass=*/true);
}

// Both split the large parameters over threads (ATen's passes and the
// one-pass update alike): the split changes no bit.
TEST(OptimizerStepTest, MomentumSgdOnThreeThreadsMatchesLibTorchToTheBit) {
  const int before = torch::get_num_threads();
  torch::set_num_threads(3);
  ExpectSameSteps(Spec(OptimizerKind::kMomentum, 0.05, 0.9, 1e-4), /*one_pass=*/true);
  torch::set_num_threads(before);
}

TEST(OptimizerStepTest, PlainSgdMatchesLibTorchToTheBit) {
  ExpectSameSteps(Spec(OptimizerKind::kSgd, 0.3), /*one_pass=*/true);
  ExpectSameSteps(Spec(OptimizerKind::kSgd, 0.3, 0, 1e-3), /*one_pass=*/true);
}

// LibTorch decides on the double whether to decay; a decay whose float32
// is 0 would take another path in the one-pass update, so it does not.
TEST(OptimizerStepTest, AFactorOnlyFloatRoundsToZeroTakesLibTorchsStep) {
  ExpectSameSteps(Spec(OptimizerKind::kSgd, 0.3, 0, 1e-50), /*one_pass=*/false);
}

TEST(OptimizerStepTest, OtherOptimizersTakeLibTorchsStep) {
  ExpectSameSteps(Spec(OptimizerKind::kAdam, 0.01), /*one_pass=*/false);
}

}  // namespace
}  // namespace memaudit::engine
