// DP-SGD's gradient (Abadi et al. 2016): clip every per-example gradient to
// L2 norm C, sum, add N(0, (sigma C)^2 I), divide by the batch size.
#ifndef MEMAUDIT_ENGINE_DP_SGD_H_
#define MEMAUDIT_ENGINE_DP_SGD_H_

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "engine/dataset.h"
#include "engine/model.h"
#include "engine/trainer_options.h"

namespace memaudit::engine {

struct DpGradientStats {
  std::vector<double> norms;  // per-example gradient L2 norms before clipping
  double loss = 0;            // mean per-example loss
};

// Writes the privatised gradient into every parameter's .grad. Per-example
// gradients are computed one example at a time (any model works); the noise
// is drawn on the CPU from `noise_gen`, so it is device-independent.
DpGradientStats PrivateGradient(Model& model, const Batch& batch, const DpSgdOptions& dp,
                                at::Generator& noise_gen);

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_DP_SGD_H_
