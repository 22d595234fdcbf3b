// Per-example membership signals from logits, in float64 so that tiny
// differences between confident models survive.
#ifndef MEMAUDIT_ENGINE_SIGNALS_H_
#define MEMAUDIT_ENGINE_SIGNALS_H_

#include "engine/torch_api.h"

namespace memaudit::engine {

// phi = z_y - logsumexp_{j != y} z_j  (LiRA's logit scaling of p_y),
// computed without forming p_y so it stays exact when p_y rounds to 1.
torch::Tensor LogitScaledConfidence(const torch::Tensor& logits, const torch::Tensor& labels);

// Cross-entropy per example: logsumexp_j z_j - z_y.
torch::Tensor CrossEntropyPerExample(const torch::Tensor& logits, const torch::Tensor& labels);

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_SIGNALS_H_
