// The engine's matrix products (engine/gemm.h: Sgemm, one thread, oneDNN's
// JIT kernels) against LibTorch's at::mm_out on the same operands (OpenBLAS
// in Debian's build), on the products a shadow-model MLP step and its pool
// evaluation run: for a layer in -> out at batch n, the forward x·wᵀ
// [n x out], the weight gradient gᵀ·x [out x in] and the input gradient g·w
// [n x in]. One thread for both. Prints each median and the ratio
// aten / Sgemm (> 1: Sgemm faster).
//
//   build/bin/gemm_bench [--reps=7]
#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "engine/gemm.h"
#include "engine/torch_api.h"

using namespace memaudit;  // NOLINT

namespace {

struct Product {
  std::string name;
  bool trans_a, trans_b;
  int64_t m, n, k;
};

// Median seconds of one call, each timing `calls` calls.
double Time(int reps, int calls, const std::function<void()>& run) {
  run();  // warm: kernels generated, buffers touched
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const double start = bench::Seconds();
    for (int c = 0; c < calls; ++c) run();
    t.push_back((bench::Seconds() - start) / calls);
  }
  return bench::Median(t);
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = static_cast<int>(bench::FlagInt(argc, argv, "reps", 7));
  torch::set_num_threads(1);
  // The system bench's shapes: b = 784-32-10 at batch 64, a = 784-256-10 at
  // batch 128, and the 10,000-row pool's evaluation.
  const std::vector<Product> products = {
      {"784-32 b64 forward x.wT", false, true, 64, 32, 784},
      {"784-32 b64 weight grad gT.x", true, false, 32, 784, 64},
      {"32-10 b64 forward", false, true, 64, 10, 32},
      {"32-10 b64 input grad g.w", false, false, 64, 32, 10},
      {"784-256 b128 forward x.wT", false, true, 128, 256, 784},
      {"784-256 b128 weight grad gT.x", true, false, 256, 784, 128},
      {"256-10 b128 forward", false, true, 128, 10, 256},
      {"784-32 pool of 10000 forward", false, true, 10000, 32, 784},
      {"784-256 pool of 10000 forward", false, true, 10000, 256, 784},
  };
  std::printf("gemm bench: Sgemm (%s) vs at::mm_out, one thread, median of %d\n",
              engine::SgemmBackend(), reps);
  std::printf("%-32s %12s %12s %8s %10s\n", "product (m x n x k)", "aten us", "Sgemm us", "ratio",
              "GFLOP/s");
  std::vector<double> ratios;
  for (const Product& p : products) {
    // Stored shapes of op(A) [m, k] and op(B) [k, n].
    torch::Tensor a = p.trans_a ? torch::randn({p.k, p.m}) : torch::randn({p.m, p.k});
    torch::Tensor b = p.trans_b ? torch::randn({p.n, p.k}) : torch::randn({p.k, p.n});
    torch::Tensor c = torch::empty({p.m, p.n});
    const torch::Tensor op_a = p.trans_a ? a.t() : a, op_b = p.trans_b ? b.t() : b;
    const double flops = 2.0 * p.m * p.n * p.k;
    const int calls = std::max(1, static_cast<int>(2e8 / flops));
    const double aten = Time(reps, calls, [&] { torch::mm_out(c, op_a, op_b); });
    const double ours = Time(reps, calls, [&] {
      engine::Sgemm(p.trans_a, p.trans_b, p.m, p.n, p.k, a.data_ptr<float>(), a.size(1),
                    b.data_ptr<float>(), b.size(1), 0.0f, c.data_ptr<float>(), p.n);
    });
    ratios.push_back(aten / ours);
    std::printf("%-32s %12.1f %12.1f %7.2fx %10.1f\n", p.name.c_str(), aten * 1e6, ours * 1e6,
                aten / ours, flops / ours / 1e9);
  }
  std::printf("RESULT Sgemm vs at::mm_out: median ratio %.2fx over %zu products\n",
              bench::Median(ratios), ratios.size());
  std::printf("reproduce: build/bin/gemm_bench --reps=%d\n", reps);
  return 0;
}
