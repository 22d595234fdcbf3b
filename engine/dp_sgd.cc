#include "engine/dp_sgd.h"

#include <algorithm>
#include <cmath>
#include <typeinfo>

#include "engine/classifier_models.h"
#include "engine/linear.h"

namespace memaudit::engine {
namespace {

// The clip factor of a per-example gradient of L2 norm `norm`.
double ClipScale(double norm, double clip_norm) { return 1.0 / std::max(1.0, norm / clip_norm); }

// Whether `mlp`'s forward draws no dropout mask: no hidden layers, no
// dropout, or outside training mode.
bool DropoutInactive(const MlpModel& mlp) {
  return mlp.layers().size() <= 1 || !(mlp.dropout() > 0) || !mlp.is_training();
}

// The batched ("ghost norm") path for an MlpModel without active dropout:
// fills `sum` (one tensor per parameter, aligned with `params`) with the sum
// of clipped per-example gradients and `stats` with the norms and mean loss.
// Returns false, touching nothing, where it does not apply.
bool BatchedClippedSum(Model& model, const Batch& batch, const DpSgdOptions& dp,
                       const std::vector<torch::Tensor>& params, std::vector<torch::Tensor>& sum,
                       DpGradientStats& stats) {
  if (typeid(model) != typeid(MlpModel)) return false;
  auto& mlp = static_cast<MlpModel&>(model);
  const std::vector<torch::nn::Linear>& layers = mlp.layers();
  const int64_t n = batch.x.size(0);
  if (n == 0 || batch.x.dim() != 2 || layers.empty()) return false;
  // MlpModel's parameters: fc0.weight, fc0.bias, fc1.weight, ... (every
  // layer has a bias); the sums below come out in that order.
  if (params.size() != 2 * layers.size()) return false;
  for (size_t l = 0; l < layers.size(); ++l) {
    if (!params[2 * l].is_same(layers[l]->weight) || !params[2 * l + 1].is_same(layers[l]->bias)) {
      return false;
    }
  }
  if (!DropoutInactive(mlp)) return false;

  // Forward with detached parameters, keeping each layer's input a and output
  // z (z_0 a leaf, the rest downstream of it): the model's Forward without
  // dropout, and PerExampleLoss's cross-entropy.
  std::vector<torch::Tensor> inputs, outputs;
  torch::Tensor a = batch.x.detach();
  for (size_t l = 0; l < layers.size(); ++l) {
    torch::Tensor z = Linear(a, layers[l]->weight.detach(), layers[l]->bias.detach());
    if (l == 0) z.requires_grad_();
    inputs.push_back(a);
    outputs.push_back(z);
    if (l + 1 < layers.size()) a = torch::relu(z);
  }
  const torch::Tensor losses = torch::nn::functional::cross_entropy(
      outputs.back(), batch.y,
      torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
  // delta[l][i] = d loss_i / d z_l[i]: example i's loss depends on row i only.
  const std::vector<torch::Tensor> deltas =
      torch::autograd::grad({losses.sum()}, outputs, /*grad_outputs=*/{}, /*retain_graph=*/false,
                            /*create_graph=*/false, /*allow_unused=*/false);

  const torch::Tensor per_loss = losses.detach().to(torch::kCPU, torch::kFloat64).contiguous();
  for (int64_t i = 0; i < n; ++i) stats.loss += per_loss.data_ptr<double>()[i] / n;
  // ||g_i||^2 = sum_l ||delta_i||^2 (||a_i||^2 + 1), in float64 like the loop.
  torch::Tensor sq = torch::zeros({n}, batch.x.options().dtype(torch::kFloat64));
  for (size_t l = 0; l < layers.size(); ++l) {
    const torch::Tensor a_sq = inputs[l].to(torch::kFloat64).pow(2).sum(1) + 1;
    sq += deltas[l].to(torch::kFloat64).pow(2).sum(1) * a_sq;
  }
  const torch::Tensor norms = sq.sqrt().to(torch::kCPU).contiguous();
  std::vector<double> scale(n);
  for (int64_t i = 0; i < n; ++i) {
    const double norm = norms.data_ptr<double>()[i];
    stats.norms.push_back(norm);
    scale[i] = ClipScale(norm, dp.clip_norm);
  }
  // Clipped sums, in parameter order: weight (c o delta)^T A, bias sum_i c_i delta_i.
  sum.clear();
  for (size_t l = 0; l < layers.size(); ++l) {
    const torch::Tensor c = torch::tensor(scale, torch::kFloat64)
                                .to(deltas[l].device(), deltas[l].scalar_type())
                                .unsqueeze(1);
    const torch::Tensor cd = deltas[l] * c;
    sum.push_back(cd.t().mm(inputs[l]).to(params[2 * l].scalar_type()));
    sum.push_back(cd.sum(0).to(params[2 * l + 1].scalar_type()));
  }
  stats.batched = true;
  return true;
}

}  // namespace

DpGradientStats PrivateGradient(Model& model, const Batch& batch, const DpSgdOptions& dp,
                                at::Generator& noise_gen, PerExampleGradients method) {
  std::vector<torch::Tensor> params = model.parameters();
  std::vector<torch::Tensor> sum;
  DpGradientStats stats;
  const int64_t n = batch.x.size(0);
  if (method != PerExampleGradients::kAuto ||
      !BatchedClippedSum(model, batch, dp, params, sum, stats)) {
    for (const auto& p : params) sum.push_back(torch::zeros_like(p));
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
      const double scale = ClipScale(norm, dp.clip_norm);
      for (size_t k = 0; k < params.size(); ++k) {
        if (grads[k].defined()) sum[k].add_(grads[k], scale);
      }
    }
  }
  if (dp.keep_clipped_sum) {
    for (const torch::Tensor& s : sum) stats.clipped_sum.push_back(s.detach().clone());
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
