#include "engine/classifier_run.h"

#include <torch/torch.h>

#include "absl/strings/str_cat.h"
#include "common/seeding.h"
#include "engine/mlp.h"
#include "engine/signals.h"

namespace memaudit::engine {
namespace {

// Gathers rows into float inputs scaled to [0, 1] and int64 labels.
std::pair<torch::Tensor, torch::Tensor> Gather(const LabeledImages& data,
                                               const std::vector<uint32_t>& rows) {
  torch::Tensor x = torch::empty({static_cast<int64_t>(rows.size()), data.features},
                                 torch::kFloat32);
  torch::Tensor y = torch::empty({static_cast<int64_t>(rows.size())}, torch::kLong);
  float* xp = x.data_ptr<float>();
  int64_t* yp = y.data_ptr<int64_t>();
  for (size_t i = 0; i < rows.size(); ++i) {
    const uint8_t* src = data.pixels.data() + static_cast<size_t>(rows[i]) * data.features;
    for (uint32_t f = 0; f < data.features; ++f) xp[i * data.features + f] = src[f] / 255.0f;
    yp[i] = data.labels[rows[i]];
  }
  return {x, y};
}

absl::Status CheckSpec(const LabeledImages& data, const ClassifierRunSpec& spec) {
  if (spec.train_indices.empty()) return absl::InvalidArgumentError("train_indices: empty");
  if (spec.batch_size == 0) return absl::InvalidArgumentError("batch_size: must be > 0");
  for (const auto* indices : {&spec.train_indices, &spec.eval_indices}) {
    for (uint32_t i : *indices) {
      if (i >= data.count) {
        return absl::InvalidArgumentError(
            absl::StrCat("index ", i, " is outside the dataset of ", data.count));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

uint64_t StepsPerEpoch(uint64_t train_size, uint32_t batch_size) {
  return (train_size + batch_size - 1) / batch_size;
}

absl::StatusOr<ClassifierRunResult> RunClassifier(const LabeledImages& data,
                                                  const ClassifierRunSpec& spec,
                                                  const StepCallback& on_step) {
  if (absl::Status s = CheckSpec(data, spec); !s.ok()) return s;
  torch::set_num_threads(static_cast<int>(spec.threads == 0 ? 1 : spec.threads));
  torch::manual_seed(spec.init_seed);
  Mlp model(data.features, spec.hidden, data.classes);
  torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(spec.learning_rate)
                                                       .momentum(spec.momentum)
                                                       .weight_decay(spec.weight_decay));
  auto [train_x, train_y] = Gather(data, spec.train_indices);
  const uint32_t n = static_cast<uint32_t>(spec.train_indices.size());

  ClassifierRunResult result;
  model->train();
  for (uint32_t epoch = 0; epoch < spec.epochs; ++epoch) {
    // The order is ours, not torch's: a pure function of (order_seed, epoch).
    std::vector<uint32_t> order = SeededPermutation(DeriveSeed(spec.order_seed, "epoch", epoch), n);
    torch::Tensor perm = torch::from_blob(order.data(), {n}, torch::kInt32).to(torch::kLong);
    for (uint32_t start = 0; start < n; start += spec.batch_size) {
      const int64_t end = std::min<int64_t>(n, start + spec.batch_size);
      torch::Tensor idx = perm.slice(0, start, end);
      torch::Tensor logits = model->forward(train_x.index_select(0, idx));
      torch::Tensor loss = torch::nn::functional::cross_entropy(logits, train_y.index_select(0, idx));
      optimizer.zero_grad();
      loss.backward();
      optimizer.step();
      ++result.steps;
      if (on_step && !on_step(result.steps)) {
        return absl::CancelledError(absl::StrCat("stopped after ", result.steps, " steps"));
      }
    }
  }

  torch::NoGradGuard no_grad;
  model->eval();
  torch::Tensor train_logits = model->forward(train_x);
  result.train_accuracy = train_logits.argmax(1).eq(train_y).to(torch::kFloat64).mean().item<double>();
  if (!spec.eval_indices.empty()) {
    auto [eval_x, eval_y] = Gather(data, spec.eval_indices);
    torch::Tensor logits = model->forward(eval_x);
    torch::Tensor phi = LogitScaledConfidence(logits, eval_y).contiguous();
    torch::Tensor loss = CrossEntropyPerExample(logits, eval_y).contiguous();
    result.phi.assign(phi.data_ptr<double>(), phi.data_ptr<double>() + phi.numel());
    result.loss.assign(loss.data_ptr<double>(), loss.data_ptr<double>() + loss.numel());
  }
  return result;
}

}  // namespace memaudit::engine
