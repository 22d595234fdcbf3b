// Character-level recurrent language models (LSTM or GRU, layers x units)
// with a step interface for search: one call advances a batch of states by
// one token and returns next-token log-probabilities.
#ifndef MEMAUDIT_ENGINE_CHAR_LM_H_
#define MEMAUDIT_ENGINE_CHAR_LM_H_

#include <torch/torch.h>

#include <vector>

#include "engine/model.h"

namespace memaudit::engine {

// Recurrent state of a batch: h (and c for LSTM), each [layers, B, units].
// An undefined h means the zero initial state.
struct LmState {
  torch::Tensor h;
  torch::Tensor c;
  // Selects batch rows (index: int64 [M]) of a state; keeps zero state zero.
  LmState Select(const torch::Tensor& index) const;
};

class CharLm : public Model {
 public:
  CharLm(bool lstm, int64_t vocab, int64_t embedding, int64_t layers, int64_t units,
         double dropout);

  // x [B, T] int64 -> logits [B, T, vocab], from the zero state.
  torch::Tensor Forward(const torch::Tensor& x) override;
  torch::Tensor PerExampleLoss(const torch::Tensor& x, const torch::Tensor& y) override;
  torch::Tensor BatchLoss(const torch::Tensor& x, const torch::Tensor& y) override;

  // Runs tokens [B, T] from `state` (zero if undefined); returns logits
  // [B, T, vocab] and writes the final state.
  torch::Tensor Run(const torch::Tensor& tokens, LmState* state);

  // Log-softmax (float64) of the next token after feeding tokens [B] from
  // `state`, which is advanced in place. No autograd.
  torch::Tensor StepLogProbs(const torch::Tensor& tokens, LmState* state);

  int64_t vocab() const { return vocab_; }
  int64_t layers() const { return layers_; }
  int64_t units() const { return units_; }

 private:
  bool lstm_;
  int64_t vocab_, layers_, units_;
  double dropout_;
  torch::nn::Embedding embed_{nullptr};
  std::vector<torch::nn::LSTM> lstm_layers_;
  std::vector<torch::nn::GRU> gru_layers_;
  torch::nn::Linear head_{nullptr};
};

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_CHAR_LM_H_
