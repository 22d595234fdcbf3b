#include "engine/mlp.h"

#include <string>

namespace memaudit::engine {

MlpImpl::MlpImpl(int64_t inputs, const std::vector<uint32_t>& hidden, int64_t classes) {
  int64_t width = inputs;
  for (size_t i = 0; i <= hidden.size(); ++i) {
    const int64_t out = i < hidden.size() ? hidden[i] : classes;
    layers_.push_back(register_module("fc" + std::to_string(i), torch::nn::Linear(width, out)));
    width = out;
  }
}

torch::Tensor MlpImpl::forward(torch::Tensor x) {
  for (size_t i = 0; i < layers_.size(); ++i) {
    x = layers_[i]->forward(x);
    if (i + 1 < layers_.size()) x = torch::relu(x);
  }
  return x;
}

}  // namespace memaudit::engine
