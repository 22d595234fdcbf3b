// Scores ranked once, for every statistic of one attack that walks them in
// score order: ComputeRoc, ClusteredAucInterval and BalancedAccuracyInterval
// each take a RankedScores in place of their own sort. An audit's pooled
// (target, example) pairs number in the hundreds of thousands, where three
// comparison sorts per attack cost more than the statistics themselves.
#ifndef MEMAUDIT_SCORING_RANKED_SCORES_H_
#define MEMAUDIT_SCORING_RANKED_SCORES_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace memaudit::scoring {

class RankedScores {
 public:
  // Ranks `scores` (no NaN; ±inf allowed), which must outlive the result.
  // InvalidArgument on NaN or on 2^32 scores or more.
  static absl::StatusOr<RankedScores> Rank(absl::Span<const double> scores);

  absl::Span<const double> scores() const { return scores_; }
  // Indices into scores() in decreasing score order, equal scores by
  // increasing index, except that +0 precedes -0 (IEEE totalOrder): a tie
  // group of both zeros, whose threshold is its first score, starts at +0
  // (where a comparison sort leaves either first).
  const std::vector<uint32_t>& order() const { return order_; }
  // scores()[order()[k]], stored so that a walk in score order reads the
  // scores in sequence.
  const std::vector<double>& descending() const { return descending_; }
  size_t size() const { return order_.size(); }

 private:
  RankedScores() = default;

  absl::Span<const double> scores_;
  std::vector<uint32_t> order_;
  std::vector<double> descending_;
};

namespace internal {
// RankedScores' order: an LSD radix sort of the scores' bit patterns mapped
// to integers whose ascending order is the scores' descending totalOrder,
// stable, so ties keep increasing index. The scores must hold no NaN and
// fewer than 2^32 entries.
std::vector<uint32_t> DescendingOrder(absl::Span<const double> scores);
}  // namespace internal

}  // namespace memaudit::scoring

#endif  // MEMAUDIT_SCORING_RANKED_SCORES_H_
