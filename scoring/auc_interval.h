// A confidence interval for a pooled AUC whose pairs come in clusters.
// A membership audit pools the (target model, example) pairs of every
// target, but the pairs of one example are not independent (the same
// example, scored by models that share references). Obuchowski's
// nonparametric estimator for clustered ROC data ("Nonparametric analysis
// of clustered ROC curve data", Biometrics 1997) gives the AUC's variance
// from per-cluster sums of DeLong's placement values; with one pair per
// cluster it is DeLong's. O(n log n), deterministic, no resampling.
#ifndef MEMAUDIT_SCORING_AUC_INTERVAL_H_
#define MEMAUDIT_SCORING_AUC_INTERVAL_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "scoring/intervals.h"
#include "scoring/ranked_scores.h"

namespace memaudit::scoring {

struct ClusteredAuc {
  double auc = 0;       // Mann–Whitney, ties ½: Auc(scores, is_member)
  double variance = 0;  // Obuchowski's estimate
  Interval interval;    // auc ± z·sqrt(variance), cut to [0, 1]
};

// Pair i belongs to cluster[i] (< clusters). Needs matching lengths, finite
// scores, both classes present, at least 2 non-empty clusters and
// 0 < confidence < 1.
absl::StatusOr<ClusteredAuc> ClusteredAucInterval(absl::Span<const double> scores,
                                                  absl::Span<const uint8_t> is_member,
                                                  absl::Span<const uint32_t> cluster,
                                                  uint32_t clusters, double confidence = 0.95);
// The same interval, to the bit, from scores already ranked.
absl::StatusOr<ClusteredAuc> ClusteredAucInterval(const RankedScores& ranked,
                                                  absl::Span<const uint8_t> is_member,
                                                  absl::Span<const uint32_t> cluster,
                                                  uint32_t clusters, double confidence = 0.95);

}  // namespace memaudit::scoring

#endif  // MEMAUDIT_SCORING_AUC_INTERVAL_H_
