// An LM audit's model block for the engine: its tokenizer
// (common/training/tokenizer.h), from the spec's model.tokenizer — characters (no
// factory), a team's SentencePiece model file, or one trained on the audit's
// corpus — and its other fields. Trained tokenizers are kept per process,
// so a worker trains an audit's once however many of its models it runs.
#ifndef MEMAUDIT_SERVICES_WORKER_LM_TOKENIZER_H_
#define MEMAUDIT_SERVICES_WORKER_LM_TOKENIZER_H_

#include <string>

#include "absl/status/statusor.h"
#include "common/base/status_macros.h"
#include "common/training/model_spec.h"
#include "common/training/tokenizer.h"
#include "engine/extractable.h"
#include "memaudit/v1/spec.pb.h"

namespace memaudit {

// `required_chars`: characters a trained model must keep as pieces (the
// canary format's). `field` names the spec field in errors
// ("exposure.model.tokenizer"). A model file must still hash to the
// content_hash Submit recorded (FAILED_PRECONDITION otherwise).
absl::StatusOr<TokenizerFactory> LmTokenizerFactory(const v1::TokenizerSpec& spec,
                                                    const std::string& required_chars,
                                                    const std::string& field);

// The characters a canary format is spelled with: prefix, then the hole
// alphabets (or the ten digits).
std::string CanaryFormatCharacters(const v1::CanaryFormatSpec& canary);

// What an LM audit's `model` block sets on its engine run (the exposure,
// LM-canary forgetting and phone-book runs share these field names): the
// architecture, sizes, dropout and tokenizer. `field` names the block
// ("exposure.model"); `required_chars` are the characters its canaries or
// records are spelled with. A kind then overrides what its variants vary.
template <typename LmRun>
absl::Status SetLanguageModel(const v1::LanguageModelSpec& m, const std::string& field,
                              const std::string& required_chars, LmRun* run) {
  MEMAUDIT_ASSIGN_OR_RETURN(run->lm,
                            engine::ParseModelKind(m.architecture(), field + ".architecture"));
  run->torchscript_path = m.torchscript_path();
  run->layers = m.layers();
  run->units = m.units();
  run->embedding = m.embedding();
  run->heads = m.heads();
  run->dropout = m.dropout();
  MEMAUDIT_ASSIGN_OR_RETURN(
      run->tokenizer, LmTokenizerFactory(m.tokenizer(), required_chars, field + ".tokenizer"));
  return absl::OkStatus();
}

// A spec's extractable block as the engine's setup (prefix_chars and
// suffix_chars count the model's tokens).
inline engine::ExtractableSetup ExtractableSetupOf(const v1::ExtractableSpec& x) {
  return {x.sequences(),
          x.prefix_chars(),
          x.suffix_chars(),
          {x.duplicates().begin(), x.duplicates().end()},
          x.seed()};
}

}  // namespace memaudit

#endif  // MEMAUDIT_SERVICES_WORKER_LM_TOKENIZER_H_
