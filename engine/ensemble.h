// K models with one architecture and one set of hyper-parameters, each with
// its own init seed, data subset and data order, trained as one batched
// model: weights stacked [K, out, in] and every layer a baddbmm.
#ifndef MEMAUDIT_ENGINE_ENSEMBLE_H_
#define MEMAUDIT_ENGINE_ENSEMBLE_H_

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/dataset.h"
#include "engine/model_spec.h"
#include "engine/schedule.h"
#include "engine/trainer_options.h"

namespace memaudit::engine {

struct EnsembleMember {
  uint64_t init_seed = 0;
  uint64_t order_seed = 0;
  std::vector<int64_t> pool;  // rows of the shared dataset this member trains on
};

// The stacked MLP (no hidden layers = logistic regression).
class StackedMlp : public torch::nn::Module {
 public:
  // Member k's initial weights are exactly those of BuildModel(spec, seeds[k]).
  StackedMlp(const ModelSpec& spec, const std::vector<uint64_t>& seeds);
  // x [K, B, inputs] -> logits [K, B, classes].
  torch::Tensor Forward(const torch::Tensor& x);
  int64_t members() const { return members_; }
  // Member k's parameters in MlpModel order (fc0.weight, fc0.bias, ...).
  std::vector<torch::Tensor> MemberParameters(int64_t k) const;

 private:
  int64_t members_;
  std::vector<torch::Tensor> weights_;  // [K, out, in]
  std::vector<torch::Tensor> biases_;   // [K, 1, out]
};

class EnsembleTrainer {
 public:
  // spec.kind must be kLogReg or kMlp without dropout; DP-SGD is not batched.
  static absl::StatusOr<std::unique_ptr<EnsembleTrainer>> Create(
      const ModelSpec& spec, const TrainerOptions& options, std::vector<EnsembleMember> members,
      uint32_t batch_size);

  // Steps every member from step() to `until_step`, member k drawing its
  // batches from EpochSchedule(pool_k, batch_size, order_seed_k). Members
  // whose batch is shorter this step are padded with masked rows.
  absl::Status Train(const TensorDataset& data, uint64_t until_step);

  // Logits of every member on the same inputs x [N, inputs]: [K, N, classes].
  torch::Tensor Logits(const torch::Tensor& x);

  StackedMlp& model() { return *model_; }
  uint64_t step() const { return step_; }

 private:
  EnsembleTrainer() = default;
  std::shared_ptr<StackedMlp> model_;
  std::vector<EpochSchedule> schedules_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  TrainerOptions options_;
  torch::Device device_ = torch::kCPU;
  uint32_t batch_size_ = 0;
  uint64_t step_ = 0;
};

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_ENSEMBLE_H_
