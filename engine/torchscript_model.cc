#include "engine/torchscript_model.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/training/model_limits.h"

namespace memaudit::engine {

void RegisterScriptedTensors(const torch::jit::Module& module, torch::nn::Module& owner) {
  for (const auto& p : module.named_parameters(/*recurse=*/true)) {
    std::string name = p.name;
    std::replace(name.begin(), name.end(), '.', '_');  // register_parameter rejects dots
    owner.register_parameter(name, p.value);
  }
  for (const auto& b : module.named_buffers(/*recurse=*/true)) {
    std::string name = b.name;
    std::replace(name.begin(), name.end(), '.', '_');
    owner.register_buffer(name, b.value);
  }
}

TorchScriptModel::TorchScriptModel(torch::jit::Module module) : module_(std::move(module)) {
  RegisterScriptedTensors(module_, *this);
}

torch::Tensor TorchScriptModel::Forward(const torch::Tensor& x) {
  return module_.forward({x}).toTensor();
}

void TorchScriptModel::train(bool on) {
  Model::train(on);
  module_.train(on);
}

absl::StatusOr<torch::jit::Module> LoadBoundedModule(const std::string& path) {
  // The spec cannot size a user's module: bound the file before reading it
  // and the parameters before training them (model_limits.h).
  std::error_code error;
  const uintmax_t bytes = std::filesystem::file_size(path, error);
  if (!error && bytes > kMaxTorchScriptBytes) {
    return absl::InvalidArgumentError(absl::StrCat("model.torchscript_path: the file is ", bytes,
                                                   " bytes; at most ", kMaxTorchScriptBytes));
  }
  try {
    torch::jit::Module module = torch::jit::load(path, torch::kCPU);
    double parameters = 0;
    for (const auto& p : module.named_parameters(/*recurse=*/true)) {
      parameters += static_cast<double>(p.value.numel());
    }
    if (parameters > kMaxModelParameters) {
      return absl::InvalidArgumentError(absl::StrCat("model.torchscript_path: the module has ",
                                                     parameters, " parameters; at most ",
                                                     kMaxModelParameters));
    }
    return module;
  } catch (const c10::Error& e) {
    return absl::InvalidArgumentError(absl::StrCat("model.torchscript_path: cannot load ", path,
                                                   ": ", e.what_without_backtrace()));
  }
}

absl::StatusOr<std::shared_ptr<Model>> LoadTorchScriptModel(const std::string& path) {
  MEMAUDIT_ASSIGN_OR_RETURN(torch::jit::Module module, LoadBoundedModule(path));
  return std::shared_ptr<Model>(std::make_shared<TorchScriptModel>(std::move(module)));
}

absl::Status RedrawScriptedWeights(torch::jit::Module& module) {
  if (!module.find_method("reset_parameters").has_value()) return absl::OkStatus();
  try {
    module.run_method("reset_parameters");
  } catch (const c10::Error& e) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model.torchscript_path: reset_parameters() failed: ", e.what_without_backtrace()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<Model>> LoadTorchScriptClassifierForTraining(
    const std::string& path) {
  MEMAUDIT_ASSIGN_OR_RETURN(torch::jit::Module module, LoadBoundedModule(path));
  MEMAUDIT_RETURN_IF_ERROR(RedrawScriptedWeights(module));
  return std::shared_ptr<Model>(std::make_shared<TorchScriptModel>(std::move(module)));
}

}  // namespace memaudit::engine
