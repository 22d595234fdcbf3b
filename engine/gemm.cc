#include "engine/gemm.h"

#include <algorithm>

#ifdef MEMAUDIT_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#else
#include "engine/torch_api.h"
#endif

#include <c10/util/Exception.h>

// The OpenMP runtime's API (LibTorch's libgomp), declared here so that no
// compiler's own omp.h is needed.
extern "C" int omp_get_max_threads();
extern "C" void omp_set_num_threads(int threads);

namespace memaudit::engine {
namespace {

// oneDNN runs a product on omp_get_max_threads() threads and may split its
// reduction across them, which would make the rounding depend on the thread
// count: it gets one, and the caller's setting is restored afterwards.
class OneOpenMpThread {
 public:
  OneOpenMpThread() : before_(omp_get_max_threads()) {
    if (before_ != 1) omp_set_num_threads(1);
  }
  ~OneOpenMpThread() {
    if (before_ != 1) omp_set_num_threads(before_);
  }
  OneOpenMpThread(const OneOpenMpThread&) = delete;
  OneOpenMpThread& operator=(const OneOpenMpThread&) = delete;

 private:
  int before_;
};

}  // namespace

void Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  TORCH_CHECK(beta == 0.0f || beta == 1.0f, "Sgemm: beta must be 0 or 1");
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (beta == 0.0f) {
      for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    }
    return;
  }
  OneOpenMpThread one;
#ifdef MEMAUDIT_HAVE_ONEDNN
  const dnnl_status_t status = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, 1.0f,
                                          a, lda, b, ldb, beta, c, ldc);
  TORCH_CHECK(status == dnnl_success, "Sgemm: oneDNN failed with status ",
              static_cast<int>(status));
#else
  // Views over the caller's memory; at::mm_out / addmm_ write C in place.
  auto view = [](const float* p, int64_t rows, int64_t cols, int64_t ld, bool trans) {
    torch::Tensor t = torch::from_blob(const_cast<float*>(p), {rows, cols}, {ld, 1});
    return trans ? t.t() : t;
  };
  const torch::Tensor op_a = view(a, trans_a ? k : m, trans_a ? m : k, lda, trans_a);
  const torch::Tensor op_b = view(b, trans_b ? n : k, trans_b ? k : n, ldb, trans_b);
  torch::Tensor out = torch::from_blob(c, {m, n}, {ldc, 1});
  if (beta == 0.0f) {
    torch::mm_out(out, op_a, op_b);
  } else {
    out.addmm_(op_a, op_b);
  }
#endif
}

const char* SgemmBackend() {
#ifdef MEMAUDIT_HAVE_ONEDNN
  return "onednn";
#else
  return "aten";
#endif
}

}  // namespace memaudit::engine
