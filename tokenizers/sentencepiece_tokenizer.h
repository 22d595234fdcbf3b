// SentencePiece subword tokenizers for the language-model audits: a model
// file a team gives, or one memaudit trains on the audit's corpus. Each line
// is encoded on its own and a newline is one extra token after the model's
// pieces, so a canary line is spelled the same wherever it is inserted.
#ifndef MEMAUDIT_TOKENIZERS_SENTENCEPIECE_TOKENIZER_H_
#define MEMAUDIT_TOKENIZERS_SENTENCEPIECE_TOKENIZER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/training/tokenizer.h"

namespace memaudit::tokenizers {
namespace bridge {
class Processor;
}  // namespace bridge

inline constexpr uint32_t kDefaultVocabSize = 1000;
inline constexpr uint32_t kMinVocabSize = 64;
inline constexpr uint32_t kMaxVocabSize = 32000;
// A model file larger than this is refused before it is read.
inline constexpr uint64_t kMaxModelBytes = 64ull << 20;

struct SentencePieceTraining {
  uint32_t vocab_size = kDefaultVocabSize;
  std::string model_type = "bpe";  // or "unigram"
  // Characters that must be pieces of their own whatever the corpus holds
  // (the canary format's, so its holes stay one token each).
  std::string required_chars;
};

class SentencePieceTokenizer final : public Tokenizer {
 public:
  ~SentencePieceTokenizer() override;

  // A model from a .model file's bytes; errors name `field`; `name` leads
  // its description.
  static absl::StatusOr<std::shared_ptr<const SentencePieceTokenizer>> FromModel(
      const std::string& serialized, const std::string& field,
      const std::string& name = "sentencepiece");
  // Trains on `corpus`'s lines, deterministically: one thread, every line,
  // no sampling, digits split into single tokens, lossless whitespace.
  static absl::StatusOr<std::shared_ptr<const SentencePieceTokenizer>> Train(
      const std::string& corpus, const SentencePieceTraining& options);

  int64_t size() const override;
  std::vector<int64_t> Encode(std::string_view utf8) const override;
  std::string Decode(const std::vector<int64_t>& ids) const override;
  int64_t Newline() const override { return pieces_; }
  bool IsUnknown(int64_t id) const override;
  std::string Describe() const override { return description_; }
  // The model as a .model file holds it.
  const std::string& serialized() const { return serialized_; }

 private:
  SentencePieceTokenizer() = default;

  std::unique_ptr<bridge::Processor> processor_;
  int64_t pieces_ = 0;
  std::string serialized_;
  std::string description_;
};

}  // namespace memaudit::tokenizers

#endif  // MEMAUDIT_TOKENIZERS_SENTENCEPIECE_TOKENIZER_H_
