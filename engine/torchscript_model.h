// A user model exported with torch.jit.save, trained and scored like a
// built-in one: its parameters are registered (aliased, not copied) with the
// engine's Model so optimizers, checkpoints and Fork() see them.
#ifndef MEMAUDIT_ENGINE_TORCHSCRIPT_MODEL_H_
#define MEMAUDIT_ENGINE_TORCHSCRIPT_MODEL_H_

#include <torch/script.h>
#include <torch/torch.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/model.h"

namespace memaudit::engine {

class TorchScriptModel : public Model {
 public:
  explicit TorchScriptModel(torch::jit::Module module);
  // Calls the scripted forward(x); it must return a tensor of logits.
  torch::Tensor Forward(const torch::Tensor& x) override;
  // Keeps the scripted module's own train/eval flag in step with ours.
  void train(bool on = true) override;

 private:
  torch::jit::Module module_;
};

absl::StatusOr<std::shared_ptr<Model>> LoadTorchScriptModel(const std::string& path);

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_TORCHSCRIPT_MODEL_H_
