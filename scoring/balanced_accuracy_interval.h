// A confidence interval for the balanced accuracy BA = (1 + J) / 2, J the
// max over thresholds τ of J(τ) = TPR(τ) − FPR(τ), of pooled membership
// scores whose pairs come in clusters (an example's pairs across target
// models are correlated, as in auc_interval.h).
//
// A max over thresholds is biased upward (the best threshold is chosen on
// the same data) and its percentile bootstrap undercovers: 74–86% for a
// nominal 95% at a few hundred examples, 0% when the scores carry no
// signal. So each end bounds its own side, τ̂ the data's maximizer and τ*
// the population's:
// - low: Ĵ − J <= Ĵ(τ̂) − J(τ̂), the optimism at the chosen threshold. The
//   bootstrap repeats the choice: its 97.5% quantile is estimated by that
//   of J*(τ̂*) − Ĵ(τ̂*), τ̂* each resample's own maximizer.
// - high: J − Ĵ <= J(τ*) − Ĵ(τ*), one threshold's deviation, estimated at
//   τ̂ by the 2.5% quantile of J*(τ̂) − Ĵ(τ̂) (of the whole curve's
//   infimum when no threshold beats chance).
// Coverage in the tests: 93–98% on independent, clustered and signal-free
// scores. Seeded: the same inputs and seed give the same interval.
#ifndef MEMAUDIT_SCORING_BALANCED_ACCURACY_INTERVAL_H_
#define MEMAUDIT_SCORING_BALANCED_ACCURACY_INTERVAL_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "scoring/intervals.h"
#include "scoring/ranked_scores.h"

namespace memaudit::scoring {

// Resamples cost passes over the sorted pairs (eight per pass): 500 keep 320,000
// pairs at about 0.09 s on one core (a quarter of it the sort, which a
// RankedScores saves), while the 2.5% and 97.5% quantiles (12 resamples
// beyond each) move between seeds by a small part of the interval's width.
inline constexpr uint32_t kBalancedAccuracyResamples = 500;

struct BootstrapInterval {
  double estimate = 0.5;  // BalancedAccuracy(ComputeRoc(scores, is_member)), to the bit
  Interval interval;      // holds the estimate, within [0.5, 1]
  // Resamples that held both classes; the others have no balanced accuracy
  // and are left out (none when every cluster holds both, as in a
  // membership audit).
  uint32_t resamples_used = 0;
};

// Pair i belongs to cluster[i] (< clusters). Each resample draws as many
// clusters as are non-empty, uniformly with replacement, from SplitMix64
// seeded with `seed`; quantiles interpolate linearly between order
// statistics (numpy's default). The scores are sorted once; each resample
// is an O(pairs) pass with the clusters' multiplicities as weights, eight
// resamples to a pass (vector lanes), to the bits of one at a time. Needs matching lengths, no NaN
// score, both classes present, at least 2 non-empty clusters, resamples >= 1 and 0 < confidence
// < 1.
absl::StatusOr<BootstrapInterval> BalancedAccuracyInterval(
    absl::Span<const double> scores, absl::Span<const uint8_t> is_member,
    absl::Span<const uint32_t> cluster, uint32_t clusters, uint64_t seed,
    uint32_t resamples = kBalancedAccuracyResamples, double confidence = 0.95);
// The same interval, to the bit, from scores already ranked, its passes
// spread over `threads` (0: one per hardware thread). The passes draw their
// resamples from the one seeded stream in resample order whichever thread
// runs them, so every thread count gives the same bits.
absl::StatusOr<BootstrapInterval> BalancedAccuracyInterval(
    const RankedScores& ranked, absl::Span<const uint8_t> is_member,
    absl::Span<const uint32_t> cluster, uint32_t clusters, uint64_t seed,
    uint32_t resamples = kBalancedAccuracyResamples, double confidence = 0.95,
    uint32_t threads = 1);

namespace internal {
// BalancedAccuracyInterval with its 95% defaults, where resamples of at
// least `batched_pairs` resampled pairs take the one-resample pass (the
// public function: 2^26, where the batched pass stops being exact). Tests
// pass 0 to run that pass everywhere.
absl::StatusOr<BootstrapInterval> BalancedAccuracyIntervalWithBatchLimit(
    absl::Span<const double> scores, absl::Span<const uint8_t> is_member,
    absl::Span<const uint32_t> cluster, uint32_t clusters, uint64_t seed, int64_t batched_pairs);
}  // namespace internal

}  // namespace memaudit::scoring

#endif  // MEMAUDIT_SCORING_BALANCED_ACCURACY_INTERVAL_H_
