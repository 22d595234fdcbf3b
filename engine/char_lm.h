// Character-level recurrent language models (LSTM or GRU, layers x units)
// with a step interface for search: one call advances a batch of states by
// one token and returns next-token log-probabilities.
#ifndef MEMAUDIT_ENGINE_CHAR_LM_H_
#define MEMAUDIT_ENGINE_CHAR_LM_H_

#include <vector>

#include "engine/language_model.h"
#include "engine/torch_api.h"

namespace memaudit::engine {

class CharLm : public LanguageModel {
 public:
  CharLm(bool lstm, int64_t vocab, int64_t embedding, int64_t layers, int64_t units,
         double dropout);

  // Runs tokens [B, T] from the recurrent state h (and c) of `state` (zero
  // if undefined); returns logits [B, T, vocab] and writes the final state.
  torch::Tensor Run(const torch::Tensor& tokens, LmState* state) override;

  int64_t vocab() const override { return vocab_; }
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
