// Evaluation points of an exposure audit's canary model (spec
// eval_every_steps / eval_every_epoch): the optimizer steps after which
// every canary is measured during training. Header-only and free of torch
// and protos so the engine (which measures) and the scorer (which waits for
// the points) derive the same list from the same numbers.
#ifndef MEMAUDIT_COMMON_TRAINING_EXPOSURE_EVAL_STEPS_H_
#define MEMAUDIT_COMMON_TRAINING_EXPOSURE_EVAL_STEPS_H_

#include <cstdint>
#include <vector>

namespace memaudit::exposure {

// At most this many points per canary model, the final model included.
inline constexpr uint64_t kMaxEvalPoints = 64;

// The steps before the last at which the canary model is measured, ascending:
// every_steps k > 0: k, 2k, ... < total_steps; every_epoch: the end of every
// epoch but the last (total_steps / epochs steps each). Neither: none. The
// final model (total_steps) is always the curve's last point and is not
// listed.
inline std::vector<uint64_t> IntermediateEvalSteps(uint64_t total_steps, uint64_t epochs,
                                                   uint64_t every_steps, bool every_epoch) {
  std::vector<uint64_t> out;
  if (every_steps > 0) {
    for (uint64_t s = every_steps; s < total_steps; s += every_steps) {
      out.push_back(s);
      if (out.size() >= kMaxEvalPoints) break;  // bounded even for a bad spec
    }
  } else if (every_epoch && epochs > 1) {
    const uint64_t per_epoch = total_steps / epochs;
    for (uint64_t e = 1; e < epochs && per_epoch > 0; ++e) {
      out.push_back(e * per_epoch);
      if (out.size() >= kMaxEvalPoints) break;
    }
  }
  return out;
}

}  // namespace memaudit::exposure

#endif  // MEMAUDIT_COMMON_TRAINING_EXPOSURE_EVAL_STEPS_H_
