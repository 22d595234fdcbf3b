#include "engine/torchscript_model.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

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
  try {
    torch::jit::Module module = torch::jit::load(path, torch::kCPU);
    return std::shared_ptr<Model>(std::make_shared<TorchScriptModel>(std::move(module)));
  } catch (const c10::Error& e) {
    return absl::InvalidArgumentError(absl::StrCat("model.torchscript_path: cannot load ", path,
                                                   ": ", e.what_without_backtrace()));
  }
}

}  // namespace memaudit::engine
