// Torch-free description of a trainable model, so that planners and services
// can name architectures without compiling LibTorch headers.
#ifndef MEMAUDIT_ENGINE_MODEL_SPEC_H_
#define MEMAUDIT_ENGINE_MODEL_SPEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace memaudit::engine {

enum class ModelKind {
  kLogReg,       // multinomial logistic regression
  kMlp,          // ReLU MLP with `hidden` widths
  kCnn,          // two conv(5x5)+pool blocks and a linear head, for small images
  kLstmLm,       // character LSTM language model
  kGruLm,        // character GRU language model
  kTorchScript,  // a user module loaded with torch::jit::load
};

struct ModelSpec {
  ModelKind kind = ModelKind::kMlp;
  // Classifiers: input features and classes. CNN: inputs = channels*height*width.
  int64_t inputs = 0;
  int64_t classes = 0;
  std::vector<uint32_t> hidden;  // kMlp widths; kCnn: {conv1 channels, conv2 channels, fc}
  int64_t image_channels = 1;
  int64_t image_height = 0;  // kCnn; 0 = square image from inputs / channels
  // Language models: vocabulary size, embedding width, layers x units.
  int64_t vocab = 0;
  int64_t embedding = 32;
  int64_t layers = 1;
  int64_t units = 128;
  // Dropout probability after each hidden layer (0 = off). It draws from the
  // trainer's dropout generator, never from LibTorch's global one.
  double dropout = 0.0;
  // kTorchScript: a file written by torch.jit.save. Its forward must map a
  // batch of inputs to logits (classifiers) like the built-in models.
  std::string torchscript_path;
};

absl::Status ValidateModelSpec(const ModelSpec& spec);

// A character LSTM (`lstm`) or GRU language model over `vocab` symbols.
inline ModelSpec CharLmSpec(bool lstm, int64_t vocab, int64_t embedding, int64_t layers,
                            int64_t units, double dropout) {
  ModelSpec model;
  model.kind = lstm ? ModelKind::kLstmLm : ModelKind::kGruLm;
  model.vocab = vocab;
  model.embedding = embedding;
  model.layers = layers;
  model.units = units;
  model.dropout = dropout;
  return model;
}

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_MODEL_SPEC_H_
