#include "engine/linear.h"

#include <ATen/Parallel.h>

#include <algorithm>

#include "engine/device.h"
#include "engine/gemm.h"

namespace memaudit::engine {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// One layer's shapes: n rows of `in` features to `out`.
struct Dims {
  int64_t n, in, out;
};

// y [n, out] = x [n, in] · w [out, in]ᵀ + b [out]: the bias first, then one
// accumulating product.
void ForwardOne(const Dims& d, const float* x, const float* w, const float* b, float* y) {
  for (int64_t i = 0; i < d.n; ++i) std::copy(b, b + d.out, y + i * d.out);
  Sgemm(false, true, d.n, d.out, d.in, x, d.in, w, d.in, 1.0f, y, d.out);
}

// From g = dL/dy [n, out]: gw = gᵀ · x [out, in], gb = the column sums of g
// (row by row, in order), and gx = g · w [n, in] where gx is not null.
void BackwardOne(const Dims& d, const float* g, const float* x, const float* w, float* gx,
                 float* gw, float* gb) {
  Sgemm(true, false, d.out, d.in, d.n, g, d.out, x, d.in, 0.0f, gw, d.in);
  std::fill(gb, gb + d.out, 0.0f);
  for (int64_t i = 0; i < d.n; ++i) {
    const float* row = g + i * d.out;
    for (int64_t j = 0; j < d.out; ++j) gb[j] += row[j];
  }
  if (gx != nullptr) Sgemm(false, false, d.n, d.in, d.out, g, d.out, w, d.in, 0.0f, gx, d.in);
}

// Runs fn(k) for every member, members spread over the task's threads: each
// member's products are single-threaded, so the split changes no bits.
template <typename Fn>
void ForEachMember(int64_t members, const Fn& fn) {
  at::parallel_for(0, members, 1, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) fn(k);
  });
}

struct StackedLinearFunction : torch::autograd::Function<StackedLinearFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& w,
                               const torch::Tensor& b) {
    const torch::Tensor xc = x.contiguous(), wc = w.contiguous();
    ctx->save_for_backward({xc, wc});
    return StackedLinearForward(xc, wc, b);
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    LinearGradients g = StackedLinearBackward(grads[0], saved[0], saved[1],
                                              /*input_gradient=*/ctx->needs_input_grad(0));
    return {g.x, g.w, g.b};
  }
};

// Whether this product runs on bfloat16 inputs (MatmulPrecision::kBf16 on
// CUDA): the casts are autograd's, so weights and gradients stay float32.
bool ProductInBf16(const torch::Tensor& x) {
  return x.is_cuda() && x.scalar_type() == torch::kFloat32 &&
         CurrentMatmulPrecision() == MatmulPrecision::kBf16;
}

torch::Tensor Bf16(const torch::Tensor& t) { return t.to(torch::kBFloat16); }

}  // namespace

torch::Tensor StackedLinearForward(const torch::Tensor& x, const torch::Tensor& w,
                                   const torch::Tensor& b) {
  const torch::Tensor xc = x.contiguous(), wc = w.contiguous(), bc = b.contiguous();
  const Dims d{xc.size(1), xc.size(2), wc.size(1)};
  torch::Tensor y = torch::empty({xc.size(0), d.n, d.out}, xc.options());
  const float *xp = xc.data_ptr<float>(), *wp = wc.data_ptr<float>(), *bp = bc.data_ptr<float>();
  float* yp = y.data_ptr<float>();
  ForEachMember(xc.size(0), [&](int64_t k) {
    ForwardOne(d, xp + k * d.n * d.in, wp + k * d.out * d.in, bp + k * d.out, yp + k * d.n * d.out);
  });
  return y;
}

LinearGradients StackedLinearBackward(const torch::Tensor& grad, const torch::Tensor& x,
                                      const torch::Tensor& w, bool input_gradient) {
  const torch::Tensor g = grad.contiguous(), xc = x.contiguous(), wc = w.contiguous();
  const int64_t members = xc.size(0);
  const Dims d{xc.size(1), xc.size(2), wc.size(1)};
  LinearGradients out;
  if (input_gradient) out.x = torch::empty_like(xc);
  out.w = torch::empty_like(wc);
  out.b = torch::empty({members, 1, d.out}, wc.options());
  const float *gp = g.data_ptr<float>(), *xp = xc.data_ptr<float>(), *wp = wc.data_ptr<float>();
  float *gxp = input_gradient ? out.x.data_ptr<float>() : nullptr, *gwp = out.w.data_ptr<float>(),
        *gbp = out.b.data_ptr<float>();
  ForEachMember(members, [&](int64_t k) {
    BackwardOne(d, gp + k * d.n * d.out, xp + k * d.n * d.in, wp + k * d.out * d.in,
                gxp != nullptr ? gxp + k * d.n * d.in : nullptr, gwp + k * d.out * d.in,
                gbp + k * d.out);
  });
  return out;
}

bool RunsOnSgemm(const torch::Tensor& x, const torch::Tensor& w) {
  return x.device().is_cpu() && w.device().is_cpu() && x.scalar_type() == torch::kFloat32 &&
         w.scalar_type() == torch::kFloat32;
}

torch::Tensor Linear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
  if (ProductInBf16(x)) return torch::linear(Bf16(x), Bf16(w), Bf16(b)).to(torch::kFloat32);
  if (!RunsOnSgemm(x, w)) return torch::linear(x, w, b);
  TORCH_CHECK(w.dim() == 2 && b.numel() == w.size(0) && x.dim() >= 1 && x.size(-1) == w.size(1),
              "linear: input [..., ", x.dim() >= 1 ? x.size(-1) : 0, "] does not fit weight [",
              w.size(0), ", ", w.dim() == 2 ? w.size(1) : 0, "]");
  // One member of a stacked layer: the same products, so the same bits.
  std::vector<int64_t> sizes = x.sizes().vec();
  sizes.back() = w.size(0);
  return StackedLinearFunction::apply(x.reshape({1, -1, x.size(-1)}), w.unsqueeze(0),
                                      b.reshape({1, 1, -1}))
      .reshape(sizes);
}

torch::Tensor StackedLinear(const torch::Tensor& x, const torch::Tensor& w,
                            const torch::Tensor& b) {
  TORCH_CHECK(x.dim() == 3 && w.dim() == 3 && x.size(0) == w.size(0) && x.size(2) == w.size(2) &&
                  b.numel() == w.size(0) * w.size(1),
              "stacked linear: input ", x.sizes(), " does not fit weight ", w.sizes());
  if (ProductInBf16(x)) {
    return torch::baddbmm(Bf16(b), Bf16(x), Bf16(w).transpose(1, 2)).to(torch::kFloat32);
  }
  if (!RunsOnSgemm(x, w)) return torch::baddbmm(b, x, w.transpose(1, 2));
  return StackedLinearFunction::apply(x, w, b.reshape({w.size(0), 1, w.size(1)}));
}

}  // namespace memaudit::engine
