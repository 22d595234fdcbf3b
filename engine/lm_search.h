// Exact search over a canary format's candidate trie (Secret Sharer 1.6, 1.8):
// enumeration of every candidate's Px with one model step per internal node,
// exact rank by branch-and-bound, and shortest-path (Dijkstra) extraction.
#ifndef MEMAUDIT_ENGINE_LM_SEARCH_H_
#define MEMAUDIT_ENGINE_LM_SEARCH_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/lm_scorer.h"

namespace memaudit::engine {

// Px of candidates (bits) whose lexicographic indices (mixed radix over the
// positions' alphabets, first position most significant) start at `first`.
using PxChunkCallback = std::function<void(uint64_t first, const std::vector<double>& px)>;

// Breadth-first trie expansion; where a level would hold more than
// `max_states` recurrent states it proceeds depth-first over groups, which
// bounds memory by about length x max_states states.
absl::Status EnumeratePx(LmScorer& scorer, const TokenFormat& format, size_t max_states,
                         const PxChunkCallback& on_chunk);

// All |R| values in lexicographic order (|R| <= 2^27).
absl::StatusOr<std::vector<double>> EnumerateAllPx(LmScorer& scorer, const TokenFormat& format,
                                                   size_t max_states = 1 << 15);

// The lexicographic index of a candidate's tokens.
absl::StatusOr<uint64_t> CandidateIndex(const TokenFormat& format,
                                        const std::vector<int64_t>& tokens);

// Px values within this many bits of the canary's count as ties (against the
// canary). A float32 model reproduces a Px only to ~1e-5 bits across batch
// shapes (the trie's batches against the canary's own path walk), so the band
// is ten times that: a near-tie is counted whichever computation scored it.
inline constexpr double kPxTieBits = 1e-4;

// The rank among `px` (every candidate's Px, the canary's at `canary_index`)
// of a canary whose Px is `canary_px`: the canary itself, counted once
// whatever its entry in `px` says, plus every other candidate within
// kPxTieBits of it or below. Counting the canary by identity, not by its Px,
// is what keeps two computations of its Px from dropping it.
uint64_t RankAmong(const std::vector<double>& px, uint64_t canary_index, double canary_px);

struct RankResult {
  // 1 (the canary) + |{r != canary : Px(r) <= Px(canary) + kPxTieBits}|
  uint64_t rank = 0;
  bool exact = false;    // false: the budget ran out and rank is a lower bound
  uint64_t queries = 0;  // model steps spent
  double canary_px = 0;  // bits
};

// Exact rank by branch-and-bound: Px is a sum of non-negative terms along the
// trie, so a prefix whose partial Px exceeds the canary's is pruned. Stops
// after `query_budget` model steps.
absl::StatusOr<RankResult> BranchAndBoundRank(LmScorer& scorer, const TokenFormat& format,
                                              const std::vector<int64_t>& canary,
                                              uint64_t query_budget, size_t max_states = 1 << 15);

// Rank by full enumeration (the reference for BranchAndBoundRank).
absl::StatusOr<RankResult> EnumerationRank(LmScorer& scorer, const TokenFormat& format,
                                           const std::vector<int64_t>& canary,
                                           size_t max_states = 1 << 15);

struct ExtractionResult {
  bool found = false;
  std::vector<int64_t> tokens;  // the lowest-Px completion found
  double px_bits = 0;
  uint64_t queries = 0;     // model steps (one per expanded node)
  uint64_t iterations = 0;  // priority-queue rounds
};

// Modified Dijkstra over the trie: the first leaf popped has the lowest Px.
// pops_per_iteration > 1 is the paper's batched variant: expand that many
// nodes per model call, run twice the iterations the first leaf needed, and
// return the lowest leaf seen (no longer guaranteed optimal).
ExtractionResult ShortestPathExtract(LmScorer& scorer, const TokenFormat& format,
                                     uint64_t max_queries, size_t pops_per_iteration = 1);

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_LM_SEARCH_H_
