// A multi-layer perceptron with ReLU activations; no hidden layers gives
// multinomial logistic regression.
#ifndef MEMAUDIT_ENGINE_MLP_H_
#define MEMAUDIT_ENGINE_MLP_H_

#include <torch/torch.h>

#include <vector>

namespace memaudit::engine {

class MlpImpl : public torch::nn::Module {
 public:
  MlpImpl(int64_t inputs, const std::vector<uint32_t>& hidden, int64_t classes);
  torch::Tensor forward(torch::Tensor x);

 private:
  std::vector<torch::nn::Linear> layers_;
};
TORCH_MODULE(Mlp);

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_MLP_H_
