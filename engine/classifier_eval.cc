#include "engine/classifier_eval.h"

#include <torch/script.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/base/status_macros.h"
#include "engine/dataset.h"
#include "engine/signals.h"
#include "engine/torch_api.h"
#include "engine/torchscript_model.h"

namespace memaudit::engine {
namespace {

// Rows per forward pass: bounds the memory a large pool takes at once.
constexpr size_t kEvalBatch = 4096;

}  // namespace

absl::StatusOr<ClassifierSignals> EvaluateTorchScriptClassifier(const data::LabeledExamples& data,
                                                                const std::string& path,
                                                                const std::vector<uint32_t>& rows,
                                                                uint32_t threads,
                                                                const std::string& field) {
  for (uint32_t r : rows) {
    if (r >= data.count) {
      return absl::InvalidArgumentError(
          absl::StrCat("row ", r, " is outside the dataset of ", data.count));
    }
  }
  torch::set_num_threads(static_cast<int>(std::max<uint32_t>(1, threads)));
  absl::StatusOr<std::shared_ptr<Model>> loaded = LoadTorchScriptModel(path);
  if (!loaded.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", loaded.status().message()));
  }
  Model& model = **loaded;
  model.eval();
  torch::NoGradGuard no_grad;
  ClassifierSignals out;
  out.phi.reserve(rows.size());
  out.loss.reserve(rows.size());
  for (size_t begin = 0; begin < rows.size(); begin += kEvalBatch) {
    const std::vector<uint32_t> chunk(rows.begin() + begin,
                                      rows.begin() + std::min(rows.size(), begin + kEvalBatch));
    const TensorDataset batch = FromLabeledExamples(data, chunk);
    torch::Tensor logits;
    try {
      logits = model.Forward(batch.x());
    } catch (const c10::Error& e) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": forward failed on a batch of [",
                                                     batch.x().size(0), ", ", data.features,
                                                     "] inputs: ", e.what_without_backtrace()));
    }
    if (logits.dim() != 2 || logits.size(0) != batch.x().size(0) ||
        logits.size(1) != static_cast<int64_t>(data.classes)) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": the model returns shape [", absl::StrJoin(logits.sizes(), ", "),
                       "] for ", batch.x().size(0), " inputs; expected [", batch.x().size(0), ", ",
                       data.classes, "] logits (the dataset's classes)"));
    }
    const torch::Tensor phi = LogitScaledConfidence(logits, batch.y()).contiguous();
    const torch::Tensor loss = CrossEntropyPerExample(logits, batch.y()).contiguous();
    out.phi.insert(out.phi.end(), phi.data_ptr<double>(), phi.data_ptr<double>() + phi.numel());
    out.loss.insert(out.loss.end(), loss.data_ptr<double>(),
                    loss.data_ptr<double>() + loss.numel());
  }
  return out;
}

}  // namespace memaudit::engine
