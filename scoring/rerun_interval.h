// Intervals for what a re-run of a membership audit would show. An audit's
// numbers vary between runs for reasons the sampling of examples alone does
// not capture: each target model is one draw of training randomness, and
// another seed draws other models, other halves and another pool. Measured
// on the quickstart (bench/interval_coverage.py), the example-sampling
// intervals (auc_interval.h, balanced_accuracy_interval.h, Clopper-Pearson
// on a TPR) held another seed's value in 7-64% of the pairs of runs.
//
// The re-run interval of a statistic T of the pooled (target model,
// example) pairs:
//   T ± z · √2 · SE,   z = 1.96 (95%),
// where SE is the standard deviation of T over a two-way ("pigeonhole")
// bootstrap, Owen, "The pigeonhole bootstrap", Annals of Applied Statistics
// 2007: each resample draws the target models with replacement (M of M)
// and, independently, the examples (E of E), and weighs pair (t, e) by the
// product of their multiplicities. That variance counts both the
// model-to-model spread (training randomness) and the example-to-example
// one. The √2 makes it an interval for another run's value rather than for
// this run's expectation: two independent runs differ by √2 · SE in
// standard deviation. Clipped to [0, 1] ([0.5, 1] for balanced accuracy).
// Seeded: the same inputs and seed give the same bits.
#ifndef MEMAUDIT_SCORING_RERUN_INTERVAL_H_
#define MEMAUDIT_SCORING_RERUN_INTERVAL_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "scoring/intervals.h"
#include "scoring/ranked_scores.h"

namespace memaudit::scoring {

// 200 resamples: the SE's own relative error is about 1/sqrt(2 · 200) = 5%.
inline constexpr uint32_t kRerunResamples = 200;
// Each half-sampled resample rescores the attack: at 200 the intervals cost
// 5.4x the pigeonhole bootstrap's (scoring_bench), and end to end they cost
// the system bench's shapes more than their training's margin over the
// Python loop. 32 halves give the SE to about 1/sqrt(2 · 32) = 12.5%; the
// union with the pigeonhole interval keeps that one's precision as a floor.
inline constexpr uint32_t kHalfSampleResamples = 32;

// The statistics of roc.h with pair i counted weights[i] times (weights >=
// 0; all 1: Auc, BalancedAccuracy and TprAtFpr(...).tpr to the bit).
struct PooledStatistics {
  double auc = 0.5;
  double balanced_accuracy = 0.5;
  std::vector<double> tpr_at_fpr;  // one per target, in the targets' order
};
absl::StatusOr<PooledStatistics> WeightedStatistics(const RankedScores& ranked,
                                                    absl::Span<const uint8_t> is_member,
                                                    absl::Span<const double> weights,
                                                    absl::Span<const double> fpr_targets);

struct RerunIntervals {
  PooledStatistics estimate;  // the unweighted statistics
  Interval auc;
  Interval balanced_accuracy;
  std::vector<Interval> tpr_at_fpr;
};

// Pair i is target model model_of[i] (< models) and example example_of[i]
// (< examples). Needs matching lengths, both classes, models >= 2,
// examples >= 2, resamples >= 2 and every fpr target in [0, 1]. A
// resample that holds only one class adds nothing (rare: every model holds
// both in an audit).
absl::StatusOr<RerunIntervals> RerunIntervalsOf(
    const RankedScores& ranked, absl::Span<const uint8_t> is_member,
    absl::Span<const uint32_t> model_of, uint32_t models, absl::Span<const uint32_t> example_of,
    uint32_t examples, absl::Span<const double> fpr_targets, uint64_t seed,
    uint32_t resamples = kRerunResamples);

// When the models are each other's references (a leave-one-out membership
// audit: every model a target, scored against all the others), resampling
// targets with their scores fixed leaves the references undrawn, and every
// target of a run shares them: the pigeonhole interval above fell short of
// 90% for the attacks that use references (84-93% on the quickstart).
// Here each resample rescores: it draws a random half S of the M models
// (n = floor(M/2), without replacement), asks `rescore(S)` for the scores
// of the audit those models alone would make (each model of S a target
// against the others of S), and weighs each pair by its example's
// bootstrap multiplicity. A delete-d jackknife (Shao & Wu, "A general
// theory for jackknife variance estimation", Annals of Statistics 1989),
// d = M - n, sampled at random: Var = (n / d) · the variance over
// resamples, a factor of about 1 for a half; it holds for non-smooth
// statistics such as the TPR at a fixed FPR when d grows with M. The
// interval is T ± z · √2 · √Var as above. A half's audit has half the
// references, so its scores are noisier than the full audit's: the
// interval errs wide rather than narrow.
struct SubsetScores {
  std::vector<double> scores;      // targets of S in S's order × examples, row-major
  std::vector<uint8_t> is_member;  // the same layout
};
using RescoreFn = std::function<absl::StatusOr<SubsetScores>(absl::Span<const uint32_t> models)>;
// `ranked`/`is_member`: the full audit's pairs (the estimates). Needs
// models >= 4, examples >= 2, resamples >= 2 and every fpr target in [0, 1].
absl::StatusOr<RerunIntervals> HalfSampledRerunIntervals(
    const RankedScores& ranked, absl::Span<const uint8_t> is_member, uint32_t models,
    uint32_t examples, const RescoreFn& rescore, absl::Span<const double> fpr_targets,
    uint64_t seed, uint32_t resamples = kHalfSampleResamples);

// Each statistic's interval covering both of `a`'s and `b`'s (same
// estimates): the membership scorer reports the union of the pigeonhole and
// the half-sampled intervals, since each misses what the other draws (the
// references; how a half's fewer references change the TPR at a low FPR).
RerunIntervals UnionOf(const RerunIntervals& a, const RerunIntervals& b);

// Statistics of rows nested in clusters, each row in one cluster, where a
// re-run redraws the clusters (an unlearning audit's target rows belong to
// its target original models): a one-stage cluster bootstrap (Davison &
// Hinkley, "Bootstrap Methods and their Application", 1997, §3.8) draws the
// clusters with replacement and weighs each row by its cluster's
// multiplicity. `statistics(weights)` computes every statistic from one
// weighting (all 1: the estimates); a resample it refuses (e.g. one class
// left without weight) is skipped. Returns each statistic's standard error
// over the resamples. Needs clusters >= 2, every cluster_of[i] < clusters,
// resamples >= 2 and 2 or more resamples kept. Seeded; the resamples run on
// up to `threads` threads (then `statistics` must be safe to call
// concurrently) with the same result for any number.
using WeightedStatisticsFn =
    std::function<absl::StatusOr<std::vector<double>>(absl::Span<const double> weights)>;
absl::StatusOr<std::vector<double>> ClusterBootstrapErrors(absl::Span<const uint32_t> cluster_of,
                                                           uint32_t clusters,
                                                           const WeightedStatisticsFn& statistics,
                                                           uint64_t seed,
                                                           uint32_t resamples = kRerunResamples,
                                                           uint32_t threads = 1);

// The re-run interval of an estimate with bootstrap standard error `se`:
// estimate ± z · √2 · se (z = 1.96), cut to `range`.
Interval RerunAround(double estimate, double se, Interval range);

}  // namespace memaudit::scoring

#endif  // MEMAUDIT_SCORING_RERUN_INTERVAL_H_
