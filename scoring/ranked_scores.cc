#include "scoring/ranked_scores.h"

#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "scoring/validation.h"

namespace memaudit::scoring {
namespace {

// 11-bit digits: six passes cover 64 bits, and a pass's 2048 counters stay
// in L1 while its scatter writes to as many places.
constexpr int kDigitBits = 11;
constexpr size_t kBuckets = size_t{1} << kDigitBits;
constexpr int kDigits = (64 + kDigitBits - 1) / kDigitBits;

// An integer whose ascending order is the score's descending order in IEEE
// totalOrder (numeric order, -0 below +0): doubles order as sign-magnitude
// integers, so negatives flip entirely and positives flip their sign bit;
// the complement then reverses the order.
uint64_t DescendingKey(double score) {
  uint64_t bits;
  std::memcpy(&bits, &score, sizeof bits);
  const uint64_t ascending = (bits >> 63) != 0 ? ~bits : bits | (uint64_t{1} << 63);
  return ~ascending;
}

size_t Digit(uint64_t key, int d) { return (key >> (d * kDigitBits)) & (kBuckets - 1); }

}  // namespace

namespace internal {

std::vector<uint32_t> DescendingOrder(absl::Span<const double> scores) {
  const size_t n = scores.size();
  std::vector<uint64_t> keys(n), next_keys(n);
  std::vector<uint32_t> order(n), next_order(n);
  // Every digit's histogram in one read of the keys.
  std::vector<uint32_t> counts(kDigits * kBuckets, 0);
  for (size_t i = 0; i < n; ++i) {
    keys[i] = DescendingKey(scores[i]);
    order[i] = static_cast<uint32_t>(i);
    for (int d = 0; d < kDigits; ++d) ++counts[d * kBuckets + Digit(keys[i], d)];
  }
  for (int d = 0; d < kDigits && n > 0; ++d) {
    uint32_t* count = counts.data() + d * kBuckets;
    // A digit every key shares moves nothing (the high digits of scores of
    // one sign and a few binades).
    if (count[Digit(keys[0], d)] == n) continue;
    uint32_t start = 0;
    for (size_t b = 0; b < kBuckets; ++b) start += std::exchange(count[b], start);
    // Stable: within a bucket pairs keep their order, so equal keys keep
    // increasing index through every pass.
    for (size_t k = 0; k < n; ++k) {
      const uint32_t to = count[Digit(keys[k], d)]++;
      next_keys[to] = keys[k];
      next_order[to] = order[k];
    }
    keys.swap(next_keys);
    order.swap(next_order);
  }
  return order;
}

}  // namespace internal

absl::StatusOr<RankedScores> RankedScores::Rank(absl::Span<const double> scores) {
  MEMAUDIT_RETURN_IF_ERROR(CheckNoNaN("scores", scores));
  if (scores.size() > std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat("scores: ", scores.size(), " are too many to rank (at most 2^32 - 1)"));
  }
  RankedScores ranked;
  ranked.scores_ = scores;
  ranked.order_ = internal::DescendingOrder(scores);
  ranked.descending_.resize(scores.size());
  for (size_t k = 0; k < scores.size(); ++k) ranked.descending_[k] = scores[ranked.order_[k]];
  return ranked;
}

}  // namespace memaudit::scoring
