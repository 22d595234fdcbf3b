// Built-in image/tabular classifiers: logistic regression, MLP and a small CNN.
#ifndef MEMAUDIT_ENGINE_CLASSIFIER_MODELS_H_
#define MEMAUDIT_ENGINE_CLASSIFIER_MODELS_H_

#include <vector>

#include "engine/model.h"
#include "engine/torch_api.h"

namespace memaudit::engine {

// Linear layers fc0..fcN with ReLU (and optional dropout) between them; no
// hidden layers is logistic regression. Layer names and construction order
// match engine::Mlp, so the same init seed gives the same initial weights.
class MlpModel : public Model {
 public:
  MlpModel(int64_t inputs, const std::vector<uint32_t>& hidden, int64_t classes, double dropout);
  torch::Tensor Forward(const torch::Tensor& x) override;
  const std::vector<torch::nn::Linear>& layers() const { return layers_; }
  double dropout() const { return dropout_; }

 private:
  std::vector<torch::nn::Linear> layers_;
  double dropout_;
};

// conv5x5(c1)-relu-pool2-conv5x5(c2)-relu-pool2-fc(f)-relu-dropout-fc(classes).
class CnnModel : public Model {
 public:
  CnnModel(int64_t channels, int64_t height, int64_t width, int64_t c1, int64_t c2, int64_t fc,
           int64_t classes, double dropout);
  torch::Tensor Forward(const torch::Tensor& x) override;

 private:
  int64_t channels_, height_, width_;
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
  torch::nn::Linear fc1_{nullptr}, fc2_{nullptr};
  double dropout_;
};

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_CLASSIFIER_MODELS_H_
