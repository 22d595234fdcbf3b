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

bool CheckArchitecture(const std::string& field, const std::string& value,
                       const std::vector<engine::ModelKind>& allowed, const AddProblem& add) {
  std::string names;
  for (size_t i = 0; i < allowed.size(); ++i) {
    if (value == engine::ModelKindName(allowed[i])) return true;
    const char* separator = i == 0 ? "" : i + 1 == allowed.size() ? " or " : ", ";
    absl::StrAppend(&names, separator, "\"", engine::ModelKindName(allowed[i]), "\"");
  }
  add(field, absl::StrCat("must be ", names, " (got \"", value, "\")"));
  return false;
}

void CheckImageModel(const v1::ModelSpec& m, const std::vector<engine::ModelKind>& allowed,
                     bool dropout, const AddProblem& add) {
  const std::string& arch = m.architecture();
  if (!CheckArchitecture("model.architecture", arch, allowed, add)) return;
  const engine::ModelKind kind = *engine::ParseModelKind(arch, "model.architecture");
  const bool layered = kind == engine::ModelKind::kMlp || kind == engine::ModelKind::kCnn;
  if (!layered && m.hidden_size() > 0) {
    add("model.hidden", absl::StrCat("must be empty for \"", arch, "\""));
  }
  if (kind == engine::ModelKind::kMlp && (m.hidden_size() == 0 || m.hidden_size() > 8)) {
    add("model.hidden", absl::StrCat("\"mlp\" needs 1 to 8 widths (got ", m.hidden_size(), ")"));
  }
  if (kind == engine::ModelKind::kCnn && m.hidden_size() != 0 && m.hidden_size() != 3) {
    add("model.hidden", absl::StrCat("\"cnn\" takes [conv1, conv2, fc] or nothing (got ",
                                     m.hidden_size(), " values)"));
  }
  for (int i = 0; layered && i < m.hidden_size(); ++i) {
    if (m.hidden(i) == 0 || m.hidden(i) > 65536) {
      add(absl::StrCat("model.hidden[", i, "]"),
          absl::StrCat("must be in [1, 65536] (got ", m.hidden(i), ")"));
    }
  }
  if (!(dropout && layered)) {
    if (m.dropout() != 0) add("model.dropout", absl::StrCat("must be 0 for \"", arch, "\""));
  } else if (!(m.dropout() >= 0 && m.dropout() < 1)) {
    add("model.dropout", absl::StrCat("must be in [0, 1) (got ", m.dropout(), ")"));
  }
  if (kind == engine::ModelKind::kTorchScript && m.torchscript_path().empty()) {
    add("model.torchscript_path", "required for \"torchscript\"");
  } else if (kind != engine::ModelKind::kTorchScript && !m.torchscript_path().empty()) {
    add("model.torchscript_path", "applies to architecture \"torchscript\" only");
  }
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
