#include "services/coordinator/spec_rules.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace memaudit::coordinator {

bool OneOf(const std::string& value, const std::vector<std::string>& allowed) {
  return std::find(allowed.begin(), allowed.end(), value) != allowed.end();
}

void CheckOneOf(const std::string& field, const std::string& value,
                const std::vector<std::string>& allowed, const AddProblem& add) {
  if (OneOf(value, allowed)) return;
  add(field,
      absl::StrCat("must be one of ", absl::StrJoin(allowed, ", "), " (got \"", value, "\")"));
}

void CheckLearningRate(double learning_rate, const AddProblem& add) {
  if (!(learning_rate > 0) || !std::isfinite(learning_rate)) {
    add("training.learning_rate", absl::StrCat("must be > 0 (got ", learning_rate, ")"));
  }
}

void CheckMomentum(double momentum, const AddProblem& add) {
  if (!(momentum >= 0 && momentum < 1)) {
    add("training.momentum", absl::StrCat("must be in [0, 1) (got ", momentum, ")"));
  }
}

void CheckWeightDecay(double weight_decay, const AddProblem& add) {
  if (!(weight_decay >= 0) || !std::isfinite(weight_decay)) {
    add("training.weight_decay", absl::StrCat("must be >= 0 (got ", weight_decay, ")"));
  }
}

void CheckEpochs(uint32_t epochs, const AddProblem& add) {
  if (epochs == 0 || epochs > 10000) {
    add("training.epochs", absl::StrCat("must be in [1, 10000] (got ", epochs, ")"));
  }
}

void CheckBatchSize(uint32_t batch_size, const AddProblem& add) {
  if (batch_size == 0 || batch_size > 65536) {
    add("training.batch_size", absl::StrCat("must be in [1, 65536] (got ", batch_size, ")"));
  }
}

}  // namespace memaudit::coordinator
