#include "engine/model.h"

#include <mutex>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "engine/char_lm.h"
#include "engine/classifier_models.h"
#include "engine/torchscript_lm.h"
#include "engine/torchscript_model.h"
#include "engine/transformer_lm.h"

namespace memaudit::engine {

torch::Tensor Model::PerExampleLoss(const torch::Tensor& x, const torch::Tensor& y) {
  return torch::nn::functional::cross_entropy(
      Forward(x), y, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
}

torch::Tensor Model::BatchLoss(const torch::Tensor& x, const torch::Tensor& y) {
  return torch::nn::functional::cross_entropy(Forward(x), y);
}

torch::Tensor Model::Dropout(const torch::Tensor& x, double p) {
  if (p <= 0 || !is_training() || dropout_gen_ == nullptr) return x;
  torch::Tensor keep = torch::empty(x.sizes(), torch::kFloat32);
  keep.bernoulli_(1.0 - p, *dropout_gen_);
  return x * keep.to(x.device(), x.scalar_type()) / (1.0 - p);
}

absl::Status ValidateModelSpec(const ModelSpec& spec) {
  switch (spec.kind) {
    case ModelKind::kLogReg:
    case ModelKind::kMlp:
    case ModelKind::kCnn:
      if (spec.inputs <= 0) return absl::InvalidArgumentError("model.inputs: must be > 0");
      if (spec.classes < 2) return absl::InvalidArgumentError("model.classes: must be >= 2");
      break;
    case ModelKind::kLstmLm:
    case ModelKind::kGruLm:
      if (spec.vocab < 2) return absl::InvalidArgumentError("model.vocab: must be >= 2");
      if (spec.layers < 1) return absl::InvalidArgumentError("model.layers: must be >= 1");
      if (spec.units < 1) return absl::InvalidArgumentError("model.units: must be >= 1");
      if (spec.embedding < 1) return absl::InvalidArgumentError("model.embedding: must be >= 1");
      break;
    case ModelKind::kTransformerLm:
      if (spec.vocab < 2) return absl::InvalidArgumentError("model.vocab: must be >= 2");
      if (spec.layers < 1) return absl::InvalidArgumentError("model.layers: must be >= 1");
      if (spec.units < 1) return absl::InvalidArgumentError("model.units: must be >= 1");
      if (spec.context < 1) return absl::InvalidArgumentError("model.context: must be >= 1");
      if (spec.heads < 1 || spec.embedding < 1 || spec.embedding % spec.heads != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "model.heads: ", spec.heads, " must divide the width (embedding) ", spec.embedding));
      }
      break;
    case ModelKind::kTorchScript:
      if (spec.torchscript_path.empty()) {
        return absl::InvalidArgumentError("model.torchscript_path: empty");
      }
      break;
  }
  if (spec.dropout < 0 || spec.dropout >= 1) {
    return absl::InvalidArgumentError("model.dropout: must be in [0, 1)");
  }
  if (spec.kind == ModelKind::kCnn) {
    const int64_t pixels = spec.inputs / spec.image_channels;
    const int64_t h = spec.image_height > 0 ? spec.image_height
                                            : static_cast<int64_t>(std::lround(std::sqrt(pixels)));
    if (h <= 0 || pixels % h != 0 || pixels * spec.image_channels != spec.inputs) {
      return absl::InvalidArgumentError(
          absl::StrCat("model.image_height: ", h, " does not divide inputs ", spec.inputs));
    }
    if (!spec.hidden.empty() && spec.hidden.size() != 3) {
      return absl::InvalidArgumentError("model.hidden: kCnn takes {conv1, conv2, fc} or nothing");
    }
  }
  return absl::OkStatus();
}

std::mutex& GlobalGeneratorMutex() {
  static std::mutex* const mutex = new std::mutex;
  return *mutex;
}

absl::StatusOr<std::shared_ptr<Model>> BuildModel(const ModelSpec& spec, uint64_t init_seed) {
  MEMAUDIT_RETURN_IF_ERROR(ValidateModelSpec(spec));
  // LibTorch's modules draw their initial weights from its one global
  // generator: seeding it and building must not interleave with another
  // thread's (a worker runs several tasks at once), or neither model is the
  // one its seed names.
  std::lock_guard<std::mutex> lock(GlobalGeneratorMutex());
  torch::manual_seed(init_seed);
  switch (spec.kind) {
    case ModelKind::kLogReg:
      return std::shared_ptr<Model>(
          std::make_shared<MlpModel>(spec.inputs, std::vector<uint32_t>{}, spec.classes, 0.0));
    case ModelKind::kMlp:
      return std::shared_ptr<Model>(
          std::make_shared<MlpModel>(spec.inputs, spec.hidden, spec.classes, spec.dropout));
    case ModelKind::kCnn: {
      const int64_t pixels = spec.inputs / spec.image_channels;
      const int64_t h = spec.image_height > 0
                            ? spec.image_height
                            : static_cast<int64_t>(std::lround(std::sqrt(pixels)));
      const std::vector<uint32_t> dims =
          spec.hidden.empty() ? std::vector<uint32_t>{8, 16, 64} : spec.hidden;
      return std::shared_ptr<Model>(std::make_shared<CnnModel>(spec.image_channels, h, pixels / h,
                                                               dims[0], dims[1], dims[2],
                                                               spec.classes, spec.dropout));
    }
    case ModelKind::kLstmLm:
    case ModelKind::kGruLm:
      return std::shared_ptr<Model>(
          std::make_shared<CharLm>(spec.kind == ModelKind::kLstmLm, spec.vocab, spec.embedding,
                                   spec.layers, spec.units, spec.dropout));
    case ModelKind::kTransformerLm:
      return std::shared_ptr<Model>(
          std::make_shared<TransformerLm>(spec.vocab, spec.embedding, spec.layers, spec.heads,
                                          spec.units, spec.context, spec.dropout));
    case ModelKind::kTorchScript:
      if (spec.language_model) {
        MEMAUDIT_ASSIGN_OR_RETURN(std::shared_ptr<TorchScriptLm> lm,
                                  LoadTorchScriptLm(spec.torchscript_path, /*redraw_weights=*/true,
                                                    spec.token_ids ? spec.vocab : 0));
        if (spec.vocab > 0 && lm->vocab() != spec.vocab) {
          return absl::InvalidArgumentError(absl::StrCat("model.torchscript_path: the module has ",
                                                         lm->vocab(), " symbols, not ",
                                                         spec.vocab));
        }
        return std::shared_ptr<Model>(std::move(lm));
      }
      return LoadTorchScriptClassifierForTraining(spec.torchscript_path);
  }
  return absl::InvalidArgumentError("model.kind: unknown");
}

}  // namespace memaudit::engine
