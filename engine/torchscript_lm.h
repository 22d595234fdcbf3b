// A team's own character language model, exported with torch.jit.save, in
// the language-model audits (docs/language-models.md). The contract:
//
// - forward(tokens: Tensor) -> Tensor: int64 ids [B, T] -> float next-token
//   logits [B, T, V], causal (position t sees tokens 0..t only), every
//   sequence from the module's own initial state.
// - vocabulary: str, an attribute listing the V symbols in id order (id i is
//   its i-th code point): the first must be U+FFFD, the unknown symbol that
//   characters outside the vocabulary map to; no repeats. Not read when the
//   audit names a tokenizer (model.tokenizer): the ids are then its tokens
//   and V its size.
// - train()/eval() switch its dropout; every parameter is trained.
//
// Memaudit registers the parameters as aliases (torchscript_model.h), so
// the trainer, DP-SGD, checkpoints and Fork() work as on the built-ins. The
// module has no step method: a search step re-runs forward over the whole
// prefix (context + candidate so far), so a query costs O(prefix) where the
// built-in LSTM/GRU's costs O(1).
#ifndef MEMAUDIT_ENGINE_TORCHSCRIPT_LM_H_
#define MEMAUDIT_ENGINE_TORCHSCRIPT_LM_H_

#include <torch/script.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/training/model_spec.h"
#include "engine/language_model.h"
#include "engine/text_corpus.h"
#include "engine/torch_api.h"

namespace memaudit::engine {

class TorchScriptLm : public LanguageModel {
 public:
  // `vocabulary`: the module's own; `vocab`: its size, or a tokenizer's
  // when the vocabulary is empty (not read).
  TorchScriptLm(torch::jit::Module module, CharVocab vocabulary, int64_t vocab);

  // Recomputes from state->tokens + tokens and keeps both in the state.
  torch::Tensor Run(const torch::Tensor& tokens, LmState* state) override;
  int64_t vocab() const override { return vocab_; }
  const CharVocab& vocabulary() const { return vocabulary_; }
  // Keeps the scripted module's own train/eval flag in step with ours.
  void train(bool on = true) override;

 private:
  // The scripted forward on [B, T]; in training, its dropout masks are drawn
  // from LibTorch's global generator reseeded from our dropout generator.
  torch::Tensor Call(const torch::Tensor& tokens);

  torch::jit::Module module_;
  CharVocab vocabulary_;
  int64_t vocab_;
};

// Loads `path` and checks the contract (the vocabulary, and forward's shape
// and causality on a two-token probe); errors name model.torchscript_path.
// `redraw_weights`: for a model memaudit trains (RedrawScriptedWeights).
// `token_vocab` > 0: the ids are a tokenizer's, V = token_vocab, and the
// module's vocabulary attribute is not read.
absl::StatusOr<std::shared_ptr<TorchScriptLm>> LoadTorchScriptLm(const std::string& path,
                                                                 bool redraw_weights = false,
                                                                 int64_t token_vocab = 0);

// The vocabulary of the module at `path` (loaded and checked as above).
absl::StatusOr<CharVocab> TorchScriptLmVocabulary(const std::string& path);

// The tokenizer an LM audit encodes its text with: `factory`'s when set
// (built from `text`; a TorchScript module's V is checked against its size
// when the module loads); else for the built-in kinds CanaryVocab(text,
// format), for kTorchScript the module's own vocabulary, refused when it
// lacks a character the canaries are spelled with (`what` names them in the
// error; corpus characters it lacks become the unknown symbol).
absl::StatusOr<std::shared_ptr<const Tokenizer>> LmTokenizer(
    ModelKind kind, const std::string& torchscript_path, const TokenizerFactory& factory,
    const std::string& text, const CanaryFormat& format,
    const std::string& what = "the canary format");

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_TORCHSCRIPT_LM_H_
