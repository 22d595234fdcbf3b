// One forgetting trial (Inject) with its arms packed into one ensemble after
// the fork versus the same trial with the arms trained one at a time, on
// Fashion-MNIST, interleaved rep by rep in one process. Both give the same
// bits (engine test PackedArmsEqualArmsTrainedOneAtATime); this measures time.
//
// --hidden above 64 is refused: RunForgetting does not pack such arms (this
// bench measured why).
//
//   build-engine/bin/forgetting_bench [--hidden=0] [--batch=128] [--before=200]
//       [--after=1000] [--references=0] [--replay=0] [--threads=1] [--reps=5]
#include <cstdio>

#include "bench/bench_util.h"
#include "data/labeled_examples.h"
#include "engine/forgetting_run.h"

using namespace memaudit;          // NOLINT
using namespace memaudit::engine;  // NOLINT

int main(int argc, char** argv) {
  const uint32_t hidden = static_cast<uint32_t>(bench::FlagInt(argc, argv, "hidden", 0));
  const uint32_t batch = static_cast<uint32_t>(bench::FlagInt(argc, argv, "batch", 128));
  const uint64_t before = static_cast<uint64_t>(bench::FlagInt(argc, argv, "before", 200));
  const uint64_t after = static_cast<uint64_t>(bench::FlagInt(argc, argv, "after", 1000));
  const uint32_t references = static_cast<uint32_t>(bench::FlagInt(argc, argv, "references", 0));
  const bool replay = bench::FlagInt(argc, argv, "replay", 0) != 0;
  const uint32_t threads = static_cast<uint32_t>(bench::FlagInt(argc, argv, "threads", 1));
  const int reps = static_cast<int>(bench::FlagInt(argc, argv, "reps", 5));
  if (hidden > 64) {
    std::fprintf(stderr, "--hidden: at most 64 (wider arms are not packed)\n");
    return 2;
  }
  auto images = data::LoadMnistLayout(data::kFashionMnistDir, "train");
  if (!images.ok()) {
    std::fprintf(stderr, "Fashion-MNIST: %s\n", images.status().ToString().c_str());
    return 1;
  }
  ForgettingRunSpec spec;
  for (uint32_t i = 0; i < 10000; ++i) spec.clean_rows.push_back(i);
  for (uint32_t i = 10000; i < 10100; ++i) {
    spec.injected_rows.push_back(i);
    spec.injected_labels.push_back(static_cast<uint8_t>(((*images)->labels[i] + 1) % 10));
  }
  if (hidden > 0) spec.hidden = {hidden};
  spec.optimizer.kind = OptimizerKind::kMomentum;
  spec.optimizer.learning_rate = 0.05;
  spec.optimizer.momentum = 0.9;
  spec.batch_size = batch;
  spec.steps_before = before;
  spec.eval_points = {0, 10, 100, after};
  spec.replay = replay;
  spec.reference_models = references;
  spec.threads = threads;
  std::vector<double> packed_s, alone_s;
  for (int r = 0; r < reps; ++r) {
    for (bool pack : {true, false}) {
      spec.pack_arms = pack;
      const double t0 = bench::Seconds();
      auto result = RunForgetting(**images, spec, nullptr);
      const double t = bench::Seconds() - t0;
      if (!result.ok() || result->packed != pack) {
        std::fprintf(stderr, "run failed: %s\n", result.status().ToString().c_str());
        return 1;
      }
      (pack ? packed_s : alone_s).push_back(t);
    }
  }
  const uint32_t arms = 2 + (replay ? 1 : 0) + references;
  std::printf("forgetting trial, %u arms, %s, batch %u, T_I %lu, %lu steps after, %u thread(s)\n",
              arms, hidden > 0 ? ("784-" + std::to_string(hidden) + "-10 MLP").c_str() : "logreg",
              batch, static_cast<unsigned long>(before), static_cast<unsigned long>(after),
              threads);
  std::printf("arms one at a time: %.3f s (median of %d)\n", bench::Median(alone_s), reps);
  std::printf("arms packed:        %.3f s\n", bench::Median(packed_s));
  std::printf("packed / one at a time speed-up: %.2fx\n",
              bench::Median(alone_s) / bench::Median(packed_s));
  std::printf(
      "reproduce: build-engine/bin/forgetting_bench --hidden=%u --batch=%u --before=%lu "
      "--after=%lu --references=%u --replay=%d --threads=%u --reps=%d\n",
      hidden, batch, static_cast<unsigned long>(before), static_cast<unsigned long>(after),
      references, replay ? 1 : 0, threads, reps);
  return 0;
}
