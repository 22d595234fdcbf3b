// How SISA cuts a training list into shards and slices: the one definition
// the engine trains by (engine/sisa.cc) and the planner counts steps by
// (audits/unlearning/signals.h). A seeded permutation of the n entries, cut
// into `shards` contiguous runs of near-equal size, each cut into `slices`.
#ifndef MEMAUDIT_COMMON_TRAINING_SISA_LAYOUT_H_
#define MEMAUDIT_COMMON_TRAINING_SISA_LAYOUT_H_

#include <cstdint>
#include <vector>

#include "common/base/seeding.h"

namespace memaudit {

// [shard][slice] -> indices into the n entries.
using SisaSlices = std::vector<std::vector<std::vector<uint32_t>>>;

inline SisaSlices SisaLayoutOf(uint32_t n, uint32_t shards, uint32_t slices, uint64_t sisa_seed) {
  const std::vector<uint32_t> order = SeededPermutation(DeriveSeed(sisa_seed, "sisa.layout", 0), n);
  SisaSlices layout(shards, std::vector<std::vector<uint32_t>>(slices));
  for (uint32_t s = 0; s < shards; ++s) {
    const size_t begin = static_cast<size_t>(n) * s / shards;
    const size_t end = static_cast<size_t>(n) * (s + 1) / shards;
    for (size_t k = begin; k < end; ++k) {
      const uint32_t slice = static_cast<uint32_t>((k - begin) * slices / (end - begin));
      layout[s][slice].push_back(order[k]);
    }
  }
  return layout;
}

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_TRAINING_SISA_LAYOUT_H_
