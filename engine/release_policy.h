// Torch-free description of a model-release policy.
#ifndef MEMAUDIT_ENGINE_RELEASE_POLICY_H_
#define MEMAUDIT_ENGINE_RELEASE_POLICY_H_

#include <cstdint>

namespace memaudit::engine {

enum class ReleaseKind { kFull, kTopK, kLabelOnly, kTemperature };

struct ReleasePolicy {
  ReleaseKind kind = ReleaseKind::kFull;
  int64_t top_k = 1;  // kTopK
};

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_RELEASE_POLICY_H_
