// A classifier kind's `model` (membership, forgetting, unlearning) as the
// engine's ModelSpec: the one place that maps architecture, widths,
// TorchScript file and the dataset's image shape (a CNN reads [H, W] as one
// channel, [C, H, W] as given) onto the engine's model.
#ifndef MEMAUDIT_SERVICES_WORKER_CLASSIFIER_MODEL_H_
#define MEMAUDIT_SERVICES_WORKER_CLASSIFIER_MODEL_H_

#include <string>

#include "absl/status/statusor.h"
#include "common/training/model_spec.h"
#include "memaudit/v1/spec.pb.h"

namespace memaudit::worker {

// Inputs and classes are left for the engine to take from the data.
// INVALID_ARGUMENT naming `field` (e.g. "membership.model.architecture")
// for an architecture that is not a classifier.
absl::StatusOr<engine::ModelSpec> ClassifierModelOf(const v1::ModelSpec& model,
                                                    const v1::DatasetSpec& dataset,
                                                    const std::string& field);

}  // namespace memaudit::worker

#endif  // MEMAUDIT_SERVICES_WORKER_CLASSIFIER_MODEL_H_
