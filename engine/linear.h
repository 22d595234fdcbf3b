// The fully connected layer of every classifier the engine trains (MLP
// layers, the CNN's head), alone and stacked K-wide for ensembles. On CPU
// each product is one Sgemm call on one thread, so member k of a stacked
// layer gets exactly the bits the same layer gets alone, whatever K and the
// thread count; other devices and dtypes run torch::linear / baddbmm (on
// bfloat16 inputs where the CUDA precision is bf16, engine/device.h).
#ifndef MEMAUDIT_ENGINE_LINEAR_H_
#define MEMAUDIT_ENGINE_LINEAR_H_

#include "engine/torch_api.h"

namespace memaudit::engine {

// y = x · wᵀ + b: x [..., in], w [out, in], b [out] -> [..., out]. Autograd-aware
// (gradients for x when it needs one, w and b).
torch::Tensor Linear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b);

// y[k] = x[k] · w[k]ᵀ + b[k] for each member k: x [K, n, in], w [K, out, in],
// b [K, 1, out] -> [K, n, out]. Members run in parallel on CPU (at::parallel_for),
// each one's products exactly Linear's.
torch::Tensor StackedLinear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b);

// Whether Linear and StackedLinear run on Sgemm for these operands (CPU,
// float32), where the two halves below apply.
bool RunsOnSgemm(const torch::Tensor& x, const torch::Tensor& w);

// StackedLinear's forward and backward without autograd, for a training
// step that computes its own gradients (the ensemble's MLP step): the same
// products, so the same bits. Backward takes g = dL/dy [K, n, out] and the
// forward's x and w; x's gradient only when input_gradient.
torch::Tensor StackedLinearForward(const torch::Tensor& x, const torch::Tensor& w,
                                   const torch::Tensor& b);
struct LinearGradients {
  torch::Tensor x, w, b;  // [K, n, in] (or undefined), [K, out, in], [K, 1, out]
};
LinearGradients StackedLinearBackward(const torch::Tensor& g, const torch::Tensor& x,
                                      const torch::Tensor& w, bool input_gradient);

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_LINEAR_H_
