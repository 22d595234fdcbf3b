#include "engine/sgd_update.h"

#include <cmath>

namespace memaudit::engine {

// Built with -ffp-contract=off (CMakeLists.txt): `buf * momentum` must round
// on its own, as ATen's mul_ does, before the add; the fused steps are
// std::fma, which the x86-64-v4 and AVX2 clones turn into vector FMAs (-O3:
// -O2 leaves these loops scalar). The three arrays are distinct tensors.
__attribute__((target_clones("arch=x86-64-v4", "avx2", "default"))) void SgdUpdate(
    const SgdFactors& f, int64_t n, const float* __restrict g, float* __restrict buf,
    float* __restrict p) {
  const float wd = f.weight_decay, m = f.momentum, keep = f.dampening_keep, step = f.step;
  // The tests of wd and m do not change within the loop: -O3 hoists them
  // out (one loop per case), and each case vectorises.
  for (int64_t i = 0; i < n; ++i) {
    const float d = wd != 0.0f ? std::fma(p[i], wd, g[i]) : g[i];
    if (m == 0.0f) {
      p[i] = std::fma(d, step, p[i]);
    } else {
      const float b = std::fma(d, keep, buf[i] * m);
      buf[i] = b;
      p[i] = std::fma(b, step, p[i]);
    }
  }
}

}  // namespace memaudit::engine
