// Torch-free facade for the forgetting audit ("Measuring Forgetting of
// Memorized Training Examples"): one trial trains a shared prefix to T_I (or,
// for Poison, both arms from the same initialization), forks an injected and a
// baseline arm, and at every evaluation point (clean steps since injection)
// returns phi and loss of the injected examples Dp under both arms. With
// `replay`, a third trainer re-runs the baseline arm from the same fork and
// seeds (the paper's §5.2 adversary, who knows seed and data order). With
// `reference_models`, k more baseline-arm trainers fork where the baseline
// forks but draw their own data order: the OUT models of offline LiRA. With
// `in_reference_models`, more injected-arm trainers fork where the injected
// arm forks, see Dp as it does (Inject: the injection steps; Poison: Dp in
// their pre-T_I epochs) and draw their own order: online LiRA's IN models.
// ForgettingCandidateLosses / PickByLoss choose Dp by hardness.
#ifndef MEMAUDIT_ENGINE_FORGETTING_RUN_H_
#define MEMAUDIT_ENGINE_FORGETTING_RUN_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "common/training/model_spec.h"
#include "data/labeled_examples.h"
#include "engine/optimizer_spec.h"

namespace memaudit::engine {

enum class ForgettingStrategy { kInject, kPoison };

struct ForgettingRunSpec {
  std::vector<uint32_t> clean_rows;     // D: rows of the LabeledExamples
  std::vector<uint32_t> injected_rows;  // Dp
  // Labels Dp is injected (and scored) with, one per injected row; empty =
  // the dataset's labels.
  std::vector<uint8_t> injected_labels;
  std::vector<uint32_t> hidden;  // empty = logistic regression
  // Set (kCnn, kTorchScript): this model instead of the logistic regression
  // or MLP of `hidden`; inputs and classes come from the dataset. Its arms
  // train one at a time.
  std::optional<ModelSpec> model;
  OptimizerSpec optimizer;
  uint32_t batch_size = 64;
  uint64_t steps_before = 100;  // T_I
  ForgettingStrategy strategy = ForgettingStrategy::kInject;
  uint32_t repeats = 1;               // Inject: r
  bool dup_in_batch = false;          // Inject: one batch holding r copies (else r steps)
  bool paired = true;                 // both arms see the same D order after T_I
  std::vector<uint64_t> eval_points;  // clean steps since injection, ascending
  // Also replay the baseline arm (Inject: from the checkpoint; Poison: from
  // theta_0) and measure phi of Dp under the replay at every point.
  bool replay = false;
  // Extra baseline arms, each with an order seed of its own after the fork
  // (Inject: the checkpoint; Poison: theta_0, so their whole run is theirs).
  uint32_t reference_models = 0;
  // Extra injected arms, each with an order seed of its own ("in_reference",
  // j): Inject forks them at the checkpoint, where they take the injection
  // steps (dup_in_batch fills from their own seed) before their own D order;
  // Poison trains them from theta_0 on D u Dp in their own order to T_I.
  uint32_t in_reference_models = 0;
  uint64_t init_seed = 0;
  uint64_t order_seed = 0;
  uint32_t threads = 1;
  // After the fork, train all arms as one ensemble where that is faster
  // (logistic regression, hidden layers of at most 64 units). Results are
  // bit-identical either way; arms the ensemble cannot continue (Adam or
  // RMSProp after injection steps) train one at a time. False always trains
  // them one at a time.
  bool pack_arms = true;
};

struct ForgettingPoint {
  uint64_t steps_since_injection = 0;
  // Per Dp example (with its injection label), float64.
  std::vector<double> phi_injected, phi_baseline, loss_injected, loss_baseline;
  std::vector<double> phi_replay;  // with spec.replay only
  // phi of Dp under each reference model (reference_models entries).
  std::vector<std::vector<double>> phi_references;
  // phi of Dp under each IN reference model (in_reference_models entries).
  std::vector<std::vector<double>> phi_in_references;
};

struct ForgettingRunResult {
  // Dp under the checkpoint at T_I (Poison: the baseline arm at T_I).
  std::vector<double> phi_checkpoint, loss_checkpoint;
  std::vector<ForgettingPoint> points;
  uint64_t injection_steps = 0;
  uint64_t steps = 0;   // optimizer steps taken: arms, replay and references (OUT and IN)
  bool packed = false;  // the arms trained as one ensemble after the fork
};

// Optimizer steps a trial takes (the planner's steps_total per task).
uint64_t ForgettingTrialSteps(const ForgettingRunSpec& spec);

// Called after every optimizer step with the steps done; false = CANCELLED.
using ForgettingStepCallback = std::function<bool(uint64_t steps_done)>;

// Called with the result so far each time an evaluation point has been
// measured (the checkpoint signals are set from the first call on), so
// callers can publish a forgetting curve while training goes on.
using ForgettingPointCallback = std::function<void(const ForgettingRunResult& so_far)>;

absl::StatusOr<ForgettingRunResult> RunForgetting(
    const data::LabeledExamples& data, const ForgettingRunSpec& spec,
    const ForgettingStepCallback& on_step, const ForgettingPointCallback& on_point = nullptr);

// Hardness selection (the paper's ImageNet Dp: held-out points ranked by
// loss on a trained model). One reference model trains on D for `steps`
// from (init_seed, order_seed), then scores every candidate.
struct ForgettingReferenceSpec {
  std::vector<uint32_t> clean_rows;      // D
  std::vector<uint32_t> candidate_rows;  // scored with their true labels
  std::vector<uint32_t> hidden;          // empty = logistic regression
  std::optional<ModelSpec> model;        // as ForgettingRunSpec::model
  OptimizerSpec optimizer;
  uint32_t batch_size = 64;
  uint64_t steps = 100;
  uint64_t init_seed = 0;
  uint64_t order_seed = 0;
  uint32_t threads = 1;
};

// Cross-entropy (float64) of each candidate under the reference model, in
// candidate order; `on_step` counts its optimizer steps.
absl::StatusOr<std::vector<double>> ForgettingCandidateLosses(
    const data::LabeledExamples& data, const ForgettingReferenceSpec& spec,
    const ForgettingStepCallback& on_step);

enum class ForgettingSelection { kRandom, kEasy, kMedium, kHard };

// Indices into `losses` of the `count` examples `selection` takes, in
// ascending loss order (ties: lower index first): easy = the lowest losses,
// hard = the highest, medium = the window starting at (n - count) / 2;
// random = 0..count-1. count > losses.size() takes them all.
std::vector<size_t> PickByLoss(const std::vector<double>& losses, size_t count,
                               ForgettingSelection selection);

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_FORGETTING_RUN_H_
