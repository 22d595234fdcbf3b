// Optimizer steps in one epoch of minibatch training: the one definition of
// this derived value. The last batch of an epoch may be short, so
// ceil(examples / batch_size); 0 when either is 0.
#ifndef MEMAUDIT_COMMON_BASE_STEPS_H_
#define MEMAUDIT_COMMON_BASE_STEPS_H_

#include <cstdint>

namespace memaudit {

constexpr uint64_t StepsPerEpoch(uint64_t examples, uint64_t batch_size) {
  return batch_size == 0 ? 0 : (examples + batch_size - 1) / batch_size;
}

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_BASE_STEPS_H_
