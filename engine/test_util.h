// Helpers shared by the engine's tests.
#ifndef MEMAUDIT_ENGINE_TEST_UTIL_H_
#define MEMAUDIT_ENGINE_TEST_UTIL_H_

#include <vector>

#include "engine/torch_api.h"

namespace memaudit::engine::testing {

// All parameters of a module flattened into one float64 vector.
inline std::vector<double> FlatParams(torch::nn::Module& m) {
  std::vector<double> out;
  for (const auto& p : m.parameters()) {
    torch::Tensor t = p.detach().cpu().to(torch::kFloat64).contiguous().reshape({-1});
    out.insert(out.end(), t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
  }
  return out;
}

inline std::vector<int64_t> Range(int64_t n) {
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = i;
  return v;
}

}  // namespace memaudit::engine::testing

#endif  // MEMAUDIT_ENGINE_TEST_UTIL_H_
