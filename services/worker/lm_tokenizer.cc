#include "services/worker/lm_tokenizer.h"

#include <deque>
#include <memory>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "spec/dataset_facts.h"
#include "tokenizers/sentencepiece_tokenizer.h"

namespace memaudit {
namespace {

constexpr size_t kTrainedKept = 4;

// Trained tokenizers by (options, corpus): the models of an audit share one.
absl::StatusOr<std::shared_ptr<const Tokenizer>> TrainedOnce(
    const std::string& corpus, const tokenizers::SentencePieceTraining& options) {
  const std::string key = absl::StrCat(options.model_type, "\n", options.vocab_size, "\n",
                                       options.required_chars, "\n", corpus);
  static std::mutex mu;
  static std::deque<std::pair<std::string, std::shared_ptr<const Tokenizer>>> kept;
  std::lock_guard<std::mutex> lock(mu);
  for (const auto& [k, tokenizer] : kept) {
    if (k == key) return tokenizer;
  }
  MEMAUDIT_ASSIGN_OR_RETURN(std::shared_ptr<const Tokenizer> trained,
                            tokenizers::SentencePieceTokenizer::Train(corpus, options));
  kept.emplace_back(key, trained);
  if (kept.size() > kTrainedKept) kept.pop_front();
  return trained;
}

}  // namespace

std::string CanaryFormatCharacters(const v1::CanaryFormatSpec& canary) {
  std::string out = canary.prefix();
  if (canary.alphabets().empty()) out += "0123456789";
  for (const std::string& a : canary.alphabets()) out += a;
  return out;
}

absl::StatusOr<TokenizerFactory> LmTokenizerFactory(const v1::TokenizerSpec& spec,
                                                    const std::string& required_chars,
                                                    const std::string& field) {
  if (spec.kind().empty() || spec.kind() == "characters") return TokenizerFactory();
  if (spec.kind() != "sentencepiece") {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ".kind: must be \"characters\" or \"sentencepiece\" (got \"", spec.kind(), "\")"));
  }
  if (spec.model_path().empty()) {
    tokenizers::SentencePieceTraining options;
    options.vocab_size = spec.vocab_size();
    options.model_type = spec.model_type();
    options.required_chars = required_chars;
    return TokenizerFactory(
        [options](const std::string& corpus) { return TrainedOnce(corpus, options); });
  }
  const std::string path_field = absl::StrCat(field, ".model_path");
  // Read once: the bytes checked against Submit's hash are the ones loaded.
  MEMAUDIT_ASSIGN_OR_RETURN(const TokenizerFile file,
                            ReadTokenizerModel(spec.model_path(), path_field));
  if (file.content_hash != spec.content_hash()) {
    return absl::FailedPreconditionError(
        absl::StrCat(field, ".content_hash: the model file changed since the audit was submitted (",
                     spec.content_hash(), " then, ", file.content_hash, " now)"));
  }
  MEMAUDIT_ASSIGN_OR_RETURN(std::shared_ptr<const Tokenizer> loaded,
                            tokenizers::SentencePieceTokenizer::FromModel(file.bytes, path_field));
  return TokenizerFactory(
      [loaded](const std::string&) -> absl::StatusOr<std::shared_ptr<const Tokenizer>> {
        return loaded;
      });
}

}  // namespace memaudit
