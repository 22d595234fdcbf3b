#include "engine/optimizer.h"

#include <ATen/Parallel.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "engine/sgd_update.h"
#include "engine/torch_api.h"

namespace memaudit::engine {

double LearningRateAt(const OptimizerSpec& opt, const LrScheduleSpec& schedule, uint64_t step) {
  const double lr = opt.learning_rate;
  switch (schedule.kind) {
    case LrScheduleKind::kConstant:
      return lr;
    case LrScheduleKind::kStep:
      return lr * std::pow(schedule.gamma, static_cast<double>(step / schedule.step_size));
    case LrScheduleKind::kCosine: {
      const double t = static_cast<double>(std::min(step, schedule.total_steps)) /
                       static_cast<double>(schedule.total_steps);
      return schedule.min_lr + (lr - schedule.min_lr) * 0.5 * (1.0 + std::cos(M_PI * t));
    }
  }
  return lr;
}

absl::Status ValidateOptimizer(const OptimizerSpec& opt, const LrScheduleSpec& schedule) {
  if (!(opt.learning_rate > 0)) return absl::InvalidArgumentError("learning_rate: must be > 0");
  if (opt.weight_decay < 0) return absl::InvalidArgumentError("weight_decay: must be >= 0");
  if (opt.momentum < 0 || opt.momentum >= 1) {
    return absl::InvalidArgumentError("momentum: must be in [0, 1)");
  }
  if (schedule.kind == LrScheduleKind::kStep && schedule.step_size == 0) {
    return absl::InvalidArgumentError("schedule.step_size: must be > 0");
  }
  if (schedule.kind == LrScheduleKind::kCosine && schedule.total_steps == 0) {
    return absl::InvalidArgumentError("schedule.total_steps: must be > 0");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<torch::optim::Optimizer>> MakeOptimizer(
    const std::vector<at::Tensor>& params, const OptimizerSpec& spec) {
  using namespace torch::optim;  // NOLINT: the option builders read better unqualified
  switch (spec.kind) {
    case OptimizerKind::kSgd:
      return std::make_unique<SGD>(params,
                                   SGDOptions(spec.learning_rate).weight_decay(spec.weight_decay));
    case OptimizerKind::kMomentum:
      return std::make_unique<SGD>(
          params,
          SGDOptions(spec.learning_rate).momentum(spec.momentum).weight_decay(spec.weight_decay));
    case OptimizerKind::kAdam:
      return std::make_unique<Adam>(params, AdamOptions(spec.learning_rate)
                                                .betas({spec.beta1, spec.beta2})
                                                .eps(spec.eps)
                                                .weight_decay(spec.weight_decay));
    case OptimizerKind::kRmsProp:
      return std::make_unique<RMSprop>(params, RMSpropOptions(spec.learning_rate)
                                                   .alpha(spec.alpha)
                                                   .eps(spec.eps)
                                                   .momentum(spec.momentum)
                                                   .weight_decay(spec.weight_decay));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("optimizer.kind: unknown value ", static_cast<int>(spec.kind)));
}

void SetLearningRate(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
}

namespace {

// A CPU float32 tensor of `numel` contiguous values.
bool FusableTensor(const torch::Tensor& t, int64_t numel) {
  return t.defined() && t.device().is_cpu() && t.scalar_type() == torch::kFloat32 &&
         t.is_contiguous() && t.numel() == numel;
}

// The SGD step in one pass per parameter where every parameter allows it;
// false, touching nothing, where one does not.
bool FusedSgdStep(torch::optim::Optimizer& optimizer) {
  auto* sgd = dynamic_cast<torch::optim::SGD*>(&optimizer);
  if (sgd == nullptr) return false;
  struct Update {
    SgdFactors factors;
    torch::Tensor p, g, buf;
  };
  std::vector<Update> updates;
  for (auto& group : sgd->param_groups()) {
    const auto& o = static_cast<const torch::optim::SGDOptions&>(group.options());
    if (o.nesterov()) return false;
    // LibTorch's kernels take the options as float32 scalars.
    SgdFactors f;
    f.weight_decay = static_cast<float>(o.weight_decay());
    f.momentum = static_cast<float>(o.momentum());
    f.dampening_keep = static_cast<float>(1 - o.dampening());
    f.step = static_cast<float>(-1 * o.lr());
    // LibTorch tests the doubles for 0; SgdUpdate the floats. A factor that
    // only its float32 rounds to 0 is left to LibTorch.
    if ((o.weight_decay() != 0) != (f.weight_decay != 0) ||
        (o.momentum() != 0) != (f.momentum != 0)) {
      return false;
    }
    for (const torch::Tensor& p : group.params()) {
      if (!p.grad().defined()) continue;
      Update u{f, p, p.grad(), torch::Tensor()};
      if (!FusableTensor(p, p.numel()) || !FusableTensor(u.g, p.numel())) return false;
      if (o.momentum() != 0) {
        auto state = sgd->state().find(StateKeyOf(p));
        if (state == sgd->state().end()) return false;  // the first step makes the buffer
        u.buf = static_cast<torch::optim::SGDParamState&>(*state->second).momentum_buffer();
        if (!FusableTensor(u.buf, p.numel())) return false;
      }
      updates.push_back(std::move(u));
    }
  }
  for (Update& u : updates) {
    const float* g = u.g.data_ptr<float>();
    float* buf = u.buf.defined() ? u.buf.data_ptr<float>() : nullptr;
    float* p = u.p.data_ptr<float>();
    // Element by element, so any split over the task's threads (as ATen
    // splits its own passes) gives the same bits.
    at::parallel_for(0, u.p.numel(), at::internal::GRAIN_SIZE, [&](int64_t begin, int64_t end) {
      SgdUpdate(u.factors, end - begin, g + begin, buf != nullptr ? buf + begin : nullptr,
                p + begin);
    });
  }
  return true;
}

}  // namespace

bool OptimizerStep(torch::optim::Optimizer& optimizer) {
  if (FusedSgdStep(optimizer)) return true;
  optimizer.step();
  return false;
}

}  // namespace memaudit::engine
