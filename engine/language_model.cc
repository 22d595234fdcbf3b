#include "engine/language_model.h"

namespace memaudit::engine {

LmState LmState::Select(const torch::Tensor& index) const {
  LmState out;
  if (h.defined()) out.h = h.index_select(1, index.to(h.device()));
  if (c.defined()) out.c = c.index_select(1, index.to(c.device()));
  if (keys.defined() && keys.size(1) == 1) {
    // Every selected row is this one row: its cache becomes the shared
    // prefix, and each row starts with nothing of its own.
    out.shared_keys = shared_keys.defined() ? torch::cat({shared_keys, keys}, 2) : keys;
    out.shared_values = shared_values.defined() ? torch::cat({shared_values, values}, 2) : values;
    const torch::Tensor rows = index.to(keys.device());
    out.keys = keys.slice(2, 0, 0).index_select(1, rows);
    out.values = values.slice(2, 0, 0).index_select(1, rows);
  } else if (keys.defined()) {
    out.shared_keys = shared_keys;
    out.shared_values = shared_values;
    out.keys = keys.index_select(1, index.to(keys.device()));
    out.values = values.index_select(1, index.to(values.device()));
  }
  if (tokens.defined()) out.tokens = tokens.index_select(0, index.to(tokens.device()));
  return out;
}

LmState LmState::Cat(const std::vector<LmState>& states) {
  std::vector<torch::Tensor> hs, cs, ks, vs, ts;
  // Transformer states sharing one prefix keep sharing it; otherwise each
  // row gets the whole cache as its own.
  bool one_prefix = true;
  for (const LmState& s : states) {
    one_prefix &= s.shared_keys.is_same(states.front().shared_keys);
  }
  for (const LmState& s : states) {
    if (s.keys.defined() && !one_prefix && s.shared_keys.defined()) {
      const int64_t rows = s.keys.size(1);
      const auto whole = [rows](const torch::Tensor& shared, const torch::Tensor& own) {
        return torch::cat(
            {shared.expand({shared.size(0), rows, shared.size(2), shared.size(3)}), own}, 2);
      };
      ks.push_back(whole(s.shared_keys, s.keys));
      vs.push_back(whole(s.shared_values, s.values));
      continue;
    }
    if (s.h.defined()) hs.push_back(s.h);
    if (s.c.defined()) cs.push_back(s.c);
    if (s.keys.defined()) ks.push_back(s.keys);
    if (s.values.defined()) vs.push_back(s.values);
    if (s.tokens.defined()) ts.push_back(s.tokens);
  }
  LmState out;
  if (!hs.empty()) out.h = torch::cat(hs, 1);
  if (!cs.empty()) out.c = torch::cat(cs, 1);
  if (!ks.empty()) out.keys = torch::cat(ks, 1);
  if (!vs.empty()) out.values = torch::cat(vs, 1);
  if (!ts.empty()) out.tokens = torch::cat(ts, 0);
  if (one_prefix && !states.empty()) {
    out.shared_keys = states.front().shared_keys;
    out.shared_values = states.front().shared_values;
  }
  return out;
}

int64_t LmState::Length() const {
  if (keys.defined()) return keys.size(2) + (shared_keys.defined() ? shared_keys.size(2) : 0);
  if (tokens.defined()) return tokens.size(1);
  return -1;
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
