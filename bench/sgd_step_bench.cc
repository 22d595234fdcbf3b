// bench/sgd_step: momentum SGD's update of a stacked ensemble's parameters,
// LibTorch's step() against OptimizerStep's one pass (engine/optimizer.h),
// alternating in the same run on copies of the same parameters and
// gradients; aborts unless both leave the same bits.
//
//   build/bin/sgd_step_bench [--members=16] [--hidden=256] [--steps=200]
//       [--reps=5] [--threads=1] [--weight_decay=0]
//
// Prints the median seconds per step of each and their ratio.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bench/bench_util.h"
#include "engine/optimizer.h"

using namespace memaudit;          // NOLINT
using namespace memaudit::engine;  // NOLINT

namespace {

// A stacked MLP 784-hidden-10's parameters, K members: [K, hidden, 784],
// [K, 1, hidden], [K, 10, hidden], [K, 1, 10].
std::vector<torch::Tensor> Parameters(int64_t members, int64_t hidden) {
  torch::manual_seed(7);
  std::vector<torch::Tensor> params;
  for (auto shape : std::vector<std::vector<int64_t>>{
           {members, hidden, 784}, {members, 1, hidden}, {members, 10, hidden}, {members, 1, 10}}) {
    params.push_back(torch::randn(shape).requires_grad_());
  }
  return params;
}

// Seconds per step over `steps` steps, gradients set fresh each step (as a
// training step leaves them) outside the clock.
double SecondsPerStep(torch::optim::Optimizer& opt, std::vector<torch::Tensor>& params,
                      const std::vector<torch::Tensor>& grads, int steps, bool one_pass) {
  double total = 0;
  for (int s = 0; s < steps; ++s) {
    for (size_t i = 0; i < params.size(); ++i) params[i].mutable_grad() = grads[i].clone();
    const double t0 = bench::Seconds();
    if (one_pass) {
      OptimizerStep(opt);
    } else {
      torch::NoGradGuard no_grad;
      opt.step();
    }
    total += bench::Seconds() - t0;
  }
  return total / steps;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t members = bench::FlagInt(argc, argv, "members", 16);
  const int64_t hidden = bench::FlagInt(argc, argv, "hidden", 256);
  const int steps = static_cast<int>(bench::FlagInt(argc, argv, "steps", 200));
  const int reps = static_cast<int>(bench::FlagInt(argc, argv, "reps", 5));
  const int threads = static_cast<int>(bench::FlagInt(argc, argv, "threads", 1));
  const double weight_decay = std::atof(bench::Flag(argc, argv, "weight_decay", "0").c_str());
  torch::set_num_threads(threads);

  OptimizerSpec spec;
  spec.kind = OptimizerKind::kMomentum;
  spec.learning_rate = 0.05;
  spec.momentum = 0.9;
  spec.weight_decay = weight_decay;
  std::vector<torch::Tensor> theirs = Parameters(members, hidden),
                             ours = Parameters(members, hidden);
  std::vector<torch::Tensor> grads;
  for (const auto& p : theirs) grads.push_back(torch::randn(p.sizes()) * 0.01);
  auto by_torch = MakeOptimizer(theirs, spec), by_us = MakeOptimizer(ours, spec);
  if (!by_torch.ok() || !by_us.ok()) return 1;
  int64_t values = 0;
  for (const auto& p : theirs) values += p.numel();

  std::vector<double> torch_s, one_pass_s;
  for (int r = 0; r < reps; ++r) {
    torch_s.push_back(SecondsPerStep(**by_torch, theirs, grads, steps, /*one_pass=*/false));
    one_pass_s.push_back(SecondsPerStep(**by_us, ours, grads, steps, /*one_pass=*/true));
  }
  for (size_t i = 0; i < theirs.size(); ++i) {
    const torch::Tensor a = theirs[i].detach(), b = ours[i].detach();
    if (std::memcmp(a.data_ptr<float>(), b.data_ptr<float>(), a.numel() * sizeof(float)) != 0) {
      std::fprintf(stderr, "parameter %zu differs between step() and OptimizerStep\n", i);
      return 1;
    }
  }
  const double t = bench::Median(torch_s), o = bench::Median(one_pass_s);
  std::printf(
      "momentum SGD on %lld members of 784-%lld-10 (%lld values), %d thread(s), %d steps x %d "
      "reps\n",
      static_cast<long long>(members), static_cast<long long>(hidden),
      static_cast<long long>(values), threads, steps, reps);
  std::printf("LibTorch step():        %.1f us per step (median)\n", t * 1e6);
  std::printf("OptimizerStep one pass: %.1f us per step (median), the same bits\n", o * 1e6);
  std::printf("RESULT step() / one pass: %.2fx\n", t / o);
  std::printf(
      "reproduce: build/bin/sgd_step_bench --members=%lld --hidden=%lld --steps=%d --reps=%d "
      "--threads=%d --weight_decay=%g\n",
      static_cast<long long>(members), static_cast<long long>(hidden), steps, reps, threads,
      weight_decay);
  return 0;
}
