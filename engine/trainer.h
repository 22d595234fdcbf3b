// The generic trainer: any engine::Model, any optimizer/LR schedule, dropout
// and DP-SGD noise from their own seeded generators, checkpoints that resume
// bit-exact, and Fork() for paired arms that share a prefix.
#ifndef MEMAUDIT_ENGINE_TRAINER_H_
#define MEMAUDIT_ENGINE_TRAINER_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/dataset.h"
#include "engine/dp_sgd.h"
#include "engine/model.h"
#include "engine/schedule.h"
#include "engine/torch_api.h"
#include "engine/trainer_options.h"

namespace memaudit::engine {

// Builds a fresh model with its initial weights (a pure function of its seed).
using ModelFactory = std::function<absl::StatusOr<std::shared_ptr<Model>>()>;

// Called after each step with the steps done; false stops training (CANCELLED).
using TrainStepCallback = std::function<bool(uint64_t steps_done, double loss)>;

// Called in each step once the gradient is in the parameters' .grad (DP-SGD:
// privatised) and before the optimizer reads it, with the step's DP-SGD
// stats (empty without DP) and the batch's rows: a one-run audit's gradient
// canaries enter here.
using GradientHook =
    std::function<void(Model& model, const DpGradientStats& stats, int64_t batch_rows)>;

// Called in each step right after the backward pass, before the gradient
// hook and the optimizer: a data-parallel rank all-reduces its gradients
// here (engine/data_parallel.h).
using GradientReducer = std::function<void(Model& model)>;

absl::StatusOr<torch::Device> ParseDevice(const std::string& name);

// Steps `step` through `schedule`'s batches of `data` while `steps_done()`
// is below `until_step` (Trainer::Train and DataParallelTrainer::Train).
absl::Status TrainOnSchedule(
    const TensorDataset& data, const BatchSchedule& schedule, uint64_t until_step,
    const std::function<uint64_t()>& steps_done,
    const std::function<absl::StatusOr<double>(const Batch&, bool advance_lr)>& step,
    const TrainStepCallback& on_step);

class Trainer {
 public:
  static absl::StatusOr<std::unique_ptr<Trainer>> Create(ModelFactory factory,
                                                         TrainerOptions options);

  // One optimizer step on `batch` (on any device); returns the batch loss.
  absl::StatusOr<double> Step(const Batch& batch, bool advance_lr = true);

  // Steps from step() until `until_step` with batches from `schedule`.
  absl::Status Train(const TensorDataset& data, const BatchSchedule& schedule, uint64_t until_step,
                     const TrainStepCallback& on_step = nullptr);

  Model& model() { return *model_; }
  const std::shared_ptr<Model>& model_ptr() const { return model_; }
  torch::Device device() const { return device_; }
  uint64_t step() const { return step_; }        // optimizer steps = data position
  uint64_t lr_step() const { return lr_step_; }  // LR-schedule position
  const TrainerOptions& options() const { return options_; }
  const torch::optim::Optimizer& optimizer() const { return *optimizer_; }
  // Per-example norms of the last DP-SGD step (empty without DP).
  const DpGradientStats& last_dp_stats() const { return dp_stats_; }
  void set_gradient_hook(GradientHook hook) { gradient_hook_ = std::move(hook); }
  void set_gradient_reducer(GradientReducer reducer) { gradient_reducer_ = std::move(reducer); }

  // Checkpoint: weights, buffers, optimizer state, step, LR step and the
  // dropout/noise generator states. Restoring into a trainer built by the
  // same factory and options resumes bit-exact.
  absl::StatusOr<std::string> Serialize() const;
  absl::Status Restore(const std::string& bytes);
  absl::Status Save(const std::string& path) const;
  absl::Status Load(const std::string& path);

  // A new trainer with an identical copy of the live state (in memory).
  absl::StatusOr<std::unique_ptr<Trainer>> Fork() const;

 private:
  Trainer(ModelFactory factory, TrainerOptions options, torch::Device device);

  ModelFactory factory_;
  TrainerOptions options_;
  torch::Device device_;
  std::shared_ptr<Model> model_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  at::Generator dropout_gen_;
  at::Generator noise_gen_;
  uint64_t step_ = 0;
  uint64_t lr_step_ = 0;
  DpGradientStats dp_stats_;
  GradientHook gradient_hook_;
  GradientReducer gradient_reducer_;
};

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_TRAINER_H_
