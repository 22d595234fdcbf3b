#include "engine/dp_sgd.h"

#include <cmath>

namespace memaudit::engine {

DpGradientStats PrivateGradient(Model& model, const Batch& batch, const DpSgdOptions& dp,
                                at::Generator& noise_gen) {
  std::vector<torch::Tensor> params = model.parameters();
  std::vector<torch::Tensor> sum;
  for (const auto& p : params) sum.push_back(torch::zeros_like(p));
  DpGradientStats stats;
  const int64_t n = batch.x.size(0);
  for (int64_t i = 0; i < n; ++i) {
    torch::Tensor loss =
        model.PerExampleLoss(batch.x.slice(0, i, i + 1), batch.y.slice(0, i, i + 1)).sum();
    stats.loss += loss.item<double>() / n;
    std::vector<torch::Tensor> grads =
        torch::autograd::grad({loss}, params, /*grad_outputs=*/{}, /*retain_graph=*/false,
                              /*create_graph=*/false, /*allow_unused=*/true);
    double sq = 0;
    for (const auto& g : grads) {
      if (g.defined()) sq += g.to(torch::kFloat64).pow(2).sum().item<double>();
    }
    const double norm = std::sqrt(sq);
    stats.norms.push_back(norm);
    const double scale = 1.0 / std::max(1.0, norm / dp.clip_norm);
    for (size_t k = 0; k < params.size(); ++k) {
      if (grads[k].defined()) sum[k].add_(grads[k], scale);
    }
  }
  const double stddev = dp.noise_multiplier * dp.clip_norm;
  for (size_t k = 0; k < params.size(); ++k) {
    torch::Tensor noise = at::normal(0.0, stddev, params[k].sizes(), noise_gen,
                                     torch::TensorOptions(torch::kFloat32));
    torch::Tensor g =
        (sum[k] + noise.to(params[k].device(), params[k].scalar_type())) / static_cast<double>(n);
    params[k].mutable_grad() = g.detach();
  }
  return stats;
}

}  // namespace memaudit::engine
