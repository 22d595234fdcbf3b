// Torch-free options of the generic trainer.
#ifndef MEMAUDIT_ENGINE_TRAINER_OPTIONS_H_
#define MEMAUDIT_ENGINE_TRAINER_OPTIONS_H_

#include <cstdint>
#include <string>

#include "common/base/seeding.h"
#include "engine/optimizer_spec.h"

namespace memaudit::engine {

struct DpSgdOptions {
  bool enabled = false;
  double clip_norm = 1.0;         // C
  double noise_multiplier = 1.0;  // sigma; the noise std is sigma * C
  uint64_t noise_seed = 0;
  // Keep each step's clipped sum (DpGradientStats::clipped_sum): a one-run
  // audit's white-box auditor, who knows every example but the canaries,
  // subtracts it from the privatised gradient.
  bool keep_clipped_sum = false;
};

struct TrainerOptions {
  OptimizerSpec optimizer;
  LrScheduleSpec schedule;
  // Dropout masks: independent of the init seed and of the data order seed
  // (which belongs to the BatchSchedule).
  uint64_t dropout_seed = 0;
  // LibTorch intra-op threads (process-wide). Results are bit-identical for a
  // fixed value on CPU; 0 leaves the current setting.
  uint32_t threads = 1;
  // "cpu", "cuda", "cuda:1"; CUDA is an error where unavailable. Empty: the
  // process default (engine/device.h; CPU unless the worker's --device).
  std::string device;
  DpSgdOptions dp;
};

// What the audit facades train with: `optimizer`, `threads` LibTorch threads
// (0 = 1) and dropout masks seeded from `seed`.
inline TrainerOptions SeededTrainerOptions(const OptimizerSpec& optimizer, uint32_t threads,
                                           uint64_t seed) {
  TrainerOptions options;
  options.optimizer = optimizer;
  options.threads = threads == 0 ? 1 : threads;
  options.dropout_seed = DeriveSeed(seed, "dropout", 0);
  return options;
}

// What a facade that may train with DP-SGD trains with: `optimizer`,
// `threads` LibTorch threads (0 = 1), dropout masks from `dropout_seed`,
// and `dp` (its `enabled` as the spec says).
inline TrainerOptions OptionsWithDpSgd(const OptimizerSpec& optimizer, uint32_t threads,
                                       uint64_t dropout_seed, const DpSgdOptions& dp) {
  TrainerOptions options;
  options.optimizer = optimizer;
  options.threads = threads == 0 ? 1 : threads;
  options.dropout_seed = dropout_seed;
  options.dp = dp;
  return options;
}

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_TRAINER_OPTIONS_H_
