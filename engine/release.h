// What a released model lets an attacker see (Unlearning paper, A.9): the
// full posterior, its top-k, the label only, or a posterior calibrated by a
// temperature fitted per released model on its own validation draw.
#ifndef MEMAUDIT_ENGINE_RELEASE_H_
#define MEMAUDIT_ENGINE_RELEASE_H_

#include "engine/release_policy.h"
#include "engine/torch_api.h"

namespace memaudit::engine {

// Temperature T > 0 minimising the mean NLL of softmax(z / T) on (logits,
// labels), by golden-section search over log T in [-4, 4], in float64.
double FitTemperature(const torch::Tensor& logits, const torch::Tensor& labels);

// Released pseudo-posteriors [N, C] (float64), as the adversary rebuilds them:
// top-k spreads the remaining mass evenly over the other C - k classes and
// label-only is one-hot. kTemperature divides logits by `temperature`.
torch::Tensor ReleasedPosteriors(const torch::Tensor& logits, const ReleasePolicy& policy,
                                 double temperature = 1.0);

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_RELEASE_H_
