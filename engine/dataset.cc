#include "engine/dataset.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "common/seeding.h"

namespace memaudit::engine {

Batch TensorDataset::Gather(const std::vector<int64_t>& ids) const {
  torch::Tensor index = torch::from_blob(const_cast<int64_t*>(ids.data()),
                                         {static_cast<int64_t>(ids.size())}, torch::kLong)
                            .to(x_.device());
  return {x_.index_select(0, index), y_.index_select(0, index)};
}

TensorDataset TensorDataset::Concat(const TensorDataset& other) const {
  if (size() == 0) return other;
  if (other.size() == 0) return *this;
  return TensorDataset(torch::cat({x_, other.x_}, 0), torch::cat({y_, other.y_}, 0));
}

TensorDataset FromLabeledExamples(const data::LabeledExamples& data,
                                  const std::vector<uint32_t>& rows) {
  const int64_t n = static_cast<int64_t>(rows.size());
  torch::Tensor x = torch::empty({n, static_cast<int64_t>(data.features)}, torch::kFloat32);
  torch::Tensor y = torch::empty({n}, torch::kLong);
  float* xp = x.data_ptr<float>();
  int64_t* yp = y.data_ptr<int64_t>();
  const bool float_values = !data.values.empty();
  // The 256 values a pixel can scale to, each computed as `v / 255.0f`
  // once: a lookup gives the same floats as dividing every pixel, faster.
  std::array<float, 256> scaled;
  for (int v = 0; v < 256; ++v) scaled[v] = static_cast<float>(v) / 255.0f;
  for (int64_t i = 0; i < n; ++i) {
    const size_t at = static_cast<size_t>(rows[i]) * data.features;
    float* dst = xp + i * data.features;
    if (float_values) {
      std::copy_n(data.values.data() + at, data.features, dst);
    } else {
      const uint8_t* src = data.pixels.data() + at;
      for (uint32_t f = 0; f < data.features; ++f) dst[f] = scaled[src[f]];
    }
    yp[i] = data.labels[rows[i]];
  }
  return TensorDataset(x, y);
}

TensorDataset SyntheticBlobs(int64_t count, int64_t features, int64_t classes, double separation,
                             uint64_t seed) {
  SplitMix64 rng(seed);
  // Class means: random unit-scale directions times `separation`.
  std::vector<double> means(classes * features);
  for (double& m : means) m = (rng.UniformDouble() * 2 - 1) * separation;
  torch::Tensor x = torch::empty({count, features}, torch::kFloat32);
  torch::Tensor y = torch::empty({count}, torch::kLong);
  float* xp = x.data_ptr<float>();
  int64_t* yp = y.data_ptr<int64_t>();
  for (int64_t i = 0; i < count; ++i) {
    const int64_t label = static_cast<int64_t>(rng.Uniform(classes));
    yp[i] = label;
    for (int64_t f = 0; f < features; ++f) {
      // Box-Muller with our portable generator (std::normal_distribution is not).
      const double u1 = 1.0 - rng.UniformDouble(), u2 = rng.UniformDouble();
      const double g = std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
      xp[i * features + f] = static_cast<float>(means[label * features + f] + g);
    }
  }
  return TensorDataset(x, y);
}

}  // namespace memaudit::engine

#include "engine/lm_dataset.h"

namespace memaudit::engine {

TensorDataset LmWindows(const std::vector<int64_t>& tokens, int64_t window) {
  const int64_t n = tokens.size() > 1 ? (static_cast<int64_t>(tokens.size()) - 1) / window : 0;
  torch::Tensor all = torch::tensor(tokens, torch::kLong);
  torch::Tensor x = all.slice(0, 0, n * window).reshape({n, window}).clone();
  torch::Tensor y = all.slice(0, 1, n * window + 1).reshape({n, window}).clone();
  return TensorDataset(x, y);
}

}  // namespace memaudit::engine
