#include "engine/signals.h"

#include <limits>

namespace memaudit::engine {

torch::Tensor LogitScaledConfidence(const torch::Tensor& logits, const torch::Tensor& labels) {
  torch::Tensor z = logits.to(torch::kFloat64);
  torch::Tensor y = labels.to(torch::kLong).unsqueeze(1);
  torch::Tensor z_y = z.gather(1, y).squeeze(1);
  torch::Tensor others = z.scatter(1, y, -std::numeric_limits<double>::infinity());
  return z_y - torch::logsumexp(others, 1);
}

torch::Tensor CrossEntropyPerExample(const torch::Tensor& logits, const torch::Tensor& labels) {
  torch::Tensor z = logits.to(torch::kFloat64);
  torch::Tensor y = labels.to(torch::kLong).unsqueeze(1);
  return torch::logsumexp(z, 1) - z.gather(1, y).squeeze(1);
}

}  // namespace memaudit::engine
