// Trains classifiers on subsets of a dataset and measures per-example
// signals on an evaluation subset. Logistic regression and MLPs, one model or
// several at once, run the batched ensemble (engine/ensemble.h), one model
// being an ensemble of one, so packing models changes speed and never the
// numbers. A CNN or a TorchScript model trains one model after another with
// the generic Trainer. The interface
// is free of LibTorch types so the worker can call it without compiling
// torch headers.
#ifndef MEMAUDIT_ENGINE_CLASSIFIER_RUN_H_
#define MEMAUDIT_ENGINE_CLASSIFIER_RUN_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "common/base/steps.h"
#include "common/training/model_spec.h"
#include "data/labeled_examples.h"

namespace memaudit::engine {

struct ClassifierRunSpec {
  std::vector<uint32_t> hidden;  // MLP hidden widths; empty = logistic regression
  // Set (kCnn, kTorchScript): this model instead of the logistic regression
  // or MLP of `hidden`; inputs and classes come from the data. Such models
  // train one after another with the generic Trainer. A TorchScript module's
  // reset_parameters(), when it has one, draws each model's initial weights
  // from its init_seed (engine/torchscript_model.h).
  std::optional<ModelSpec> model;
  double learning_rate = 0.05;
  double momentum = 0.9;
  double weight_decay = 0.0;
  uint32_t epochs = 1;
  uint32_t batch_size = 64;
  // LibTorch intra-op threads. Results are bit-identical for a fixed value.
  uint32_t threads = 1;
  uint64_t init_seed = 0;
  uint64_t order_seed = 0;
  std::vector<uint32_t> train_indices;  // rows of the dataset
  std::vector<uint32_t> eval_indices;
};

struct ClassifierRunResult {
  // Per evaluation example, in eval_indices order, computed in float64:
  // phi = z_y - logsumexp_{j != y} z_j and loss = logsumexp_j z_j - z_y.
  std::vector<double> phi;
  std::vector<double> loss;
  double train_accuracy = 0;
  uint64_t steps = 0;
};

// Called after every optimizer step with the steps done so far; returning
// false stops training and the run returns CANCELLED.
using StepCallback = std::function<bool(uint64_t steps_done)>;

// RunClassifiers({spec})[0].
absl::StatusOr<ClassifierRunResult> RunClassifier(const data::LabeledExamples& data,
                                                  const ClassifierRunSpec& spec,
                                                  const StepCallback& on_step);

// Trains `runs` (kLayered: as one batched ensemble; otherwise one after
// another) and returns their results in order.
// The runs must differ only in init_seed, order_seed and train_indices, and
// their training sets must have one size: then no member's batch is padded,
// which keeps members exact (docs/engine.md, "Determinism guarantees"). Each
// result is bit-identical to RunClassifier(runs[k]) alone. `on_step` gets
// ensemble steps: one step advances every member.
absl::StatusOr<std::vector<ClassifierRunResult>> RunClassifiers(
    const data::LabeledExamples& data, const std::vector<ClassifierRunSpec>& runs,
    const StepCallback& on_step);

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_CLASSIFIER_RUN_H_
