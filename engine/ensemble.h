// K models with one architecture and one set of hyper-parameters, each with
// its own init seed, data subset, data order and dropout stream, trained as
// one batched model: linear weights stacked [K, out, in] and run as baddbmm,
// CNN convolutions run as one grouped convolution (groups = K).
#ifndef MEMAUDIT_ENGINE_ENSEMBLE_H_
#define MEMAUDIT_ENGINE_ENSEMBLE_H_

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "common/training/model_spec.h"
#include "engine/dataset.h"
#include "engine/schedule.h"
#include "engine/torch_api.h"
#include "engine/trainer.h"
#include "engine/trainer_options.h"

namespace memaudit::engine {

struct EnsembleMember {
  uint64_t init_seed = 0;
  uint64_t order_seed = 0;
  std::vector<int64_t> pool;  // rows of the shared dataset this member trains on
  // Plays TrainerOptions::dropout_seed for this member alone (the ensemble's
  // options.dropout_seed is not used): its masks are those a plain Trainer
  // with dropout_seed = this value draws.
  uint64_t dropout_seed = 0;
};

// The K stacked members. Forward maps x [K, B, inputs] to logits
// [K, B, classes], member k seeing only x[k].
class StackedModel : public torch::nn::Module {
 public:
  virtual torch::Tensor Forward(const torch::Tensor& x) = 0;
  // Member k's parameters (views) in the order of the plain model's
  // parameters(), e.g. fc0.weight, fc0.bias, ... for MlpModel.
  virtual std::vector<torch::Tensor> MemberParameters(int64_t k) const = 0;
  int64_t members() const { return members_; }

  // The loss of a step from the model's logits [K, B, classes].
  using LossOf = std::function<torch::Tensor(const torch::Tensor& logits)>;
  // Sets every parameter's gradient of loss_of(Forward(x)) without building
  // autograd's graph through the model, where the model can (StackedMlp on
  // Sgemm without dropout): the same kernels as backward() runs, so the same
  // bits. False, touching nothing, elsewhere.
  virtual bool SetGradients(const torch::Tensor& /*x*/, const LossOf& /*loss_of*/) { return false; }

  // In training, member k's dropout masks come from gens[k] (CPU generators),
  // drawn with the shape of its real batch: rows[k] <= B; padded rows get
  // zero masks. Null disables dropout.
  void SetDropout(std::vector<at::Generator>* gens, std::vector<int64_t> rows) {
    dropout_gens_ = gens;
    dropout_rows_ = std::move(rows);
  }

 protected:
  explicit StackedModel(int64_t members) : members_(members) {}
  // x [K, B, F]: the plain Model::Dropout, member by member.
  torch::Tensor Dropout(const torch::Tensor& x, double p);

  int64_t members_;

 private:
  std::vector<at::Generator>* dropout_gens_ = nullptr;
  std::vector<int64_t> dropout_rows_;
};

// The stacked MLP (no hidden layers = logistic regression).
class StackedMlp : public StackedModel {
 public:
  // Member k's initial weights are exactly those of BuildModel(spec, seeds[k]).
  StackedMlp(const ModelSpec& spec, const std::vector<uint64_t>& seeds);
  // Member k's weights are copies of members[k], a plain model's parameters.
  StackedMlp(const ModelSpec& spec, const std::vector<std::vector<torch::Tensor>>& members);
  torch::Tensor Forward(const torch::Tensor& x) override;
  std::vector<torch::Tensor> MemberParameters(int64_t k) const override;
  bool SetGradients(const torch::Tensor& x, const LossOf& loss_of) override;

 private:
  std::vector<torch::Tensor> weights_;  // [K, out, in]
  std::vector<torch::Tensor> biases_;   // [K, 1, out]
  double dropout_ = 0;
};

// The stacked CnnModel. The members' batches sit side by side along channels,
// [B, K*C, H, W], so each conv is one grouped convolution whose group k holds
// member k's filters; the flattened features go to [K, B, D] for the head.
class StackedCnn : public StackedModel {
 public:
  // Member k's initial weights are exactly those of BuildModel(spec, seeds[k]).
  StackedCnn(const ModelSpec& spec, const std::vector<uint64_t>& seeds);
  torch::Tensor Forward(const torch::Tensor& x) override;
  std::vector<torch::Tensor> MemberParameters(int64_t k) const override;

 private:
  int64_t channels_, height_, width_, c1_, c2_;
  double dropout_ = 0;
  torch::Tensor conv1_w_, conv1_b_;  // [K*c1, C, 5, 5], [K*c1]
  torch::Tensor conv2_w_, conv2_b_;  // [K*c2, c1, 5, 5], [K*c2]
  torch::Tensor fc1_w_, fc1_b_;      // [K, fc, D], [K, 1, fc]
  torch::Tensor fc2_w_, fc2_b_;      // [K, classes, fc], [K, 1, classes]
};

class EnsembleTrainer {
 public:
  // spec.kind must be kLogReg, kMlp or kCnn (dropout allowed); DP-SGD is not
  // batched.
  static absl::StatusOr<std::unique_ptr<EnsembleTrainer>> Create(
      const ModelSpec& spec, const TrainerOptions& options, std::vector<EnsembleMember> members,
      uint32_t batch_size);

  // Members that go on from plain trainers exactly where they stand: member
  // k starts from trainers[k]'s weights, optimizer state and data position
  // and draws its batches from schedules[k], as trainers[k] would. Needs
  // kLogReg or kMlp without dropout, the trainers' own options without DP,
  // one LR-schedule position for all (step()) and, for Adam and RMSProp, one
  // optimizer step count. Nothing of the trainers is changed.
  static absl::StatusOr<std::unique_ptr<EnsembleTrainer>> Continue(
      const ModelSpec& spec, const TrainerOptions& options,
      const std::vector<const Trainer*>& trainers,
      std::vector<std::shared_ptr<const BatchSchedule>> schedules);

  // Steps every member from step() to `until_step`, member k drawing its
  // batch from its schedule at step() + its data offset (Create: the
  // EpochSchedule(pool_k, batch_size, order_seed_k), offset 0). Members whose
  // batch is shorter this step are padded with masked rows. `after_step`
  // returning false stops training (CANCELLED).
  absl::Status Train(const TensorDataset& data, uint64_t until_step,
                     const std::function<bool()>& after_step = nullptr);

  // Logits of every member on the same inputs x [N, inputs]: [K, N, classes].
  torch::Tensor Logits(const torch::Tensor& x);

  StackedModel& model() { return *model_; }
  uint64_t step() const { return step_; }  // the LR-schedule position

 private:
  EnsembleTrainer() = default;
  // Moves the built model to `device` and gives it a fresh optimizer.
  absl::Status Place(torch::Device device, const TrainerOptions& options);
  std::shared_ptr<StackedModel> model_;
  std::vector<std::shared_ptr<const BatchSchedule>> schedules_;
  std::vector<uint64_t> offsets_;            // member k's data position minus step_
  std::vector<at::Generator> dropout_gens_;  // member k's, seeded as Trainer seeds its own
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  TrainerOptions options_;
  torch::Device device_ = torch::kCPU;
  uint64_t step_ = 0;
};

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_ENSEMBLE_H_
