// bench/scoring: LiRA and RMIA at scale on one core, and the sorted RMIA
// against the dense O(n^2) comparison it replaces, measured in the same run;
// then the balanced accuracy's bootstrap interval over every pair, eight
// resamples per pass against one; then one attack's statistics as the
// scorer computes them (curve, AUC interval, balanced-accuracy interval),
// each function ranking the pairs alone against one shared ranking, on one
// thread and with the bootstrap's passes on two; the radix sort that
// ranks them against std::sort; and one attack's re-run intervals, the
// pigeonhole bootstrap alone against it joined with 32 rescored halves.
//
//   build/bin/scoring_bench [models=256] [examples=50000] [repeats=3]
//   build/bin/scoring_bench 32 2000     # the quickstart's shape
//   build/bin/scoring_bench 32 10000 5  # an MLP audit's 320,000 pairs
//
// Prints median wall times and the ratios old / new.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <vector>

#include "common/base/seeding.h"
#include "common/base/status_macros.h"
#include "scoring/auc_interval.h"
#include "scoring/balanced_accuracy_interval.h"
#include "scoring/fixed_bound_uniform.h"
#include "scoring/lira.h"
#include "scoring/ranked_scores.h"
#include "scoring/rerun_interval.h"
#include "scoring/rmia.h"
#include "scoring/roc.h"

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

namespace scoring = memaudit::scoring;

// What the scorer reports of one attack from its pooled pairs.
struct Statistics {
  scoring::RocCurve roc;
  scoring::ClusteredAuc clustered;
  scoring::BootstrapInterval balanced;
};

struct Pairs {
  std::vector<double> scores;
  std::vector<uint8_t> member;
  std::vector<uint32_t> example_of;
  uint32_t examples = 0;
};

// Each function on its own, ranking the scores itself (the plain entry
// points, one thread).
Statistics Alone(const Pairs& p) {
  Statistics s;
  s.roc = *scoring::ComputeRoc(p.scores, p.member);
  s.clustered = *scoring::ClusteredAucInterval(p.scores, p.member, p.example_of, p.examples);
  s.balanced = *scoring::BalancedAccuracyInterval(p.scores, p.member, p.example_of, p.examples, 1);
  return s;
}

// One ranking shared by the three, as ScoreMembership does, the bootstrap's
// passes on `threads`.
Statistics Ranked(const Pairs& p, uint32_t threads) {
  const scoring::RankedScores ranked = *scoring::RankedScores::Rank(p.scores);
  Statistics s;
  s.roc = *scoring::ComputeRoc(ranked, p.member);
  s.clustered = *scoring::ClusteredAucInterval(ranked, p.member, p.example_of, p.examples);
  s.balanced =
      *scoring::BalancedAccuracyInterval(ranked, p.member, p.example_of, p.examples, 1,
                                         scoring::kBalancedAccuracyResamples, 0.95, threads);
  return s;
}

bool SameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// The numbers the scorer reports, to the bit (a performance claim is void
// if the fast path computes something else).
bool SameResults(const Statistics& a, const Statistics& b) {
  return a.roc.thresholds == b.roc.thresholds && a.roc.tpr == b.roc.tpr && a.roc.fpr == b.roc.fpr &&
         SameBits(a.clustered.auc, b.clustered.auc) &&
         SameBits(a.clustered.interval.lo, b.clustered.interval.lo) &&
         SameBits(a.clustered.interval.hi, b.clustered.interval.hi) &&
         SameBits(a.balanced.estimate, b.balanced.estimate) &&
         SameBits(a.balanced.interval.lo, b.balanced.interval.lo) &&
         SameBits(a.balanced.interval.hi, b.balanced.interval.hi);
}

void BenchOneAttack(const Matrix& phi, const KeepMatrix& keep, size_t examples, int repeats) {
  Pairs p;
  p.scores = *scoring::LiraScoresAllTargets(phi, keep, {});
  p.member = keep.data;
  p.examples = static_cast<uint32_t>(examples);
  p.example_of.resize(p.scores.size());
  for (size_t i = 0; i < p.example_of.size(); ++i) p.example_of[i] = i % examples;
  Statistics alone, one, two;
  const double t_alone = MedianSeconds(repeats, [&] { alone = Alone(p); });
  const double t_one = MedianSeconds(repeats, [&] { one = Ranked(p, 1); });
  const double t_two = MedianSeconds(repeats, [&] { two = Ranked(p, 2); });
  if (!SameResults(alone, one) || !SameResults(alone, two)) {
    std::fprintf(stderr, "the ranked statistics differ from the plain ones\n");
    std::abort();
  }
  // A comparison sort of the pairs (what each function made before it
  // ranked them), against the ranking's radix sort.
  const double t_sort = MedianSeconds(repeats, [&] {
    std::vector<uint32_t> order(p.scores.size());
    std::iota(order.begin(), order.end(), 0u);
    std::sort(order.begin(), order.end(),
              [&](uint32_t a, uint32_t b) { return p.scores[a] > p.scores[b]; });
  });
  const double t_radix =
      MedianSeconds(repeats, [&] { scoring::internal::DescendingOrder(p.scores); });
  // The bootstrap's draws: a resample per lane, as many clusters as examples.
  const size_t draws = size_t{scoring::kBalancedAccuracyResamples} * examples;
  uint64_t sink = 0;
  const double t_uniform = MedianSeconds(repeats, [&] {
    memaudit::SplitMix64 rng(1);
    for (size_t i = 0; i < draws; ++i) sink += rng.Uniform(examples);
  });
  const scoring::FixedBoundUniform draw(examples);
  const double t_fixed = MedianSeconds(repeats, [&] {
    memaudit::SplitMix64 rng(1);
    for (size_t i = 0; i < draws; ++i) sink -= draw(rng);
  });
  if (sink != 0) std::abort();  // the same draws
  std::printf("one attack's curve + AUC and balanced-accuracy intervals, %zu pairs:\n",
              p.scores.size());
  std::printf("... each function ranking alone, one thread: %8.3f s\n", t_alone);
  std::printf("... one shared ranking, one thread:          %8.3f s\n", t_one);
  std::printf("... one shared ranking, bootstrap on two:    %8.3f s\n", t_two);
  std::printf("ratio alone / ranked, one thread:            %8.2fx\n", t_alone / t_one);
  std::printf("ratio alone / ranked, two threads:           %8.2fx\n", t_alone / t_two);
  std::printf("ratio std::sort / radix sort of the pairs:   %8.2fx (%.4f s / %.4f s)\n",
              t_sort / t_radix, t_sort, t_radix);
  std::printf("ratio Uniform / FixedBoundUniform, %zu draws: %6.2fx (%.4f s / %.4f s)\n", draws,
              t_uniform / t_fixed, t_uniform, t_fixed);
}

}  // namespace

// One LiRA attack's re-run intervals as the scorer computes them: the
// pigeonhole bootstrap over its fixed scores alone, against it joined with
// the half-sampled one, which rescores 32 random halves of the models (kHalfSampleResamples).
void BenchRerunIntervals(const Matrix& phi, const KeepMatrix& keep, size_t examples, int repeats) {
  namespace scoring = memaudit::scoring;
  const size_t models = phi.rows;
  auto scores = scoring::LiraScoresAllTargets(phi, keep);
  auto ranked = scoring::RankedScores::Rank(*scores);
  if (!scores.ok() || !ranked.ok()) std::abort();
  std::vector<uint32_t> model_of(models * examples), example_of(models * examples);
  for (size_t i = 0; i < model_of.size(); ++i) {
    model_of[i] = static_cast<uint32_t>(i / examples);
    example_of[i] = static_cast<uint32_t>(i % examples);
  }
  const std::vector<double> fpr = {0.01, 0.001};
  const auto m = static_cast<uint32_t>(models), e = static_cast<uint32_t>(examples);
  const double pigeonhole = MedianSeconds(repeats, [&] {
    if (!scoring::RerunIntervalsOf(*ranked, keep.data, model_of, m, example_of, e, fpr, 1).ok()) {
      std::abort();
    }
  });
  const scoring::RescoreFn rescore =
      [&](absl::Span<const uint32_t> half) -> absl::StatusOr<scoring::SubsetScores> {
    Matrix sub(half.size(), examples);
    KeepMatrix sub_keep(half.size(), examples);
    for (size_t i = 0; i < half.size(); ++i) {
      std::copy(phi.row(half[i]), phi.row(half[i]) + examples, sub.row(i));
      std::copy(keep.row(half[i]), keep.row(half[i]) + examples, sub_keep.row(i));
    }
    scoring::SubsetScores out;
    MEMAUDIT_ASSIGN_OR_RETURN(out.scores, scoring::LiraScoresAllTargets(sub, sub_keep));
    out.is_member = std::move(sub_keep.data);
    return out;
  };
  const double both = MedianSeconds(repeats, [&] {
    auto a = scoring::RerunIntervalsOf(*ranked, keep.data, model_of, m, example_of, e, fpr, 1);
    auto b = scoring::HalfSampledRerunIntervals(*ranked, keep.data, m, e, rescore, fpr, 1);
    if (!a.ok() || !b.ok()) std::abort();
    (void)scoring::UnionOf(*a, *b);
  });
  std::printf("re-run intervals of one LiRA attack, %zu pairs:\n", models * examples);
  std::printf("... pigeonhole bootstrap alone:             %8.3f s\n", pigeonhole);
  std::printf("... and 32 rescored halves (the scorer's):  %8.3f s\n", both);
  std::printf("ratio scorer's / pigeonhole alone:          %8.2fx\n", both / pigeonhole);
}

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
  BenchOneAttack(phi, keep, examples, repeats);
  BenchRerunIntervals(phi, keep, examples, repeats);
  return 0;
}
