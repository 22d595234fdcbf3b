// Torch-free description of a trainable model, so that planners and services
// can name architectures without compiling LibTorch headers.
#ifndef MEMAUDIT_COMMON_TRAINING_MODEL_SPEC_H_
#define MEMAUDIT_COMMON_TRAINING_MODEL_SPEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace memaudit::engine {

enum class ModelKind {
  kLogReg,         // multinomial logistic regression
  kMlp,            // ReLU MLP with `hidden` widths
  kCnn,            // two conv(5x5)+pool blocks and a linear head, for small images
  kLstmLm,         // character LSTM language model
  kGruLm,          // character GRU language model
  kTransformerLm,  // decoder-only transformer language model (GPT-style)
  kTorchScript,    // a user module loaded with torch::jit::load
};

// The name a spec's `model.architecture` gives each kind: the one mapping
// between the two, used by every validator and every task.
inline const char* ModelKindName(ModelKind kind) {
  switch (kind) {  // No default: the compiler names a kind missing here.
    case ModelKind::kLogReg:
      return "logreg";
    case ModelKind::kMlp:
      return "mlp";
    case ModelKind::kCnn:
      return "cnn";
    case ModelKind::kLstmLm:
      return "lstm";
    case ModelKind::kGruLm:
      return "gru";
    case ModelKind::kTransformerLm:
      return "transformer";
    case ModelKind::kTorchScript:
      return "torchscript";
  }
  return "";
}

// The kind named `name`; INVALID_ARGUMENT naming `field` for any other name.
inline absl::StatusOr<ModelKind> ParseModelKind(absl::string_view name, absl::string_view field) {
  for (ModelKind kind : {ModelKind::kLogReg, ModelKind::kMlp, ModelKind::kCnn, ModelKind::kLstmLm,
                         ModelKind::kGruLm, ModelKind::kTransformerLm, ModelKind::kTorchScript}) {
    if (name == ModelKindName(kind)) return kind;
  }
  return absl::InvalidArgumentError(absl::StrCat(field, ": unknown architecture \"", name, "\""));
}

// The transformer's positions for an audit that trains on windows of
// `window` tokens: at least kMinTransformerContext, so that every canary or
// prompt an audit scores fits (prefixes and templates are at most 1,024
// bytes, plus a few dozen holes).
inline constexpr int64_t kMinTransformerContext = 2048;
inline int64_t TransformerContext(int64_t window) {
  return window > kMinTransformerContext ? window : kMinTransformerContext;
}

struct ModelSpec {
  ModelKind kind = ModelKind::kMlp;
  // Classifiers: input features and classes. CNN: inputs = channels*height*width.
  int64_t inputs = 0;
  int64_t classes = 0;
  std::vector<uint32_t> hidden;  // kMlp widths; kCnn: {conv1 channels, conv2 channels, fc}
  int64_t image_channels = 1;
  int64_t image_height = 0;  // kCnn; 0 = square image from inputs / channels
  // Language models: vocabulary size, embedding width, layers x units. The
  // transformer: `embedding` is its width, `units` each block's feed-forward
  // width, `heads` its attention heads (dividing the width) and `context`
  // its positions, the longest sequence it takes.
  int64_t vocab = 0;
  int64_t embedding = 32;
  int64_t layers = 1;
  int64_t units = 128;
  int64_t heads = 4;
  int64_t context = kMinTransformerContext;
  // Dropout probability after each hidden layer (0 = off). It draws from the
  // trainer's dropout generator, never from LibTorch's global one.
  double dropout = 0.0;
  // kTorchScript: a file written by torch.jit.save. Its forward must map a
  // batch of inputs to logits (classifiers) like the built-in models.
  std::string torchscript_path;
  // kTorchScript: the module is a character language model under the
  // contract of torchscript_lm.h (docs/language-models.md), of `vocab`
  // symbols when that is > 0. The LSTM/GRU kinds are LMs regardless.
  bool language_model = false;
  // kTorchScript LMs: the ids are a separate tokenizer's (`vocab` of them),
  // and the module's own vocabulary attribute is not read.
  bool token_ids = false;
};

absl::Status ValidateModelSpec(const ModelSpec& spec);

// A character language model of `kind` over `vocab` symbols: kLstmLm,
// kGruLm or kTransformerLm (`heads`, trained on windows of `window` tokens)
// of the given sizes, or kTorchScript loaded from `torchscript_path` (the
// sizes and dropout then unused: the module has its own).
inline ModelSpec CharLmSpec(ModelKind kind, int64_t vocab, int64_t embedding, int64_t layers,
                            int64_t units, double dropout, const std::string& torchscript_path = "",
                            int64_t heads = 4, int64_t window = 0) {
  ModelSpec model;
  model.heads = heads;
  model.context = TransformerContext(window);
  model.kind = kind;
  model.language_model = true;
  model.torchscript_path = torchscript_path;
  model.vocab = vocab;
  model.embedding = embedding;
  model.layers = layers;
  model.units = units;
  model.dropout = dropout;
  return model;
}

}  // namespace memaudit::engine

#endif  // MEMAUDIT_COMMON_TRAINING_MODEL_SPEC_H_
