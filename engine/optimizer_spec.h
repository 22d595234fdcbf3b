// Torch-free descriptions of an optimizer and its learning-rate schedule.
#ifndef MEMAUDIT_ENGINE_OPTIMIZER_SPEC_H_
#define MEMAUDIT_ENGINE_OPTIMIZER_SPEC_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace memaudit::engine {

enum class OptimizerKind { kSgd, kMomentum, kAdam, kRmsProp };

struct OptimizerSpec {
  OptimizerKind kind = OptimizerKind::kSgd;
  double learning_rate = 0.05;
  double momentum = 0.9;  // kMomentum (heavy ball); kRmsProp uses it too if > 0
  double beta1 = 0.9;     // kAdam
  double beta2 = 0.999;   // kAdam
  double alpha = 0.99;    // kRmsProp smoothing
  double eps = 1e-8;      // kAdam, kRmsProp
  // Coupled L2 (added to the gradient), as torch.optim does for all four.
  double weight_decay = 0.0;
};

enum class LrScheduleKind { kConstant, kStep, kCosine };

struct LrScheduleSpec {
  LrScheduleKind kind = LrScheduleKind::kConstant;
  // kStep: lr * gamma^floor(step / step_size).
  uint64_t step_size = 1000;
  double gamma = 0.1;
  // kCosine: min_lr + (lr - min_lr) * (1 + cos(pi * min(step, total) / total)) / 2.
  uint64_t total_steps = 1000;
  double min_lr = 0.0;
};

// The learning rate for the optimizer step numbered `step` (0-based), a pure
// function so a resumed run needs only the step count.
double LearningRateAt(const OptimizerSpec& opt, const LrScheduleSpec& schedule, uint64_t step);

absl::Status ValidateOptimizer(const OptimizerSpec& opt, const LrScheduleSpec& schedule);

// The optimizer a spec names: "sgd", "momentum" (heavy ball with `momentum`),
// "adam" or "rmsprop". An unknown name is InvalidArgument "unknown "x""; the
// caller prefixes the spec field. Inline: the worker reads it before the
// engine module is loaded.
inline absl::StatusOr<OptimizerSpec> OptimizerFromName(absl::string_view name, double learning_rate,
                                                       double momentum, double weight_decay) {
  OptimizerSpec o;
  if (name == "sgd") {
    o.kind = OptimizerKind::kSgd;
  } else if (name == "momentum") {
    o.kind = OptimizerKind::kMomentum;
    o.momentum = momentum;
  } else if (name == "adam") {
    o.kind = OptimizerKind::kAdam;
  } else if (name == "rmsprop") {
    o.kind = OptimizerKind::kRmsProp;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unknown \"", name, "\""));
  }
  o.learning_rate = learning_rate;
  o.weight_decay = weight_decay;
  return o;
}

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_OPTIMIZER_SPEC_H_
