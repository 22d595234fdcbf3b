// Optimizers and learning-rate schedules, described by plain structs so that
// specs can be built outside engine/ and turned into LibTorch objects here.
#ifndef MEMAUDIT_ENGINE_OPTIMIZER_H_
#define MEMAUDIT_ENGINE_OPTIMIZER_H_

#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/optimizer_spec.h"
#include "engine/torch_api.h"

namespace memaudit::engine {

// Builds the optimizer over `params`. Momentum buffers, Adam moments and
// RMSProp averages live in the optimizer's state and are checkpointed.
absl::StatusOr<std::unique_ptr<torch::optim::Optimizer>> MakeOptimizer(
    const std::vector<at::Tensor>& params, const OptimizerSpec& spec);

// Sets the learning rate of every parameter group.
void SetLearningRate(torch::optim::Optimizer& optimizer, double lr);

// optimizer.step(), to the bit. SGD on CPU float32 parameters (after its
// first step, which creates the momentum buffers, and without Nesterov)
// updates each parameter in one pass (engine/sgd_update.h): true where it did.
bool OptimizerStep(torch::optim::Optimizer& optimizer);

// The optimizer's state key of parameter p: its TensorImpl's address, as a
// string in LibTorch 1.x and as the pointer itself in 2.x.
using OptimizerStateKey =
    std::decay_t<decltype(std::declval<torch::optim::Optimizer&>().state())>::key_type;
template <typename Key = OptimizerStateKey>
Key StateKeyOf(const torch::Tensor& p) {
  void* impl = p.unsafeGetTensorImpl();
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream text;
    text << impl;
    return text.str();
  } else {
    return impl;
  }
}

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_OPTIMIZER_H_
