// SISA unlearning (Bourtoule et al.; "When Machine Unlearning Jeopardizes
// Privacy" A.2.2): shards trained in isolation, each over growing unions of
// its slices with a checkpoint after every slice; deleting rows retrains only
// the shards holding them, from the checkpoint before the first touched slice.
#ifndef MEMAUDIT_ENGINE_SISA_H_
#define MEMAUDIT_ENGINE_SISA_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/training/model_spec.h"
#include "engine/dataset.h"
#include "engine/torch_api.h"
#include "engine/trainer.h"

namespace memaudit::engine {

// rows[shard][slice] = dataset rows.
struct SisaLayout {
  std::vector<std::vector<std::vector<int64_t>>> rows;
};

// Shuffles `pool` with `seed` and cuts it into contiguous shards, each into
// contiguous slices (the reference code's reshape, plus slicing).
SisaLayout BuildSisaLayout(const std::vector<int64_t>& pool, uint32_t shards, uint32_t slices,
                           uint64_t seed);

struct SisaOptions {
  uint32_t batch_size = 32;
  uint32_t epochs_per_slice = 1;
  uint64_t seed = 0;  // shard s has init seed DeriveSeed(seed, "sisa.init", s)
};

class SisaEnsemble {
 public:
  static absl::StatusOr<std::unique_ptr<SisaEnsemble>> Create(const ModelSpec& spec,
                                                              const TrainerOptions& options,
                                                              SisaLayout layout,
                                                              const SisaOptions& sisa);
  absl::Status TrainAll(const TensorDataset& data);
  // Removes `rows` and retrains the affected shards; returns their indices.
  absl::StatusOr<std::vector<uint32_t>> Delete(const TensorDataset& data,
                                               const std::vector<int64_t>& rows);
  // Online deletion's "add" half: appends `rows` to the last slice of the
  // smallest shard and retrains that shard from its last slice checkpoint.
  absl::StatusOr<uint32_t> Add(const TensorDataset& data, const std::vector<int64_t>& rows);
  // An independent copy (shards, slice checkpoints, layout): one trained
  // original serves every deletion request, each on its own fork.
  absl::StatusOr<std::unique_ptr<SisaEnsemble>> Fork() const;
  // Mean of the shards' softmax posteriors (float64) [N, classes].
  torch::Tensor Posteriors(const torch::Tensor& x);
  Model& shard_model(uint32_t s) { return shards_[s]->model(); }
  // Optimizer steps each shard has run in total, retraining included.
  const std::vector<uint64_t>& steps_trained() const { return steps_trained_; }
  const SisaLayout& layout() const { return layout_; }

 private:
  SisaEnsemble() = default;
  // Trains shard s over slices [from, end) starting at checkpoint `from`.
  absl::Status TrainShardFrom(const TensorDataset& data, uint32_t s, uint32_t from);

  SisaLayout layout_;
  SisaOptions sisa_;
  std::vector<std::unique_ptr<Trainer>> shards_;
  std::vector<std::vector<std::string>> checkpoints_;  // [shard][k] = state before slice k
  std::vector<uint64_t> steps_trained_;
};

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_SISA_H_
