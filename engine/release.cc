#include "engine/release.h"

#include <cmath>

namespace memaudit::engine {
namespace {

double MeanNll(const torch::Tensor& z, const torch::Tensor& y, double t) {
  return torch::nn::functional::cross_entropy(z / t, y).item<double>();
}

}  // namespace

double FitTemperature(const torch::Tensor& logits, const torch::Tensor& labels) {
  torch::NoGradGuard no_grad;
  torch::Tensor z = logits.detach().to(torch::kCPU, torch::kFloat64);
  torch::Tensor y = labels.to(torch::kCPU, torch::kLong);
  // The NLL is unimodal in log T for fixed logits, so golden-section works.
  const double phi = (std::sqrt(5.0) - 1) / 2;
  double lo = -4, hi = 4;
  double a = hi - phi * (hi - lo), b = lo + phi * (hi - lo);
  double fa = MeanNll(z, y, std::exp(a)), fb = MeanNll(z, y, std::exp(b));
  for (int i = 0; i < 80; ++i) {
    if (fa < fb) {
      hi = b;
      b = a;
      fb = fa;
      a = hi - phi * (hi - lo);
      fa = MeanNll(z, y, std::exp(a));
    } else {
      lo = a;
      a = b;
      fa = fb;
      b = lo + phi * (hi - lo);
      fb = MeanNll(z, y, std::exp(b));
    }
  }
  return std::exp((lo + hi) / 2);
}

torch::Tensor ReleasedPosteriors(const torch::Tensor& logits, const ReleasePolicy& policy,
                                 double temperature) {
  torch::NoGradGuard no_grad;
  torch::Tensor z = logits.detach().to(torch::kCPU, torch::kFloat64);
  const int64_t c = z.size(1);
  switch (policy.kind) {
    case ReleaseKind::kFull:
      return torch::softmax(z, 1);
    case ReleaseKind::kTemperature:
      return torch::softmax(z / temperature, 1);
    case ReleaseKind::kLabelOnly:
      return torch::one_hot(z.argmax(1), c).to(torch::kFloat64);
    case ReleaseKind::kTopK: {
      const int64_t k = std::max<int64_t>(1, std::min(policy.top_k, c));
      torch::Tensor p = torch::softmax(z, 1);
      auto [values, index] = p.topk(k, 1);
      if (k == c) return p;
      torch::Tensor rest = ((1 - values.sum(1, true)) / static_cast<double>(c - k)).clamp_min(0);
      torch::Tensor out = rest.expand({p.size(0), c}).clone();
      return out.scatter(1, index, values);
    }
  }
  return torch::softmax(z, 1);
}

}  // namespace memaudit::engine
