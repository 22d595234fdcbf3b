// DP-SGD's gradient (Abadi et al. 2016): clip every per-example gradient to
// L2 norm C, sum, add N(0, (sigma C)^2 I), divide by the batch size.
#ifndef MEMAUDIT_ENGINE_DP_SGD_H_
#define MEMAUDIT_ENGINE_DP_SGD_H_

#include <cstdint>
#include <vector>

#include "engine/dataset.h"
#include "engine/model.h"
#include "engine/torch_api.h"
#include "engine/trainer_options.h"

namespace memaudit::engine {

struct DpGradientStats {
  std::vector<double> norms;  // per-example gradient L2 norms before clipping
  double loss = 0;            // mean per-example loss
  bool batched = false;       // the batched path computed them (else the loop)
  // With DpSgdOptions::keep_clipped_sum: the sum of the clipped per-example
  // gradients before the noise, one tensor per parameter.
  std::vector<torch::Tensor> clipped_sum;
};

// How PrivateGradient computes the per-example gradients.
enum class PerExampleGradients {
  kAuto,  // batched where it is exact (see below), else one example at a time
  kLoop,  // always one example at a time (the reference; any model)
};

// Writes the privatised gradient into every parameter's .grad; the noise is
// drawn on the CPU from `noise_gen`, so it is device-independent.
//
// Per-example gradients: for engine's MLP / logistic regression (an
// MlpModel, 2-D input) without active dropout they come from one batched
// forward and one backward to each linear layer's output: with a_i the
// layer's input and delta_i the gradient of example i's loss w.r.t. its
// output, example i's gradient is delta_i a_i^T (weight) and delta_i (bias),
// so ||g_i||^2 = sum over layers ||delta_i||^2 (||a_i||^2 + 1) (accumulated in
// float64) and the clipped sum is (c o delta)^T A. This equals the loop to
// float32 rounding (~1e-6 relative), draws the same noise in the same order,
// and is deterministic. Every other model (CNN, LSTM/GRU, TorchScript, a
// subclass of MlpModel) and an MLP whose dropout is active takes the loop:
// a backward per example.
DpGradientStats PrivateGradient(Model& model, const Batch& batch, const DpSgdOptions& dp,
                                at::Generator& noise_gen,
                                PerExampleGradients method = PerExampleGradients::kAuto);

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_DP_SGD_H_
