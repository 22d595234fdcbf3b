// Facts about the built-in datasets that the planner, workers and scorer
// must agree on without loading the data.
#ifndef MEMAUDIT_COMMON_TRAINING_DATASETS_H_
#define MEMAUDIT_COMMON_TRAINING_DATASETS_H_

#include <cstdint>

namespace memaudit {

// Examples in Fashion-MNIST's training split (Debian's dataset-fashion-mnist).
inline constexpr uint32_t kFashionMnistTrainExamples = 60000;

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_TRAINING_DATASETS_H_
