// Torch-free facade for the unlearning audit ("When Machine Unlearning
// Jeopardizes Privacy"): trains one original model (Scratch: one model; SISA:
// every shard with slice checkpoints), then each unlearned child from it
// (Scratch: retrain on D_o \ G [u A]; SISA: only the affected shards, from
// their slice checkpoints), and returns the released posteriors of both
// versions on each child's query rows under every release policy.
#ifndef MEMAUDIT_ENGINE_UNLEARNING_RUN_H_
#define MEMAUDIT_ENGINE_UNLEARNING_RUN_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "common/training/model_spec.h"
#include "data/labeled_examples.h"
#include "engine/optimizer_spec.h"
#include "engine/release_policy.h"

namespace memaudit::engine {

enum class UnlearningMethod { kScratch, kSisa };

// Seeds of one trained model (SISA: of the whole ensemble).
struct UnlearningSeeds {
  uint64_t init = 0;     // weights (SISA: shard s from DeriveSeed(sisa, "sisa.init", s))
  uint64_t order = 0;    // epoch order
  uint64_t noise = 0;    // DP-SGD noise
  uint64_t dropout = 0;  // dropout masks
  uint64_t sisa = 0;     // SISA layout, shard inits and orders
};

struct UnlearningChildSpec {
  std::vector<uint32_t> removed;     // dataset rows deleted from the original's training set
  std::vector<uint32_t> added;       // dataset rows added (online learning)
  std::vector<uint32_t> queries;     // dataset rows both versions are queried on
  std::vector<uint32_t> validation;  // temperature fit of this child
  // Scratch only. shared_order: the original's epoch order with `removed`
  // dropped and `added` inserted at seeded places (the same data order, less
  // the deletion); otherwise an order of its own from seeds.order.
  UnlearningSeeds seeds;
  bool shared_order = true;
};

struct UnlearningRunSpec {
  // inputs and classes are taken from the data.
  ModelSpec model;
  OptimizerSpec optimizer;
  uint32_t epochs = 1;  // SISA: per slice
  uint32_t batch_size = 32;
  UnlearningMethod method = UnlearningMethod::kScratch;
  uint32_t shards = 1;
  uint32_t slices = 1;
  // DP-SGD for every model when set; epsilon reported at dp_delta.
  bool dp = false;
  double noise_multiplier = 1.0;
  double clip_norm = 1.0;
  double dp_delta = 1e-5;
  // > 0: the noise multiplier is calibrated so the original spends this
  // epsilon at dp_delta (noise_multiplier is then ignored).
  double target_epsilon = 0;
  std::vector<uint32_t> train_rows;       // D_o, dataset rows
  std::vector<uint32_t> validation_rows;  // temperature fit of the original
  UnlearningSeeds seeds;
  std::vector<ReleasePolicy> releases;
  std::vector<UnlearningChildSpec> children;
  uint32_t threads = 1;
};

struct UnlearningChildResult {
  // Per release policy, [queries x classes] row-major, float64.
  std::vector<std::vector<double>> original, unlearned;
};

struct UnlearningRunResult {
  uint32_t classes = 0;
  double train_accuracy = 0;    // the original on D_o
  double test_accuracy = 0;     // the original on the test data (0 without it)
  double dp_epsilon = 0;        // the original; SISA: its most exposed shard
  double noise_multiplier = 0;  // the one DP-SGD used (calibrated or given)
  std::vector<UnlearningChildResult> children;
  uint64_t steps = 0;           // optimizer steps, original and children
  uint64_t models_trained = 0;  // SISA: shard models, retrains included
};

// Called with the optimizer steps done so far (Scratch: after every step;
// SISA: after the original and after each child); false = CANCELLED.
using UnlearningStepCallback = std::function<bool(uint64_t steps_done)>;

// `test` may be null (test_accuracy stays 0).
absl::StatusOr<UnlearningRunResult> RunUnlearning(const data::LabeledExamples& data,
                                                  const data::LabeledExamples* test,
                                                  const UnlearningRunSpec& spec,
                                                  const UnlearningStepCallback& on_step);

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_UNLEARNING_RUN_H_
