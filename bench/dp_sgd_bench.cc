// DP-SGD steps per second with the batched per-example gradients (one
// forward, one backward to the layer outputs) versus the per-example loop (a
// backward per example), in the same process on the same synthetic batches:
// an MLP 784-H-10 (no hidden layer with --hidden=0: logistic regression),
// plain SGD 0.05, clip norm --clip, noise multiplier --sigma. Both arms start
// from the same weights and generators; the first step's norms and gradients
// are compared.
//
//   build-engine/bin/dp_sgd_bench [--hidden=256] [--batch=64] [--steps=20]
//       [--dropout=0] [--clip=1] [--sigma=1] [--threads=1] [--reps=5]
//       [--device=cpu]
#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "engine/dp_sgd.h"

using namespace memaudit;          // NOLINT
using namespace memaudit::engine;  // NOLINT

namespace {

struct Arm {
  std::shared_ptr<Model> model;
  std::unique_ptr<torch::optim::SGD> sgd;
  at::Generator noise = at::make_generator<at::CPUGeneratorImpl>(7);
  at::Generator dropout = at::make_generator<at::CPUGeneratorImpl>(8);
  bool batched = false;
};

// On the heap: the model keeps a pointer to the arm's dropout generator.
std::unique_ptr<Arm> MakeArm(const ModelSpec& spec, torch::Device device) {
  auto arm = std::make_unique<Arm>();
  Arm& a = *arm;
  a.model = *BuildModel(spec, 1);
  a.model->to(device);
  a.model->train();
  a.model->set_dropout_generator(&a.dropout);
  a.sgd =
      std::make_unique<torch::optim::SGD>(a.model->parameters(), torch::optim::SGDOptions(0.05));
  return arm;
}

DpGradientStats Step(Arm& arm, const Batch& batch, const DpSgdOptions& dp,
                     PerExampleGradients method) {
  arm.sgd->zero_grad();
  DpGradientStats stats = PrivateGradient(*arm.model, batch, dp, arm.noise, method);
  arm.sgd->step();
  arm.batched = stats.batched;
  return stats;
}

}  // namespace

int main(int argc, char** argv) {
  const uint32_t hidden = static_cast<uint32_t>(bench::FlagInt(argc, argv, "hidden", 256));
  const int64_t batch_size = bench::FlagInt(argc, argv, "batch", 64);
  const int steps = static_cast<int>(bench::FlagInt(argc, argv, "steps", 20));
  const int threads = static_cast<int>(bench::FlagInt(argc, argv, "threads", 1));
  const int reps = static_cast<int>(bench::FlagInt(argc, argv, "reps", 5));
  const double dropout = std::atof(bench::Flag(argc, argv, "dropout", "0").c_str());
  const double clip = std::atof(bench::Flag(argc, argv, "clip", "1").c_str());
  const double sigma = std::atof(bench::Flag(argc, argv, "sigma", "1").c_str());
  const std::string device_name = bench::Flag(argc, argv, "device", "cpu");
  torch::set_num_threads(threads);
  const torch::Device device(device_name);

  ModelSpec spec;
  spec.kind = hidden == 0 ? ModelKind::kLogReg : ModelKind::kMlp;
  spec.inputs = 784;
  spec.classes = 10;
  if (hidden > 0) spec.hidden = {hidden};
  spec.dropout = dropout;
  DpSgdOptions dp;
  dp.enabled = true;
  dp.clip_norm = clip;
  dp.noise_multiplier = sigma;
  // Synthetic 784-feature blobs, one batch per step.
  const TensorDataset data = SyntheticBlobs(batch_size * steps, 784, 10, 1.0, 1);
  std::vector<Batch> batches;
  for (int s = 0; s < steps; ++s) {
    std::vector<int64_t> ids;
    for (int64_t i = 0; i < batch_size; ++i) ids.push_back(s * batch_size + i);
    Batch b = data.Gather(ids);
    batches.push_back({b.x.to(device), b.y.to(device)});
  }

  // Agreement on the first step from identical weights and generators.
  std::unique_ptr<Arm> fast = MakeArm(spec, device), loop = MakeArm(spec, device);
  const DpGradientStats fs = Step(*fast, batches[0], dp, PerExampleGradients::kAuto);
  const DpGradientStats ls = Step(*loop, batches[0], dp, PerExampleGradients::kLoop);
  double norm_rel = 0, grad_rel = 0;
  int clipped = 0;
  for (size_t i = 0; i < ls.norms.size(); ++i) {
    norm_rel = std::max(norm_rel, std::abs(fs.norms[i] - ls.norms[i]) / ls.norms[i]);
    clipped += ls.norms[i] > clip;
  }
  const auto fp = fast->model->parameters(), lp = loop->model->parameters();
  for (size_t k = 0; k < fp.size(); ++k) {
    grad_rel = std::max(
        grad_rel,
        ((fp[k].grad() - lp[k].grad()).abs().max() / lp[k].grad().abs().max()).item<double>());
  }

  std::vector<double> fast_s, loop_s;
  for (int r = 0; r < reps; ++r) {
    // Alternate which arm goes first so drift in machine load hits both.
    for (int arm = 0; arm < 2; ++arm) {
      const bool batched = (arm + r) % 2 == 0;
      std::unique_ptr<Arm> a = MakeArm(spec, device);
      const double t0 = bench::Seconds();
      for (const Batch& b : batches) {
        Step(*a, b, dp, batched ? PerExampleGradients::kAuto : PerExampleGradients::kLoop);
      }
      if (device.is_cuda()) torch::cuda::synchronize();
      (batched ? fast_s : loop_s).push_back(bench::Seconds() - t0);
      if (batched && !a->batched) std::printf("note: kAuto fell back to the loop\n");
    }
  }
  const double fast_med = bench::Median(fast_s), loop_med = bench::Median(loop_s);
  const std::string arch =
      hidden == 0 ? "logistic regression 784-10" : "MLP 784-" + std::to_string(hidden) + "-10";
  std::printf(
      "%s, dropout %g, batch %lld, %d steps per rep, clip %g, sigma %g, %d thread(s), device %s\n",
      arch.c_str(), dropout, static_cast<long long>(batch_size), steps, clip, sigma, threads,
      device_name.c_str());
  std::printf(
      "first step: %d/%zu examples clipped, max relative difference norms %.2e, "
      "gradient %.2e\n",
      clipped, ls.norms.size(), norm_rel, grad_rel);
  std::printf("per-example loop: %.2f ms/step (median %.3f s per rep)\n", 1e3 * loop_med / steps,
              loop_med);
  std::printf("batched (%s):    %.2f ms/step (median %.3f s per rep)\n",
              fast->batched ? "ghost norms" : "fell back to the loop", 1e3 * fast_med / steps,
              fast_med);
  std::printf("RESULT dp-sgd batched vs per-example loop: %.1fx (ratio of medians; per-rep:",
              loop_med / fast_med);
  for (int r = 0; r < reps; ++r) std::printf(" %.1fx", loop_s[r] / fast_s[r]);
  std::printf(")\n");
  std::printf(
      "reproduce: build-engine/bin/dp_sgd_bench --hidden=%u --batch=%lld --steps=%d --dropout=%g "
      "--clip=%g --sigma=%g --threads=%d --reps=%d --device=%s\n",
      hidden, static_cast<long long>(batch_size), steps, dropout, clip, sigma, threads, reps,
      device_name.c_str());
  return 0;
}
