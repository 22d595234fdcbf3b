#include "engine/ensemble.h"

#include <ATen/CPUGeneratorImpl.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/base/seeding.h"
#include "common/base/status_macros.h"
#include "engine/classifier_models.h"
#include "engine/linear.h"
#include "engine/model.h"
#include "engine/optimizer.h"
#include "engine/optimizer_state_stack.h"
#include "engine/trainer.h"

namespace memaudit::engine {
namespace {

// Member parameters in the plain model's order, detached.
std::vector<std::vector<torch::Tensor>> BuildMembers(const ModelSpec& spec,
                                                     const std::vector<uint64_t>& seeds) {
  std::vector<std::vector<torch::Tensor>> per_member;
  for (uint64_t seed : seeds) {
    std::shared_ptr<Model> m = *BuildModel(spec, seed);
    std::vector<torch::Tensor> p;
    for (const auto& t : m->parameters()) p.push_back(t.detach());
    per_member.push_back(std::move(p));
  }
  return per_member;
}

}  // namespace

torch::Tensor StackedModel::Dropout(const torch::Tensor& x, double p) {
  if (p <= 0 || !is_training() || dropout_gens_ == nullptr) return x;
  const int64_t width = x.size(1), features = x.size(2);
  std::vector<torch::Tensor> keep;
  for (int64_t k = 0; k < members_; ++k) {
    const int64_t rows = k < static_cast<int64_t>(dropout_rows_.size()) ? dropout_rows_[k] : width;
    // Exactly Model::Dropout's draw for member k's own [rows, F] batch, so its
    // generator advances as when it trains alone.
    torch::Tensor m = torch::empty({rows, features}, torch::kFloat32);
    m.bernoulli_(1.0 - p, (*dropout_gens_)[k]);
    if (rows < width) m = torch::cat({m, torch::zeros({width - rows, features})});
    keep.push_back(m);
  }
  return x * torch::stack(keep).to(x.device(), x.scalar_type()) / (1.0 - p);
}

StackedMlp::StackedMlp(const ModelSpec& spec, const std::vector<uint64_t>& seeds)
    // Build each member exactly as the plain trainer would, then stack.
    : StackedMlp(spec, BuildMembers(spec, seeds)) {}

StackedMlp::StackedMlp(const ModelSpec& spec,
                       const std::vector<std::vector<torch::Tensor>>& per_member)
    : StackedModel(static_cast<int64_t>(per_member.size())),
      dropout_(spec.kind == ModelKind::kMlp ? spec.dropout : 0.0) {
  const size_t layers = per_member[0].size() / 2;
  for (size_t l = 0; l < layers; ++l) {
    std::vector<torch::Tensor> w, b;
    for (const auto& p : per_member) {
      w.push_back(p[2 * l].detach());
      b.push_back(p[2 * l + 1].detach().unsqueeze(0));
    }
    weights_.push_back(register_parameter("w" + std::to_string(l), torch::stack(w)));
    biases_.push_back(register_parameter("b" + std::to_string(l), torch::stack(b)));
  }
}

torch::Tensor StackedMlp::Forward(const torch::Tensor& input) {
  torch::Tensor x = input;
  for (size_t l = 0; l < weights_.size(); ++l) {
    // Per member exactly the products MlpModel's Linear runs (engine/linear.h).
    x = StackedLinear(x, weights_[l], biases_[l]);
    if (l + 1 < weights_.size()) x = Dropout(torch::relu(x), dropout_);
  }
  return x;
}

bool StackedMlp::SetGradients(const torch::Tensor& x, const LossOf& loss_of) {
  if (dropout_ > 0 || !RunsOnSgemm(x, weights_[0])) return false;
  // Forward, keeping each layer's input (for layer l > 0, the ReLU's output).
  std::vector<torch::Tensor> inputs;
  inputs.reserve(weights_.size());
  torch::Tensor a = x;
  {
    torch::NoGradGuard no_grad;
    for (size_t l = 0; l < weights_.size(); ++l) {
      inputs.push_back(a.contiguous());
      a = StackedLinearForward(inputs[l], weights_[l], biases_[l]);
      if (l + 1 < weights_.size()) a = torch::relu(a);
    }
  }
  // The loss's own backward (cross-entropy, means) through autograd, from a
  // leaf: small, and exactly what backward() runs there.
  const torch::Tensor logits = a.detach().requires_grad_();
  torch::Tensor g = torch::autograd::grad({loss_of(logits)}, {logits})[0];
  torch::NoGradGuard no_grad;
  for (size_t l = weights_.size(); l-- > 0;) {
    LinearGradients grads =
        StackedLinearBackward(g, inputs[l], weights_[l], /*input_gradient=*/l > 0);
    weights_[l].mutable_grad() = grads.w;
    biases_[l].mutable_grad() = grads.b;
    // ReLU's backward as autograd runs it: zero where its output is not > 0.
    if (l > 0) g = at::threshold_backward(grads.x, inputs[l], 0);
  }
  return true;
}

std::vector<torch::Tensor> StackedMlp::MemberParameters(int64_t k) const {
  std::vector<torch::Tensor> out;
  for (size_t l = 0; l < weights_.size(); ++l) {
    out.push_back(weights_[l][k]);
    out.push_back(biases_[l][k][0]);
  }
  return out;
}

StackedCnn::StackedCnn(const ModelSpec& spec, const std::vector<uint64_t>& seeds)
    : StackedModel(static_cast<int64_t>(seeds.size())),
      channels_(spec.image_channels),
      dropout_(spec.dropout) {
  // The image shape as BuildModel derives it; the layer widths from the
  // built member (CnnModel order: conv1.{w,b}, conv2.{w,b}, fc1.{w,b}, fc2.{w,b}).
  const int64_t pixels = spec.inputs / spec.image_channels;
  height_ = spec.image_height > 0 ? spec.image_height
                                  : static_cast<int64_t>(std::lround(std::sqrt(pixels)));
  width_ = pixels / height_;
  std::vector<std::vector<torch::Tensor>> per_member = BuildMembers(spec, seeds);
  c1_ = per_member[0][0].size(0);
  c2_ = per_member[0][2].size(0);
  auto gather = [&](size_t i, bool stack_head) {
    std::vector<torch::Tensor> t;
    t.reserve(per_member.size());
    for (const auto& p : per_member)
      t.push_back(stack_head && i % 2 == 1 ? p[i].unsqueeze(0) : p[i]);
    // Conv filters and biases concatenate along output channels: group k's
    // filters are member k's.
    return stack_head ? torch::stack(t) : torch::cat(t);
  };
  conv1_w_ = register_parameter("conv1_w", gather(0, false));
  conv1_b_ = register_parameter("conv1_b", gather(1, false));
  conv2_w_ = register_parameter("conv2_w", gather(2, false));
  conv2_b_ = register_parameter("conv2_b", gather(3, false));
  fc1_w_ = register_parameter("fc1_w", gather(4, true));
  fc1_b_ = register_parameter("fc1_b", gather(5, true));
  fc2_w_ = register_parameter("fc2_w", gather(6, true));
  fc2_b_ = register_parameter("fc2_b", gather(7, true));
}

torch::Tensor StackedCnn::Forward(const torch::Tensor& input) {
  const int64_t k = members_, b = input.size(1);
  // [K, B, C*H*W] -> [B, K*C, H, W]: member k's images are channel group k.
  torch::Tensor x = input.reshape({k, b, channels_, height_, width_})
                        .transpose(0, 1)
                        .reshape({b, k * channels_, height_, width_});
  // K > 1 is not bit-exact anyway (see docs/engine.md), so it takes oneDNN's
  // faster channels-last kernels (grouped conv and max-pool); K = 1 keeps the
  // plain model's layout and stays bit-identical to it.
  if (k > 1) x = x.contiguous(torch::MemoryFormat::ChannelsLast);
  // CnnModel's conv2d calls (stride 1, padding 2) with groups = K. relu_ in
  // place (the conv's backward does not need its output) spares a K-times
  // larger buffer than one member's, which costs memory bandwidth on CPUs.
  x = torch::conv2d(x, conv1_w_, conv1_b_, {1, 1}, {2, 2}, {1, 1}, k);
  x = torch::max_pool2d(torch::relu_(x), 2);
  x = torch::conv2d(x, conv2_w_, conv2_b_, {1, 1}, {2, 2}, {1, 1}, k);
  x = torch::max_pool2d(torch::relu_(x), 2);
  // [B, K*c2, h, w] -> [K, B, c2*h*w], each x[k] member k's contiguous
  // flatten(1), so the head's GEMMs see the operands the plain model's do.
  if (k == 1) {
    x = x.reshape({b, 1, -1}).transpose(0, 1).contiguous();
  } else {
    // Through the NHWC view, so that the gradient comes back channels-last:
    // pooling's and ReLU's backward slow down badly on mixed layouts.
    const int64_t hw = x.size(2) * x.size(3);
    x = x.permute({0, 2, 3, 1})
            .reshape({b, hw, k, c2_})
            .permute({2, 0, 3, 1})
            .contiguous()
            .reshape({k, b, c2_ * hw});
  }
  x = Dropout(torch::relu(StackedLinear(x, fc1_w_, fc1_b_)), dropout_);
  return StackedLinear(x, fc2_w_, fc2_b_);
}

std::vector<torch::Tensor> StackedCnn::MemberParameters(int64_t k) const {
  return {conv1_w_.narrow(0, k * c1_, c1_),
          conv1_b_.narrow(0, k * c1_, c1_),
          conv2_w_.narrow(0, k * c2_, c2_),
          conv2_b_.narrow(0, k * c2_, c2_),
          fc1_w_[k],
          fc1_b_[k][0],
          fc2_w_[k],
          fc2_b_[k][0]};
}

absl::Status EnsembleTrainer::Place(torch::Device device, const TrainerOptions& options) {
  model_->to(device);
  device_ = device;
  options_ = options;
  MEMAUDIT_ASSIGN_OR_RETURN(std::unique_ptr<torch::optim::Optimizer> opt,
                            MakeOptimizer(model_->parameters(), options.optimizer));
  optimizer_ = std::move(opt);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<EnsembleTrainer>> EnsembleTrainer::Create(
    const ModelSpec& spec, const TrainerOptions& options, std::vector<EnsembleMember> members,
    uint32_t batch_size) {
  if (spec.kind != ModelKind::kLogReg && spec.kind != ModelKind::kMlp &&
      spec.kind != ModelKind::kCnn) {
    return absl::InvalidArgumentError("model.kind: ensembles support kLogReg, kMlp and kCnn");
  }
  if (options.dp.enabled) return absl::InvalidArgumentError("dp: not batched yet");
  if (members.empty()) return absl::InvalidArgumentError("members: empty");
  if (batch_size == 0) return absl::InvalidArgumentError("batch_size: must be > 0");
  MEMAUDIT_RETURN_IF_ERROR(ValidateModelSpec(spec));
  MEMAUDIT_RETURN_IF_ERROR(ValidateOptimizer(options.optimizer, options.schedule));
  MEMAUDIT_ASSIGN_OR_RETURN(torch::Device device, ParseDevice(options.device));
  if (options.threads > 0) torch::set_num_threads(static_cast<int>(options.threads));
  std::unique_ptr<EnsembleTrainer> t(new EnsembleTrainer());
  ModelSpec stacked = spec;
  if (spec.kind == ModelKind::kLogReg) stacked.hidden.clear();
  std::vector<uint64_t> seeds;
  for (size_t k = 0; k < members.size(); ++k) {
    if (members[k].pool.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("members[", k, "].pool: empty"));
    }
    seeds.push_back(members[k].init_seed);
    // Seeded as Trainer seeds its dropout generator from options.dropout_seed.
    t->dropout_gens_.push_back(at::make_generator<at::CPUGeneratorImpl>(
        DeriveSeed(members[k].dropout_seed, "dropout", 0)));
    t->schedules_.push_back(std::make_shared<EpochSchedule>(std::move(members[k].pool), batch_size,
                                                            members[k].order_seed));
    t->offsets_.push_back(0);
  }
  if (spec.kind == ModelKind::kCnn) {
    t->model_ = std::make_shared<StackedCnn>(stacked, seeds);
  } else {
    t->model_ = std::make_shared<StackedMlp>(stacked, seeds);
  }
  MEMAUDIT_RETURN_IF_ERROR(t->Place(device, options));
  return t;
}

absl::StatusOr<std::unique_ptr<EnsembleTrainer>> EnsembleTrainer::Continue(
    const ModelSpec& spec, const TrainerOptions& options,
    const std::vector<const Trainer*>& trainers,
    std::vector<std::shared_ptr<const BatchSchedule>> schedules) {
  if (spec.kind != ModelKind::kLogReg && spec.kind != ModelKind::kMlp) {
    return absl::InvalidArgumentError("model.kind: continuing trainers needs kLogReg or kMlp");
  }
  if (spec.kind == ModelKind::kMlp && spec.dropout > 0) {
    return absl::InvalidArgumentError("model.dropout: continuing trainers needs none");
  }
  if (options.dp.enabled) return absl::InvalidArgumentError("dp: not batched yet");
  if (trainers.empty()) return absl::InvalidArgumentError("trainers: empty");
  if (schedules.size() != trainers.size()) {
    return absl::InvalidArgumentError("schedules: one per trainer");
  }
  MEMAUDIT_ASSIGN_OR_RETURN(torch::Device device, ParseDevice(options.device));
  std::unique_ptr<EnsembleTrainer> t(new EnsembleTrainer());
  std::vector<const torch::optim::Optimizer*> optimizers;
  std::vector<std::vector<torch::Tensor>> params;
  for (size_t k = 0; k < trainers.size(); ++k) {
    const Trainer& from = *trainers[k];
    if (from.lr_step() != trainers[0]->lr_step()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "trainers[", k, "]: LR step ", from.lr_step(), " differs from ", trainers[0]->lr_step()));
    }
    if (schedules[k] == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("schedules[", k, "]: null"));
    }
    optimizers.push_back(&from.optimizer());
    params.push_back(from.model_ptr()->parameters());
    t->offsets_.push_back(from.step() - from.lr_step());
  }
  ModelSpec stacked = spec;
  if (spec.kind == ModelKind::kLogReg) stacked.hidden.clear();
  try {
    t->model_ = std::make_shared<StackedMlp>(stacked, params);
  } catch (const c10::Error& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("trainers: not models of this spec: ", e.what_without_backtrace()));
  }
  t->schedules_ = std::move(schedules);
  t->step_ = trainers[0]->lr_step();
  MEMAUDIT_RETURN_IF_ERROR(t->Place(device, options));
  MEMAUDIT_RETURN_IF_ERROR(StackOptimizerState(options.optimizer.kind, optimizers, params,
                                               *t->optimizer_, t->model_->parameters()));
  return t;
}

absl::Status EnsembleTrainer::Train(const TensorDataset& data, uint64_t until_step,
                                    const std::function<bool()>& after_step) {
  const int64_t k_members = static_cast<int64_t>(schedules_.size());
  torch::Tensor all_x = data.x().to(device_), all_y = data.y().to(device_);
  while (step_ < until_step) {
    std::vector<BatchPlan> plans;
    size_t width = 0;
    for (size_t k = 0; k < schedules_.size(); ++k) {
      plans.push_back(schedules_[k]->At(step_ + offsets_[k]));
      // The LR schedule is shared: a member cannot hold its LR alone.
      if (!plans.back().advance_lr) {
        return absl::FailedPreconditionError(
            absl::StrCat("members[", k, "]: a step that holds the LR cannot be batched"));
      }
      width = std::max(width, plans.back().ids.size());
    }
    // Padded rows repeat row 0 and are masked out of the loss, so they add
    // exact zeros to every gradient.
    std::vector<int64_t> ids(k_members * width, 0);
    std::vector<float> mask(k_members * width, 0.0f);
    std::vector<double> count(k_members);
    std::vector<int64_t> rows(k_members);
    for (int64_t k = 0; k < k_members; ++k) {
      for (size_t i = 0; i < plans[k].ids.size(); ++i) {
        const int64_t id = plans[k].ids[i];
        if (id < 0 || id >= data.size()) {
          return absl::InvalidArgumentError(
              absl::StrCat("members[", k, "].pool: row ", id, " outside the dataset"));
        }
        ids[k * width + i] = id;
        mask[k * width + i] = 1.0f;
      }
      count[k] = static_cast<double>(plans[k].ids.size());
      rows[k] = static_cast<int64_t>(plans[k].ids.size());
    }
    torch::Tensor x = GatherRows(all_x, ids).reshape({k_members, static_cast<int64_t>(width), -1});
    torch::Tensor y = GatherRows(all_y, ids);
    SetLearningRate(*optimizer_, LearningRateAt(options_.optimizer, options_.schedule, step_));
    // Gradients set to none, not zeroed: backward's result then becomes the
    // gradient as it is, where zero_grad's 0 + g cost a pass to zero and one
    // to add, over every parameter, every step (the same values: 0 + g = g;
    // every stacked parameter gets a gradient each step).
    for (torch::Tensor& p : model_->parameters()) p.mutable_grad().reset();
    model_->train();
    model_->SetDropout(&dropout_gens_, std::move(rows));
    const bool padded =
        std::any_of(count.begin(), count.end(), [&](double c) { return c != width; });
    auto loss_of = [&](const torch::Tensor& logits) {
      torch::Tensor ce = torch::nn::functional::cross_entropy(
          logits.reshape({k_members * static_cast<int64_t>(width), -1}), y,
          torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
      ce = ce.reshape({k_members, static_cast<int64_t>(width)});
      // Each member's loss is its own batch mean; summing keeps gradients apart.
      return padded ? ((ce * torch::tensor(mask).to(device_).reshape(ce.sizes())).sum(1) /
                       torch::tensor(count, torch::kFloat64).to(device_, torch::kFloat32))
                          .sum()
                    : ce.mean(1).sum();
    };
    if (!model_->SetGradients(x, loss_of)) loss_of(model_->Forward(x)).backward();
    OptimizerStep(*optimizer_);
    ++step_;
    if (after_step && !after_step()) {
      return absl::CancelledError(absl::StrCat("stopped after ensemble step ", step_));
    }
  }
  return absl::OkStatus();
}

torch::Tensor EnsembleTrainer::Logits(const torch::Tensor& x) {
  torch::NoGradGuard no_grad;
  model_->eval();
  const int64_t k = model_->members();
  torch::Tensor xs = x.to(device_).unsqueeze(0).expand({k, x.size(0), x.size(1)}).contiguous();
  return model_->Forward(xs);
}

}  // namespace memaudit::engine
