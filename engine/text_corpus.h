// Text corpora for character language models: UTF-8 files or folders
// (Debian's `fortunes` by default), a character vocabulary, canary insertion
// with per-canary repeat counts, and fixed-length training windows. Free of
// LibTorch types so planners can draw canaries without torch headers.
#ifndef MEMAUDIT_ENGINE_TEXT_CORPUS_H_
#define MEMAUDIT_ENGINE_TEXT_CORPUS_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/training/tokenizer.h"

namespace memaudit::engine {

inline constexpr char kFortunesDir[] = "/usr/share/games/fortunes";

// Reads a UTF-8 file, or every regular file under a folder in sorted path
// order (skipping fortune's binary *.dat indexes and symlinks). Invalid UTF-8
// bytes become U+FFFD so the vocabulary stays well-defined.
absl::StatusOr<std::string> ReadTextCorpus(const std::string& path);

// An audit's corpus: `inline_text` if set, else the file or folder at `path`
// (fortunes when empty), cut at the last line end within `max_chars` (0 =
// whole).
absl::StatusOr<std::string> LoadCorpus(const std::string& inline_text, const std::string& path,
                                       uint64_t max_chars);

// A deterministic pseudo-English corpus for tests (words from a fixed list).
std::string SyntheticText(size_t chars, uint64_t seed);

// Code points <-> token ids. Id 0 is the unknown symbol; the rest are the
// distinct code points of the building text in ascending order, so the same
// text always yields the same vocabulary.
class CharVocab final : public Tokenizer {
 public:
  static CharVocab Build(const std::string& utf8_text);
  // A model's own vocabulary, id i = symbols[i]: symbols[0] must be U+FFFD
  // (the unknown symbol) and no symbol may repeat; any order otherwise.
  static absl::StatusOr<CharVocab> FromSymbols(const std::vector<char32_t>& symbols);
  int64_t size() const override { return static_cast<int64_t>(symbols_.size()); }
  std::vector<int64_t> Encode(std::string_view utf8) const override;
  std::string Decode(const std::vector<int64_t>& ids) const override;
  int64_t Newline() const override { return Id(U'\n'); }
  bool IsUnknown(int64_t id) const override { return id == 0; }
  std::string Describe() const override;
  int64_t Id(char32_t code_point) const;  // 0 if unknown

 private:
  std::vector<char32_t> symbols_;  // symbols_[0] = U+FFFD, the unknown symbol
  std::map<char32_t, int64_t> ids_;
};

std::vector<char32_t> DecodeUtf8(std::string_view utf8);
std::string EncodeUtf8(const std::vector<char32_t>& code_points);

// A canary format s with holes: fixed prefix, then one hole per entry of
// `alphabets` (each the UTF-8 characters allowed there; a one-character
// alphabet is a fixed character inside the hole region), then a suffix.
struct CanaryFormat {
  std::string prefix;
  std::vector<std::string> alphabets;
  std::string suffix;
};

// "prefix" followed by `digits` decimal holes: |R| = 10^digits.
CanaryFormat DigitsFormat(const std::string& prefix, int digits);

// A spec's format: one hole per alphabet when there are any, else `digits`
// decimal holes.
CanaryFormat FormatFor(const std::string& prefix, uint32_t digits,
                       const std::vector<std::string>& alphabets);

// The vocabulary of `text` plus every character a canary of `format` can
// hold (digits, newline, prefix, hole alphabets), so a canary can always be
// spelled and models trained with and without canaries share their ids.
CharVocab CanaryVocab(const std::string& text, const CanaryFormat& format);

// OK when `vocab` holds every character of `utf8`; else INVALID_ARGUMENT,
// "<field>: the model's vocabulary lacks 'x' (U+0078), which <what> needs".
// A character a canary needs cannot map to the unknown symbol: candidates
// would collide and their ranks would be meaningless.
absl::Status RequireCharacters(const CharVocab& vocab, const std::string& utf8,
                               const std::string& field, const std::string& what);

// The characters every canary of `format` is spelled with: the newline it
// starts after, the prefix, every hole's alphabet and the suffix.
std::string CanaryCharacters(const CanaryFormat& format);

// log2 |R|.
double Log2SpaceSize(const CanaryFormat& format);

// `count` distinct fillings drawn uniformly from the format's space.
absl::StatusOr<std::vector<std::string>> DrawSecrets(const CanaryFormat& format, size_t count,
                                                     uint64_t seed);

std::string CanaryText(const CanaryFormat& format, const std::string& secret);

struct Canary {
  std::string secret;    // the hole filling r
  uint32_t repeats = 0;  // 0 = a never-inserted control
};

// Inserts every canary line (prefix + secret + suffix + "\n") `repeats` times
// at line starts drawn with `seed`; returns the new text.
std::string InsertCanaries(const std::string& text, const CanaryFormat& format,
                           const std::vector<Canary>& canaries, uint64_t seed);

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_TEXT_CORPUS_H_
