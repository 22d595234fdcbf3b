// Language-model training windows cut from a token stream.
#ifndef MEMAUDIT_ENGINE_LM_DATASET_H_
#define MEMAUDIT_ENGINE_LM_DATASET_H_

#include <cstdint>
#include <vector>

#include "engine/dataset.h"

namespace memaudit::engine {

// Non-overlapping windows: example i has x = tokens[i*w, i*w + w) and
// y = tokens[i*w + 1, i*w + w + 1) (next-character targets).
TensorDataset LmWindows(const std::vector<int64_t>& tokens, int64_t window);

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_LM_DATASET_H_
