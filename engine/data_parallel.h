// One model trained data-parallel across ranks in one process: rank r is a
// replica on its own device, each step's batch is cut into contiguous shards
// (rank r takes rows [r*B/N, (r+1)*B/N)), each rank computes its shard's
// gradient weighted by its share of the batch, the ranks all-reduce (sum)
// the gradients through LibTorch's c10d (ProcessGroupNCCL across CUDA
// devices, ProcessGroupGloo across CPU ranks), and every rank applies the
// same optimizer step, so the replicas stay identical.
//
// Numbers: the reduced gradient is the full batch's mean gradient summed in
// another order than one device sums it, so training differs from one
// device in rounding only (docs/engine.md, "Data-parallel training"); for a
// fixed device list it is repeatable bit for bit. One rank is the plain
// Trainer, bit for bit.
#ifndef MEMAUDIT_ENGINE_DATA_PARALLEL_H_
#define MEMAUDIT_ENGINE_DATA_PARALLEL_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/trainer.h"

namespace memaudit::engine {

struct DataParallelGroups;

inline constexpr std::chrono::milliseconds kDataParallelTimeout{120000};

class DataParallelTrainer {
 public:
  // `devices`: one per rank, all CPU ("cpu" repeated: Gloo over loopback)
  // or all distinct CUDA devices (NCCL). DP-SGD is refused (each rank would
  // add its own noise); dropout masks are drawn per rank from
  // DeriveSeed(options.dropout_seed, "rank", r) (rank 0: the seed itself).
  //
  // A rank that fails mid-step leaves the others waiting in the all-reduce;
  // they give up after `collective_timeout` instead of hanging the task, and
  // the step returns the failed rank's own error.
  static absl::StatusOr<std::unique_ptr<DataParallelTrainer>> Create(
      const ModelFactory& factory, const TrainerOptions& options,
      const std::vector<std::string>& devices,
      std::chrono::milliseconds collective_timeout = kDataParallelTimeout);
  ~DataParallelTrainer();

  // One optimizer step on `batch` (at least one row per rank); returns the
  // batch's mean loss (the ranks' shard losses weighted by their shares).
  absl::StatusOr<double> Step(const Batch& batch, bool advance_lr = true);
  // As Trainer::Train.
  absl::Status Train(const TensorDataset& data, const BatchSchedule& schedule, uint64_t until_step,
                     const TrainStepCallback& on_step = nullptr);

  int world_size() const { return static_cast<int>(ranks_.size()); }
  // Rank r's trainer; every rank holds the same weights after each step.
  Trainer& rank(int r) { return *ranks_[r]; }
  uint64_t step() const { return ranks_[0]->step(); }

 private:
  DataParallelTrainer() = default;
  std::vector<std::unique_ptr<Trainer>> ranks_;
  std::vector<double> shard_weight_;  // rank r's rows / batch rows, this step
  std::unique_ptr<DataParallelGroups> groups_;
};

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_DATA_PARALLEL_H_
