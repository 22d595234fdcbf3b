// Stacks the optimizer state of K plain models into the state of one stacked
// model, so an ensemble can continue K trainers exactly where they stand
// (the forgetting audit's arms after their fork).
#ifndef MEMAUDIT_ENGINE_OPTIMIZER_STATE_STACK_H_
#define MEMAUDIT_ENGINE_OPTIMIZER_STATE_STACK_H_

#include <vector>

#include "absl/status/status.h"
#include "engine/optimizer_spec.h"
#include "engine/torch_api.h"

namespace memaudit::engine {

// from[k] optimizes from_params[k] (a plain model's parameters); to optimizes
// to_params, where to_params[i][k] holds from_params[k][i] (any shape that
// reshapes to it). Writes into `to` the state whose member k is from[k]'s.
// Every member must hold state for the same parameters, with one step count
// where the optimizer counts steps (Adam's bias correction, RMSProp): members
// that took different numbers of steps cannot share one stacked optimizer.
absl::Status StackOptimizerState(OptimizerKind kind,
                                 const std::vector<const torch::optim::Optimizer*>& from,
                                 const std::vector<std::vector<torch::Tensor>>& from_params,
                                 torch::optim::Optimizer& to,
                                 const std::vector<torch::Tensor>& to_params);

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_OPTIMIZER_STATE_STACK_H_
