// Extractable memorization's sequences (Quantifying Memorization Across
// Neural Language Models): lines of a corpus held out of it, to be inserted
// again a chosen number of times. Torch-free: the engine draws them and the
// spec planner counts the training text they leave, the same way.
#ifndef MEMAUDIT_COMMON_TRAINING_HELD_OUT_LINES_H_
#define MEMAUDIT_COMMON_TRAINING_HELD_OUT_LINES_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace memaudit {

struct HeldOutLines {
  // Each the first `length` code points of a distinct line of the corpus.
  std::vector<std::string> sequences;
  // The corpus without every line whose text equals a chosen line's.
  std::string text;
};

// Lines an extractable-memorization setup holds out: `sequences` for each
// of its `duplicate_counts` and as many controls (never inserted again).
inline size_t ExtractableHeldOut(size_t duplicate_counts, size_t sequences) {
  return (duplicate_counts + 1) * sequences;
}

// Distinct lines of `text` of at least `length` code points: what
// HoldOutLines draws from.
size_t DistinctLongLines(const std::string& text, size_t length);

// A line's first `length` units (tokens, say) as text, or nothing when the
// line has fewer or cannot be cut there.
using LineCut = std::function<std::optional<std::string>(std::string_view line, size_t length)>;

// `count` distinct lines of at least `length` code points, drawn with `seed`
// (uniformly among such lines, each counted once however often it repeats);
// INVALID_ARGUMENT naming `field` when the corpus has fewer. With `cut`,
// lines are measured and cut in its units (named `unit` in the error).
absl::StatusOr<HeldOutLines> HoldOutLines(const std::string& text, size_t length, size_t count,
                                          uint64_t seed, const std::string& field,
                                          const LineCut& cut = nullptr,
                                          const std::string& unit = "characters");

// Inserts each line (text and times) as "text\n" that many times at line
// starts drawn by SplitMix64(`rng_seed`), in the order given; returns the new
// text.
std::string InsertLines(const std::string& text,
                        const std::vector<std::pair<std::string, uint32_t>>& lines,
                        uint64_t rng_seed);

// UTF-8 code points of `text` (bytes that do not continue a sequence).
size_t CodePointCount(absl::string_view text);

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_TRAINING_HELD_OUT_LINES_H_
