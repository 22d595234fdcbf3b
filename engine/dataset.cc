#include "engine/dataset.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "common/base/seeding.h"

namespace memaudit::engine {

torch::Tensor GatherRows(const torch::Tensor& t, const std::vector<int64_t>& ids) {
  const int64_t n = static_cast<int64_t>(ids.size()), rows = t.size(0);
  if (!t.device().is_cpu() || !t.is_contiguous()) {
    torch::Tensor index =
        torch::from_blob(const_cast<int64_t*>(ids.data()), {n}, torch::kLong).to(t.device());
    return t.index_select(0, index);
  }
  std::vector<int64_t> sizes = t.sizes().vec();
  sizes[0] = n;
  torch::Tensor out = torch::empty(sizes, t.options());
  const size_t row_bytes = rows == 0 ? 0 : t.nbytes() / static_cast<size_t>(rows);
  const char* from = static_cast<const char*>(t.data_ptr());
  char* to = static_cast<char*>(out.data_ptr());
  for (int64_t i = 0; i < n; ++i) {
    TORCH_CHECK(ids[i] >= 0 && ids[i] < rows, "row ", ids[i], " is outside [0, ", rows, ")");
    std::memcpy(to + i * row_bytes, from + ids[i] * row_bytes, row_bytes);
  }
  return out;
}

Batch TensorDataset::Gather(const std::vector<int64_t>& ids) const {
  return {GatherRows(x_, ids), GatherRows(y_, ids)};
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
