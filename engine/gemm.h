// Row-major single-precision matrix products on the calling thread, with
// rounding that depends only on the operands' shapes: the same product gives
// the same bits whatever the thread count, the caller, or whether it is one
// model's layer or one member's of a stacked ensemble.
#ifndef MEMAUDIT_ENGINE_GEMM_H_
#define MEMAUDIT_ENGINE_GEMM_H_

#include <cstdint>

namespace memaudit::engine {

// C[m, n] = op(A)[m, k] · op(B)[k, n] + beta · C, row-major with leading
// dimensions lda, ldb and ldc; op transposes when trans_* is set. beta is 0
// (C is written, never read) or 1 (accumulates into C). One thread: callers
// parallelise across independent products, never inside one.
void Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// The library behind Sgemm: "onednn" (its JIT kernels, 1.0-1.7x OpenBLAS on
// the small products of shadow-model MLPs) or "aten" where it is absent.
const char* SgemmBackend();

}  // namespace memaudit::engine

#endif  // MEMAUDIT_ENGINE_GEMM_H_
