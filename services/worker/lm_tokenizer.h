// An LM audit's tokenizer for the engine (common/tokenizer.h), from the
// spec's model.tokenizer: characters (no factory), a team's SentencePiece
// model file, or one trained on the audit's corpus. Trained tokenizers are
// kept per process, so a worker trains an audit's once however many of its
// models it runs.
#ifndef MEMAUDIT_SERVICES_WORKER_LM_TOKENIZER_H_
#define MEMAUDIT_SERVICES_WORKER_LM_TOKENIZER_H_

#include <string>

#include "absl/status/statusor.h"
#include "common/tokenizer.h"
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

}  // namespace memaudit

#endif  // MEMAUDIT_SERVICES_WORKER_LM_TOKENIZER_H_
