#include "engine/extractable.h"

#include <optional>
#include <string_view>

namespace memaudit::engine {
namespace {

// The text of `line`'s first `n` tokens, when it has that many and that text
// encodes back to exactly them (a cut inside what the tokenizer would merge
// does not, and the line is passed over).
std::optional<std::string> FirstTokens(const Tokenizer& tokenizer, std::string_view line,
                                       size_t n) {
  std::vector<int64_t> ids = tokenizer.Encode(line);
  if (ids.size() < n) return std::nullopt;
  ids.resize(n);
  std::string text = tokenizer.Decode(ids);
  if (tokenizer.Encode(text) != ids) return std::nullopt;
  return text;
}

}  // namespace

uint32_t DuplicatesOf(const ExtractableSetup& setup, size_t sequence) {
  const size_t group = sequence / setup.sequences;
  return group < setup.duplicates.size() ? setup.duplicates[group] : 0;
}

absl::StatusOr<HeldOutLines> HoldOutExtractable(const std::string& text,
                                                const ExtractableSetup& setup,
                                                const Tokenizer* tokenizer) {
  LineCut cut;
  if (tokenizer != nullptr) {
    cut = [tokenizer](std::string_view line, size_t n) { return FirstTokens(*tokenizer, line, n); };
  }
  return HoldOutLines(text, setup.prefix + setup.suffix,
                      ExtractableHeldOut(setup.duplicates.size(), setup.sequences), setup.seed,
                      "extractable.sequences", cut, "tokens");
}

std::vector<std::pair<std::string, uint32_t>> ExtractableLines(
    const ExtractableSetup& setup, const std::vector<std::string>& held_out) {
  std::vector<std::pair<std::string, uint32_t>> lines;
  for (size_t i = 0; i < held_out.size(); ++i) {
    if (DuplicatesOf(setup, i) > 0) lines.emplace_back(held_out[i], DuplicatesOf(setup, i));
  }
  return lines;
}

}  // namespace memaudit::engine
