// The largest model memaudit trains. The coordinator checks every model it
// can size from the spec (spec_rules.h); a TorchScript module's size is known
// only once loaded, so the engine checks its file and its parameters then.
#ifndef MEMAUDIT_COMMON_TRAINING_MODEL_LIMITS_H_
#define MEMAUDIT_COMMON_TRAINING_MODEL_LIMITS_H_

#include <cstdint>

namespace memaudit {

// Parameters of one model: 1 GB of float32 weights.
inline constexpr double kMaxModelParameters = 250e6;

// A TorchScript file: the weights above plus code and metadata. Checked
// before the file is read.
inline constexpr uint64_t kMaxTorchScriptBytes = uint64_t{2} << 30;

}  // namespace memaudit

#endif  // MEMAUDIT_COMMON_TRAINING_MODEL_LIMITS_H_
