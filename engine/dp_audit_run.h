// One training run of a one-run DP audit (Privacy Auditing with One (1)
// Training Run): the recipe trained on its training set plus the included
// canaries, and one score per canary. Free of LibTorch types so the worker
// calls it without compiling torch headers.
#ifndef MEMAUDIT_ENGINE_DP_AUDIT_RUN_H_
#define MEMAUDIT_ENGINE_DP_AUDIT_RUN_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "common/training/model_spec.h"
#include "data/labeled_examples.h"
#include "engine/optimizer_spec.h"

namespace memaudit::engine {

struct DpAuditRunSpec {
  ModelSpec model;  // inputs and classes are taken from the data
  OptimizerSpec optimizer;
  uint32_t epochs = 1;
  uint32_t batch_size = 64;
  // DP-SGD: per-example clipping to clip_norm and N(0, (sigma C)^2) noise.
  // target_epsilon > 0 calibrates sigma so the run spends it at dp_delta.
  bool dp = false;
  double noise_multiplier = 1.0;
  double clip_norm = 1.0;
  double dp_delta = 1e-5;
  double target_epsilon = 0;
  std::vector<uint32_t> train_rows;  // dataset rows always trained on
  // Input canaries: dataset rows with the labels they train and are scored
  // with (a mislabelled copy). Empty for gradient canaries.
  std::vector<uint32_t> canary_rows;
  std::vector<int64_t> canary_labels;
  // Input canaries' score: minus the loss (false) or LiRA's logit-scaled
  // confidence of the canary's label (true).
  bool scaled_logit_score = false;
  // Gradient canaries (needs dp): this many Dirac gradients C e_j on
  // distinct parameter coordinates j drawn from canary_seed.
  bool gradient_canaries = false;
  // Per canary: whether it takes part in training.
  std::vector<uint8_t> included;
  uint64_t init_seed = 0;
  uint64_t order_seed = 0;
  uint64_t noise_seed = 0;
  uint64_t dropout_seed = 0;
  uint64_t canary_seed = 0;
  uint32_t threads = 1;
};

struct DpAuditRunResult {
  // Per canary, float64, higher = more likely included: input canaries minus
  // their loss (or their logit-scaled confidence) under the trained model; gradient canaries the
  // privatised gradient's coordinate j less the data's part, summed over the steps, in units of C
  // (the canary's contributions and the noise).
  std::vector<double> scores;
  double train_accuracy = 0;  // on train_rows
  // DP-SGD: the RDP accountant's epsilon at dp_delta for the run's sampling
  // rate q = batch / (training examples) and steps (+inf at sigma = 0); and
  // the noise multiplier used. 0 without DP-SGD.
  double dp_epsilon = 0;
  double noise_multiplier = 0;
  uint64_t steps = 0;
};

// Called after every optimizer step with the steps done; false = CANCELLED.
absl::StatusOr<DpAuditRunResult> RunDpAudit(const data::LabeledExamples& data,
                                            const DpAuditRunSpec& spec,
                                            const std::function<bool(uint64_t)>& on_step);

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_DP_AUDIT_RUN_H_
