#include "engine/language_model.h"

namespace memaudit::engine {

LmState LmState::Select(const torch::Tensor& index) const {
  LmState out;
  if (h.defined()) out.h = h.index_select(1, index.to(h.device()));
  if (c.defined()) out.c = c.index_select(1, index.to(c.device()));
  if (tokens.defined()) out.tokens = tokens.index_select(0, index.to(tokens.device()));
  return out;
}

LmState LmState::Cat(const std::vector<LmState>& states) {
  std::vector<torch::Tensor> hs, cs, ts;
  for (const LmState& s : states) {
    if (s.h.defined()) hs.push_back(s.h);
    if (s.c.defined()) cs.push_back(s.c);
    if (s.tokens.defined()) ts.push_back(s.tokens);
  }
  LmState out;
  if (!hs.empty()) out.h = torch::cat(hs, 1);
  if (!cs.empty()) out.c = torch::cat(cs, 1);
  if (!ts.empty()) out.tokens = torch::cat(ts, 0);
  return out;
}

torch::Tensor LanguageModel::Forward(const torch::Tensor& x) {
  LmState state;
  return Run(x, &state);
}

torch::Tensor LanguageModel::PerExampleLoss(const torch::Tensor& x, const torch::Tensor& y) {
  torch::Tensor logits = Forward(x);
  torch::Tensor nll = torch::nn::functional::cross_entropy(
      logits.reshape({-1, vocab()}), y.reshape({-1}),
      torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
  return nll.reshape({x.size(0), x.size(1)}).mean(1);
}

torch::Tensor LanguageModel::BatchLoss(const torch::Tensor& x, const torch::Tensor& y) {
  torch::Tensor logits = Forward(x);
  return torch::nn::functional::cross_entropy(logits.reshape({-1, vocab()}), y.reshape({-1}));
}

torch::Tensor LanguageModel::StepLogProbs(const torch::Tensor& tokens, LmState* state) {
  torch::NoGradGuard no_grad;
  torch::Tensor logits = Run(tokens.unsqueeze(1), state).squeeze(1);
  return torch::log_softmax(logits.to(torch::kFloat64), 1);
}

}  // namespace memaudit::engine
