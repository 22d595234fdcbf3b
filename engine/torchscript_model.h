// A user model exported with torch.jit.save, trained and scored like a
// built-in one: its parameters are registered (aliased, not copied) with the
// engine's Model so optimizers, checkpoints and Fork() see them.
#ifndef MEMAUDIT_ENGINE_TORCHSCRIPT_MODEL_H_
#define MEMAUDIT_ENGINE_TORCHSCRIPT_MODEL_H_

#include <torch/script.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/model.h"
#include "engine/torch_api.h"

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
// Each model of an audit needs its own initial weights: a module with a
// reset_parameters() method redraws them from LibTorch's generator, which
// BuildModel has seeded with the model's init seed. Without the method the
// file's weights are every model's start. Errors name model.torchscript_path.
absl::Status RedrawScriptedWeights(torch::jit::Module& module);
// LoadTorchScriptModel for a model memaudit trains: RedrawScriptedWeights.
absl::StatusOr<std::shared_ptr<Model>> LoadTorchScriptClassifierForTraining(
    const std::string& path);

// Shared by every TorchScript model kind (torchscript_lm.h too).
// torch::jit::load on the CPU within model_limits.h's file and parameter
// bounds; errors name model.torchscript_path.
absl::StatusOr<torch::jit::Module> LoadBoundedModule(const std::string& path);
// Registers the module's parameters and buffers with `owner` as aliases
// (dots become underscores), so optimizers, checkpoints and Fork() see them.
void RegisterScriptedTensors(const torch::jit::Module& module, torch::nn::Module& owner);

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_TORCHSCRIPT_MODEL_H_
