// Signals of a classifier trained outside memaudit: a TorchScript file
// evaluated on rows of a dataset, as a membership audit's given target. The
// interface is free of LibTorch types so the worker calls it without
// compiling torch headers.
#ifndef MEMAUDIT_ENGINE_CLASSIFIER_EVAL_H_
#define MEMAUDIT_ENGINE_CLASSIFIER_EVAL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "data/labeled_examples.h"

namespace memaudit::engine {

struct ClassifierSignals {
  // Per row, in `rows` order, in float64 (engine/signals.h):
  // phi = z_y - logsumexp_{j != y} z_j and loss = logsumexp_j z_j - z_y.
  std::vector<double> phi;
  std::vector<double> loss;
};

// Loads the TorchScript classifier at `path` (docs/models.md: flattened
// inputs in, logits over the dataset's classes out), puts it in eval mode
// and evaluates `rows` in batches with `threads` intra-op threads.
// INVALID_ARGUMENT naming `field` when the module does not load or its
// output is not [batch, classes] logits.
absl::StatusOr<ClassifierSignals> EvaluateTorchScriptClassifier(const data::LabeledExamples& data,
                                                                const std::string& path,
                                                                const std::vector<uint32_t>& rows,
                                                                uint32_t threads,
                                                                const std::string& field);

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_CLASSIFIER_EVAL_H_
