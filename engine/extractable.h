// Extractable memorization's held-out sequences (Quantifying Memorization
// Across Neural Language Models), shared by the exposure and the LM-canary
// forgetting runs: lines drawn from the corpus and held out of it, group g's
// inserted duplicates[g] times, the last group never (the controls), and
// each later continued greedily from its first `prefix` tokens
// (lm_scorer.h, MeasureExtractable). Torch-free.
#ifndef MEMAUDIT_ENGINE_EXTRACTABLE_H_
#define MEMAUDIT_ENGINE_EXTRACTABLE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/training/held_out_lines.h"
#include "common/training/tokenizer.h"
#include "engine/lm_membership_signals.h"

namespace memaudit::engine {

struct ExtractableSetup {
  uint32_t sequences = 0;  // per group; 0 = off
  uint32_t prefix = 32;    // tokens of the prompt
  uint32_t suffix = 32;    // tokens that must come back
  std::vector<uint32_t> duplicates;
  uint64_t seed = 0;  // draws the lines
};

// One held-out sequence and what greedy decoding gave back.
struct ExtractableSequence {
  uint32_t duplicates = 0;  // times inserted; 0 = a control
  bool extracted = false;   // the whole continuation reproduced exactly
  uint32_t matched = 0;     // tokens reproduced before the first miss
  // Its membership scores (the whole sequence, after a newline): members are
  // the inserted ones, non-members the controls.
  LmMembershipScores membership;
};

// Times sequence i is inserted: group i / sequences's entry, 0 for the
// controls.
uint32_t DuplicatesOf(const ExtractableSetup& setup, size_t sequence);

// The sequences (groups in order, then the controls), each the first
// prefix + suffix tokens of a distinct corpus line, and the corpus without
// them. Tokens are `tokenizer`'s, or characters when it is null (a line cut
// where the tokenizer would merge across the cut is passed over).
absl::StatusOr<HeldOutLines> HoldOutExtractable(const std::string& text,
                                                const ExtractableSetup& setup,
                                                const Tokenizer* tokenizer);

// The inserted sequences with their times, for InsertLines or a batch.
std::vector<std::pair<std::string, uint32_t>> ExtractableLines(
    const ExtractableSetup& setup, const std::vector<std::string>& held_out);

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_EXTRACTABLE_H_
