// Rule checks every audit kind's validator shares. Each reports through
// `add(field, rule)` with the field relative to the kind ("training.epochs"),
// so messages read the same whichever kind they come from.
#ifndef MEMAUDIT_SERVICES_COORDINATOR_SPEC_RULES_H_
#define MEMAUDIT_SERVICES_COORDINATOR_SPEC_RULES_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace memaudit::coordinator {

using AddProblem = std::function<void(std::string field, std::string rule)>;

bool OneOf(const std::string& value, const std::vector<std::string>& allowed);

// `value` must be one of `allowed`: "must be one of a, b (got "x")".
void CheckOneOf(const std::string& field, const std::string& value,
                const std::vector<std::string>& allowed, const AddProblem& add);

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
