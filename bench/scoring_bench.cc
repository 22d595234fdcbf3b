// bench/scoring: LiRA and RMIA at scale on one core, and the sorted RMIA
// against the dense O(n^2) comparison it replaces, measured in the same run;
// then the balanced accuracy's bootstrap interval over every pair, eight
// resamples per pass against one.
//
//   build/bin/scoring_bench [models=256] [examples=50000] [repeats=3]
//   build/bin/scoring_bench 32 2000     # the quickstart's shape
//
// Prints median wall times and the ratio dense / sorted.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "common/seeding.h"
#include "scoring/balanced_accuracy_interval.h"
#include "scoring/lira.h"
#include "scoring/rmia.h"

namespace {

using memaudit::SplitMix64;
using memaudit::scoring::KeepMatrix;
using memaudit::scoring::Matrix;

double MedianSeconds(int repeats, const std::function<void()>& run) {
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    run();
    times.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// Signals shaped like real ones: per-example difficulty plus a membership shift.
void MakeSignals(size_t models, size_t examples, Matrix* phi, KeepMatrix* keep) {
  const memaudit::KeepMatrix bits = memaudit::BuildKeepMatrix(1, models, examples);
  *keep = KeepMatrix(models, examples, bits.bits);
  *phi = Matrix(models, examples);
  SplitMix64 rng(2);
  std::vector<double> difficulty(examples);
  for (double& d : difficulty) d = 4 * rng.UniformDouble() - 2;
  for (size_t m = 0; m < models; ++m) {
    for (size_t j = 0; j < examples; ++j) {
      phi->at(m, j) = difficulty[j] + (bits.in(m, j) ? 1.0 : 0.0) + rng.UniformDouble();
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const size_t models = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 256;
  const size_t examples = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 50000;
  const int repeats = argc > 3 ? std::atoi(argv[3]) : 3;
  Matrix phi;
  KeepMatrix keep;
  MakeSignals(models, examples, &phi, &keep);
  std::printf("scoring bench: %zu models x %zu examples, one core, median of %d\n", models,
              examples, repeats);

  memaudit::scoring::LiraOptions online;
  const double lira = MedianSeconds(repeats, [&] {
    auto scores = memaudit::scoring::LiraScoresAllTargets(phi, keep, online);
    if (!scores.ok()) std::abort();
  });
  std::printf("LiRA online, every model as target:      %8.3f s\n", lira);

  // RMIA for target 0 against the other models; Pr(x|theta) = sigmoid(phi).
  auto probability = [](double v) { return 1 / (1 + std::exp(-v)); };
  std::vector<double> target(examples);
  Matrix refs(models - 1, examples);
  for (size_t j = 0; j < examples; ++j) {
    target[j] = probability(phi.at(0, j));
    for (size_t m = 1; m < models; ++m) refs.at(m - 1, j) = probability(phi.at(m, j));
  }
  const double rmia = MedianSeconds(repeats, [&] {
    auto scores = memaudit::scoring::RmiaScores(target, refs, target, refs);
    if (!scores.ok()) std::abort();
  });
  const double rmia_dense = MedianSeconds(1, [&] {
    auto scores = memaudit::scoring::RmiaScoresDense(target, refs, target, refs);
    if (!scores.ok()) std::abort();
  });
  std::printf("RMIA sorted, one target, %zu references: %8.3f s\n", models - 1, rmia);
  std::printf("RMIA dense O(n^2), same inputs:          %8.3f s\n", rmia_dense);
  std::printf("total LiRA + RMIA:                       %8.3f s (target < 2 s)\n", lira + rmia);
  std::printf("ratio dense / sorted RMIA:               %8.1fx\n", rmia_dense / rmia);

  // One attack's interval over all (model, example) pairs, clustered by
  // example, as the scorer computes it.
  std::vector<uint32_t> example_of(models * examples);
  for (size_t i = 0; i < example_of.size(); ++i) example_of[i] = i % examples;
  const double interval = MedianSeconds(repeats, [&] {
    auto ba = memaudit::scoring::BalancedAccuracyInterval(phi.data, keep.data, example_of,
                                                          static_cast<uint32_t>(examples), 1);
    if (!ba.ok()) std::abort();
  });
  // The same interval with every resample on the one-resample pass (the
  // bits are the same; only the eight-lane batching differs).
  const double one_at_a_time = MedianSeconds(repeats, [&] {
    auto ba = memaudit::scoring::internal::BalancedAccuracyIntervalWithBatchLimit(
        phi.data, keep.data, example_of, static_cast<uint32_t>(examples), 1, 0);
    if (!ba.ok()) std::abort();
  });
  std::printf("balanced-accuracy interval, %u resamples over %zu pairs: %8.3f s\n",
              memaudit::scoring::kBalancedAccuracyResamples, models * examples, interval);
  std::printf("... one resample per pass:                %8.3f s\n", one_at_a_time);
  std::printf("ratio one per pass / eight per pass:       %8.2fx\n", one_at_a_time / interval);
  std::printf("inputs: %.1f MiB (models x examples x 8 bytes, linear in both)\n",
              models * examples * 8.0 / (1 << 20));
  return 0;
}
