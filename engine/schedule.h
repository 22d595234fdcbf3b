// Data schedules: which dataset rows form the batch of optimizer step t. Each
// schedule is a pure function of the step, so a checkpoint only records the
// step count and a forked arm can switch schedules at the fork point.
#ifndef MEMAUDIT_ENGINE_SCHEDULE_H_
#define MEMAUDIT_ENGINE_SCHEDULE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"

namespace memaudit::engine {

struct BatchPlan {
  std::vector<int64_t> ids;  // dataset rows, repeats allowed
  // False for injection steps when the LR schedule must not advance.
  bool advance_lr = true;
};

class BatchSchedule {
 public:
  virtual ~BatchSchedule() = default;
  virtual BatchPlan At(uint64_t step) const = 0;
};

// Epochs over `pool`: epoch e is SeededPermutation(DeriveSeed(seed, "epoch", e))
// cut into ceil(|pool| / batch) batches (the last may be short), the order
// RunClassifier uses.
class EpochSchedule : public BatchSchedule {
 public:
  EpochSchedule(std::vector<int64_t> pool, uint32_t batch_size, uint64_t seed);
  BatchPlan At(uint64_t step) const override;
  uint64_t steps_per_epoch() const { return steps_per_epoch_; }

 private:
  std::vector<int64_t> pool_;
  uint32_t batch_size_;
  uint64_t seed_;
  uint64_t steps_per_epoch_;
  // The last epoch's permutation (At() stays a pure function of the step;
  // not thread-safe: one schedule per trainer).
  mutable uint64_t cached_epoch_ = 0;
  mutable std::vector<uint32_t> cached_order_;
};

// Forgetting, Algorithm 1 (Poison): epochs over D u Dp for steps < t_i, then
// epochs over D only. Phase two is indexed by steps since t_i with its own
// seed, so an arm with empty Dp (the baseline) sees the same D order after t_i.
absl::StatusOr<std::unique_ptr<BatchSchedule>> PoisonSchedule(std::vector<int64_t> clean,
                                                              std::vector<int64_t> poison,
                                                              uint32_t batch_size, uint64_t t_i,
                                                              uint64_t seed);

enum class InjectMode {
  kKSteps,      // r extra steps, each a batch of Dp (chunked by batch size)
  kDupInBatch,  // batches of exactly batch_size: floor(B/r) Dp rows x r copies, rest from D
};

struct InjectOptions {
  uint64_t t_i = 0;      // injection happens after t_i clean steps
  uint32_t repeats = 1;  // r
  InjectMode mode = InjectMode::kKSteps;
  bool advance_lr = false;  // whether injection steps advance the LR schedule
};

// Forgetting, Algorithm 2 (Inject): clean epochs over D for t_i steps, then the
// injection steps, then clean epochs over D indexed by clean steps since t_i
// (a seed shared with the baseline, which is this schedule with empty Dp).
absl::StatusOr<std::unique_ptr<BatchSchedule>> InjectSchedule(std::vector<int64_t> clean,
                                                              std::vector<int64_t> poison,
                                                              uint32_t batch_size,
                                                              const InjectOptions& options,
                                                              uint64_t seed);

// Number of injection steps InjectSchedule inserts (0 when Dp is empty).
uint64_t InjectionSteps(size_t poison_size, uint32_t batch_size, const InjectOptions& options);

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_SCHEDULE_H_
