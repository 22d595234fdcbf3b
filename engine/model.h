// The interface the generic trainer, checkpoints, DP-SGD and signals work
// over: a torch::nn::Module with a forward pass and a per-example loss.
#ifndef MEMAUDIT_ENGINE_MODEL_H_
#define MEMAUDIT_ENGINE_MODEL_H_

#include <memory>
#include <mutex>
#include <optional>

#include "absl/status/statusor.h"
#include "common/training/model_spec.h"
#include "engine/torch_api.h"

namespace memaudit::engine {

class Model : public torch::nn::Module {
 public:
  // Classifiers: x [B, inputs] float -> logits [B, classes].
  // Language models: x [B, T] int64 -> logits [B, T, vocab].
  virtual torch::Tensor Forward(const torch::Tensor& x) = 0;

  // Per-example loss [B]: cross-entropy for classifiers, mean per-token
  // cross-entropy for language models (y [B, T]).
  virtual torch::Tensor PerExampleLoss(const torch::Tensor& x, const torch::Tensor& y);

  // The mean batch loss the optimizer descends. For classifiers this is
  // torch's cross_entropy, exactly what RunClassifier uses.
  virtual torch::Tensor BatchLoss(const torch::Tensor& x, const torch::Tensor& y);

  // Dropout masks come from this generator (CPU); null disables dropout.
  void set_dropout_generator(at::Generator* gen) { dropout_gen_ = gen; }

 protected:
  // Inverted dropout with a mask drawn on the CPU from dropout_gen_, so masks
  // are identical on every device and are captured by checkpoints.
  torch::Tensor Dropout(const torch::Tensor& x, double p);
  at::Generator* dropout_generator() const { return dropout_gen_; }

 private:
  at::Generator* dropout_gen_ = nullptr;
};

// Held while LibTorch's global generator is seeded and drawn from (model
// init, a TorchScript module's own dropout), since a worker runs several
// tasks at once.
std::mutex& GlobalGeneratorMutex();

// Builds the model with parameters initialised from LibTorch's global
// generator reseeded to `init_seed` (the same scheme RunClassifier uses), on
// the CPU; callers move it to a device afterwards.
absl::StatusOr<std::shared_ptr<Model>> BuildModel(const ModelSpec& spec, uint64_t init_seed);

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_MODEL_H_
