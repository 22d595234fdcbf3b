// How a language model's text becomes token ids: one interface for the
// character vocabulary (engine/text_corpus.h) and SentencePiece models
// (tokenizers/), so every LM audit scores, searches and trains the same way
// whichever it is. Free of LibTorch and SentencePiece types.
#ifndef MEMAUDIT_COMMON_TRAINING_TOKENIZER_H_
#define MEMAUDIT_COMMON_TRAINING_TOKENIZER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace memaudit {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // Ids are 0 ... size() - 1.
  virtual int64_t size() const = 0;
  // Text to ids. A newline is always the single token Newline(), and each
  // line is encoded on its own, so a line's tokens do not depend on the
  // lines around it (a canary line is spelled the same wherever it lands).
  virtual std::vector<int64_t> Encode(std::string_view utf8) const = 0;
  virtual std::string Decode(const std::vector<int64_t>& ids) const = 0;
  virtual int64_t Newline() const = 0;
  // The id text outside the vocabulary maps to.
  virtual bool IsUnknown(int64_t id) const = 0;
  // "characters, 83 symbols", "sentencepiece bpe, 1000 tokens": for reports.
  virtual std::string Describe() const = 0;
};

// Builds an audit's tokenizer from its corpus (every model of the audit
// passes the same text, so they share the ids); empty = characters.
using TokenizerFactory =
    std::function<absl::StatusOr<std::shared_ptr<const Tokenizer>>(const std::string& corpus)>;

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_TRAINING_TOKENIZER_H_
