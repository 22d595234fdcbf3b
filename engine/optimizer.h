// Optimizers and learning-rate schedules, described by plain structs so that
// specs can be built outside engine/ and turned into LibTorch objects here.
#ifndef MEMAUDIT_ENGINE_OPTIMIZER_H_
#define MEMAUDIT_ENGINE_OPTIMIZER_H_

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/optimizer_spec.h"

namespace memaudit::engine {

// Builds the optimizer over `params`. Momentum buffers, Adam moments and
// RMSProp averages live in the optimizer's state and are checkpointed.
absl::StatusOr<std::unique_ptr<torch::optim::Optimizer>> MakeOptimizer(
    const std::vector<at::Tensor>& params, const OptimizerSpec& spec);

// Sets the learning rate of every parameter group.
void SetLearningRate(torch::optim::Optimizer& optimizer, double lr);

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_OPTIMIZER_H_
