#include "engine/classifier_models.h"

#include <string>

#include "engine/linear.h"

namespace memaudit::engine {

MlpModel::MlpModel(int64_t inputs, const std::vector<uint32_t>& hidden, int64_t classes,
                   double dropout)
    : dropout_(dropout) {
  int64_t width = inputs;
  for (size_t i = 0; i <= hidden.size(); ++i) {
    const int64_t out = i < hidden.size() ? hidden[i] : classes;
    layers_.push_back(register_module("fc" + std::to_string(i), torch::nn::Linear(width, out)));
    width = out;
  }
}

torch::Tensor MlpModel::Forward(const torch::Tensor& input) {
  torch::Tensor x = input;
  for (size_t i = 0; i < layers_.size(); ++i) {
    x = Linear(x, layers_[i]->weight, layers_[i]->bias);
    if (i + 1 < layers_.size()) x = Dropout(torch::relu(x), dropout_);
  }
  return x;
}

CnnModel::CnnModel(int64_t channels, int64_t height, int64_t width, int64_t c1, int64_t c2,
                   int64_t fc, int64_t classes, double dropout)
    : channels_(channels), height_(height), width_(width), dropout_(dropout) {
  using torch::nn::Conv2dOptions;
  conv1_ = register_module("conv1", torch::nn::Conv2d(Conv2dOptions(channels, c1, 5).padding(2)));
  conv2_ = register_module("conv2", torch::nn::Conv2d(Conv2dOptions(c1, c2, 5).padding(2)));
  fc1_ = register_module("fc1", torch::nn::Linear(c2 * (height / 4) * (width / 4), fc));
  fc2_ = register_module("fc2", torch::nn::Linear(fc, classes));
}

torch::Tensor CnnModel::Forward(const torch::Tensor& input) {
  torch::Tensor x = input.reshape({input.size(0), channels_, height_, width_});
  x = torch::max_pool2d(torch::relu(conv1_->forward(x)), 2);
  x = torch::max_pool2d(torch::relu(conv2_->forward(x)), 2);
  x = Dropout(torch::relu(Linear(x.flatten(1), fc1_->weight, fc1_->bias)), dropout_);
  return Linear(x, fc2_->weight, fc2_->bias);
}

}  // namespace memaudit::engine
