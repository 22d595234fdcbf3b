#include "engine/torchscript_model.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "common/model_limits.h"

namespace memaudit::engine {

TorchScriptModel::TorchScriptModel(torch::jit::Module module) : module_(std::move(module)) {
  for (const auto& p : module_.named_parameters(/*recurse=*/true)) {
    std::string name = p.name;
    std::replace(name.begin(), name.end(), '.', '_');  // register_parameter rejects dots
    register_parameter(name, p.value);
  }
  for (const auto& b : module_.named_buffers(/*recurse=*/true)) {
    std::string name = b.name;
    std::replace(name.begin(), name.end(), '.', '_');
    register_buffer(name, b.value);
  }
}

torch::Tensor TorchScriptModel::Forward(const torch::Tensor& x) {
  return module_.forward({x}).toTensor();
}

void TorchScriptModel::train(bool on) {
  Model::train(on);
  module_.train(on);
}

absl::StatusOr<std::shared_ptr<Model>> LoadTorchScriptModel(const std::string& path) {
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
    return std::shared_ptr<Model>(std::make_shared<TorchScriptModel>(std::move(module)));
  } catch (const c10::Error& e) {
    return absl::InvalidArgumentError(absl::StrCat("model.torchscript_path: cannot load ", path,
                                                   ": ", e.what_without_backtrace()));
  }
}

}  // namespace memaudit::engine
