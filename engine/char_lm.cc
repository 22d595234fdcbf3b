#include "engine/char_lm.h"

#include <string>

namespace memaudit::engine {

CharLm::CharLm(bool lstm, int64_t vocab, int64_t embedding, int64_t layers, int64_t units,
               double dropout)
    : lstm_(lstm), vocab_(vocab), layers_(layers), units_(units), dropout_(dropout) {
  embed_ = register_module("embed", torch::nn::Embedding(vocab, embedding));
  // One module per layer so that dropout between layers uses our generator
  // rather than LibTorch's global one.
  for (int64_t l = 0; l < layers; ++l) {
    const int64_t in = l == 0 ? embedding : units;
    if (lstm) {
      lstm_layers_.push_back(
          register_module("lstm" + std::to_string(l),
                          torch::nn::LSTM(torch::nn::LSTMOptions(in, units).batch_first(true))));
    } else {
      gru_layers_.push_back(
          register_module("gru" + std::to_string(l),
                          torch::nn::GRU(torch::nn::GRUOptions(in, units).batch_first(true))));
    }
  }
  head_ = register_module("head", torch::nn::Linear(units, vocab));
}

torch::Tensor CharLm::Run(const torch::Tensor& tokens, LmState* state) {
  const int64_t batch = tokens.size(0);
  torch::Tensor x = Dropout(embed_->forward(tokens), dropout_);
  LmState next;
  std::vector<torch::Tensor> hs, cs;
  for (int64_t l = 0; l < layers_; ++l) {
    if (lstm_) {
      torch::Tensor h0, c0;
      if (state->h.defined()) {
        h0 = state->h.slice(0, l, l + 1);
        c0 = state->c.slice(0, l, l + 1);
      } else {
        h0 = torch::zeros({1, batch, units_}, x.options());
        c0 = torch::zeros({1, batch, units_}, x.options());
      }
      auto [out, hc] = lstm_layers_[l]->forward(x, std::make_tuple(h0, c0));
      x = out;
      hs.push_back(std::get<0>(hc));
      cs.push_back(std::get<1>(hc));
    } else {
      torch::Tensor h0 = state->h.defined() ? state->h.slice(0, l, l + 1)
                                            : torch::zeros({1, batch, units_}, x.options());
      auto [out, h] = gru_layers_[l]->forward(x, h0);
      x = out;
      hs.push_back(h);
    }
    x = Dropout(x, dropout_);
  }
  state->h = torch::cat(hs, 0);
  state->c = lstm_ ? torch::cat(cs, 0) : torch::Tensor();
  return head_->forward(x);
}

}  // namespace memaudit::engine
