// The interface the language-model audits (exposure, LM-canary forgetting,
// relational phone book) train, score and search through: the built-in
// character LSTM/GRU (char_lm.h) and a team's own TorchScript model
// (torchscript_lm.h) both implement it.
#ifndef MEMAUDIT_ENGINE_LANGUAGE_MODEL_H_
#define MEMAUDIT_ENGINE_LANGUAGE_MODEL_H_

#include <vector>

#include "engine/model.h"
#include "engine/torch_api.h"

namespace memaudit::engine {

// What a batch of B sequences has been fed. Recurrent built-ins keep h (and
// c for LSTM), each [layers, B, units]; a model that recomputes from the
// prefix keeps the tokens fed so far, [B, T]. The transformer keeps every
// layer's keys and values in two parts: those of a prefix every row shares,
// [layers, 1, S, width] (the canary's context: stored once, not per row),
// then each row's own, [layers, B, T, width]. Undefined tensors mean nothing
// fed yet (the zero state).
struct LmState {
  torch::Tensor h;
  torch::Tensor c;
  torch::Tensor keys;
  torch::Tensor values;
  torch::Tensor shared_keys;
  torch::Tensor shared_values;
  torch::Tensor tokens;
  // Tokens fed so far where the state grows with them (keys or tokens), -1
  // for a recurrent state of fixed size. Only states of equal Length() can
  // be concatenated.
  int64_t Length() const;
  // Selects batch rows (index: int64 [M], any device) of a state; keeps an
  // empty state empty. Rows selected from a one-row transformer state share
  // its whole cache (nothing is copied per row); the rows of one that
  // already shares a prefix keep sharing it.
  LmState Select(const torch::Tensor& index) const;
  // The rows of `states`, in order, as one batch (all of one kind and, where
  // the state grows with the prefix, one Length()). Transformer states keep
  // a shared prefix they all hold (the same tensor), else each row gets its
  // own copy.
  static LmState Cat(const std::vector<LmState>& states);
};

class LanguageModel : public Model {
 public:
  // x [B, T] int64 -> logits [B, T, vocab], from the empty state.
  torch::Tensor Forward(const torch::Tensor& x) override;
  // Mean per-token cross-entropy per sequence [B] (y [B, T]).
  torch::Tensor PerExampleLoss(const torch::Tensor& x, const torch::Tensor& y) override;
  torch::Tensor BatchLoss(const torch::Tensor& x, const torch::Tensor& y) override;

  // Feeds tokens [B, T] after `state` (empty: from the start); returns their
  // logits [B, T, vocab] and writes the state after them.
  virtual torch::Tensor Run(const torch::Tensor& tokens, LmState* state) = 0;

  // Log-softmax (float64) of the next token after feeding tokens [B] from
  // `state`, which is advanced in place. No autograd.
  torch::Tensor StepLogProbs(const torch::Tensor& tokens, LmState* state);

  virtual int64_t vocab() const = 0;
};

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_LANGUAGE_MODEL_H_
