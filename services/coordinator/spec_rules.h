// Rule checks every audit kind's validator shares. Each reports through
// `add(field, rule)` with the field relative to the kind ("training.epochs"),
// so messages read the same whichever kind they come from.
#ifndef MEMAUDIT_SERVICES_COORDINATOR_SPEC_RULES_H_
#define MEMAUDIT_SERVICES_COORDINATOR_SPEC_RULES_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/model_spec.h"
#include "memaudit/v1/spec.pb.h"

namespace memaudit::coordinator {

using AddProblem = std::function<void(std::string field, std::string rule)>;

bool OneOf(const std::string& value, const std::vector<std::string>& allowed);

// `value` must be one of `allowed`: "must be one of a, b (got "x")".
void CheckOneOf(const std::string& field, const std::string& value,
                const std::vector<std::string>& allowed, const AddProblem& add);

// `field` (a model.architecture) must name one of `allowed` (engine's
// ModelKindName): "must be \"lstm\" or \"gru\" (got \"x\")". Returns whether it does.
bool CheckArchitecture(const std::string& field, const std::string& value,
                       const std::vector<engine::ModelKind>& allowed, const AddProblem& add);

// An image classifier's `model` (relative field names "model.*"): the
// architecture is one of `allowed`, then the widths, dropout and TorchScript
// path suit it. `dropout` says whether the kind trains with dropout; if not,
// model.dropout must be 0 rather than silently ignored.
void CheckImageModel(const v1::ModelSpec& m, const std::vector<engine::ModelKind>& allowed,
                     bool dropout, const AddProblem& add);

// training.learning_rate > 0 and finite.
void CheckLearningRate(double learning_rate, const AddProblem& add);
// training.momentum in [0, 1).
void CheckMomentum(double momentum, const AddProblem& add);
// training.weight_decay >= 0 and finite.
void CheckWeightDecay(double weight_decay, const AddProblem& add);
// training.epochs in [1, 10000].
void CheckEpochs(uint32_t epochs, const AddProblem& add);
// training.batch_size in [1, 65536].
void CheckBatchSize(uint32_t batch_size, const AddProblem& add);

}  // namespace memaudit::coordinator

#endif  // MEMAUDIT_SERVICES_COORDINATOR_SPEC_RULES_H_
