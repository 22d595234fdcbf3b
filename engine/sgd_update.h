// torch::optim::SGD's update of one parameter in a single pass over its
// elements, where LibTorch makes up to four (weight decay, the momentum's
// scale and add, the step), each through memory: the parameters, momenta
// and gradients of a stacked ensemble outgrow the core's caches.
#ifndef MEMAUDIT_ENGINE_SGD_UPDATE_H_
#define MEMAUDIT_ENGINE_SGD_UPDATE_H_

#include <cstdint>

namespace memaudit::engine {

// The factors as LibTorch's kernels round them: float32 of the double options.
struct SgdFactors {
  float weight_decay = 0;    // 0: none
  float momentum = 0;        // 0: no momentum buffer
  float dampening_keep = 1;  // 1 - dampening
  float step = 0;            // -learning rate
};

// For each i, as SGD::step computes it (ATen's add with alpha is one fused
// multiply-add, its scalar multiply one rounding):
//   d = weight_decay != 0 ? fma(p, weight_decay, g) : g
//   buf = fma(d, dampening_keep, buf * momentum)     (momentum != 0)
//   p = fma(momentum != 0 ? buf : d, step, p)
// Nesterov momentum and a first step (which copies d into the buffer) are
// the caller's to leave to LibTorch. buf is unused when momentum is 0.
void SgdUpdate(const SgdFactors& f, int64_t n, const float* __restrict g, float* __restrict buf,
               float* __restrict p);

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_SGD_UPDATE_H_
