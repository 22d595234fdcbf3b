#include "engine/linear.h"

#include <vector>

#include "engine/gemm.h"
#include "gtest/gtest.h"

namespace memaudit::engine {
namespace {

// Small products by hand: A = [[1, 2, 3], [4, 5, 6]], B = [[1, 0], [0, 1],
// [1, 1]]: A·B = [[4, 5], [10, 11]].
TEST(SgemmTest, HandComputedProducts) {
  const std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {1, 0, 0, 1, 1, 1};
  std::vector<float> c(4, -7.0f);
  Sgemm(false, false, 2, 2, 3, a.data(), 3, b.data(), 2, 0.0f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{4, 5, 10, 11}));
  // beta 1 accumulates: C += A·B.
  Sgemm(false, false, 2, 2, 3, a.data(), 3, b.data(), 2, 1.0f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{8, 10, 20, 22}));
  // Aᵀ·A (3 x 3) with A stored 2 x 3: trans_a.
  std::vector<float> ata(9);
  Sgemm(true, false, 3, 3, 2, a.data(), 3, a.data(), 3, 0.0f, ata.data(), 3);
  EXPECT_EQ(ata, (std::vector<float>{17, 22, 27, 22, 29, 36, 27, 36, 45}));
  // A·Aᵀ (2 x 2): trans_b.
  std::vector<float> aat(4);
  Sgemm(false, true, 2, 2, 3, a.data(), 3, a.data(), 3, 0.0f, aat.data(), 2);
  EXPECT_EQ(aat, (std::vector<float>{14, 32, 32, 77}));
  // k = 0: an empty sum, so beta 0 writes zeros.
  Sgemm(false, false, 2, 2, 0, a.data(), 1, b.data(), 2, 0.0f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{0, 0, 0, 0}));
}

struct Grads {
  torch::Tensor y, gx, gw, gb;
};

// y = Linear(x, w, b) and the gradients of sum(y * up), up a fixed, uneven
// upstream gradient.
Grads ForwardBackward(const torch::Tensor& x0, const torch::Tensor& w0, const torch::Tensor& b0,
                      bool torch_ref, bool stacked = false) {
  torch::Tensor x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_(),
                b = b0.clone().requires_grad_();
  torch::Tensor y =
      torch_ref ? torch::linear(x, w, b) : (stacked ? StackedLinear(x, w, b) : Linear(x, w, b));
  // The same per-member gradient for each of a stacked layer's members.
  const int64_t rows = y.size(-2), cols = y.size(-1);
  torch::Tensor up = torch::arange(rows * cols, torch::kFloat32).reshape({rows, cols}).sin();
  (y * up).sum().backward();
  return {y.detach(), x.grad(), w.grad(), b.grad()};
}

TEST(LinearTest, MatchesTorchLinearAndItsGradients) {
  torch::manual_seed(3);
  const torch::Tensor x = torch::randn({37, 29}), w = torch::randn({11, 29}),
                      b = torch::randn({11});
  const Grads ours = ForwardBackward(x, w, b, false), ref = ForwardBackward(x, w, b, true);
  EXPECT_TRUE(torch::allclose(ours.y, ref.y, 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(ours.gx, ref.gx, 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(ours.gw, ref.gw, 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(ours.gb, ref.gb, 1e-5, 1e-5));
  // Inputs with more dimensions keep them, as torch::linear does.
  const torch::Tensor x3 = torch::randn({2, 5, 29});
  EXPECT_EQ(Linear(x3, w, b).sizes(), (std::vector<int64_t>{2, 5, 11}));
  EXPECT_THROW(Linear(torch::randn({3, 28}), w, b), c10::Error);
}

// Member k of a stacked layer gets exactly the bits the same layer gets
// alone, forward and backward, on one thread and on two.
TEST(LinearTest, StackedMembersEqualLayersAloneToTheBit) {
  torch::manual_seed(5);
  const int64_t members = 3;
  const torch::Tensor x = torch::randn({members, 64, 50}), w = torch::randn({members, 17, 50}),
                      b = torch::randn({members, 1, 17});
  const int before = torch::get_num_threads();
  for (int threads : {1, 2}) {
    torch::set_num_threads(threads);
    const Grads stacked = ForwardBackward(x, w, b, false, /*stacked=*/true);
    for (int64_t k = 0; k < members; ++k) {
      const Grads alone = ForwardBackward(x[k], w[k], b[k][0], false);
      EXPECT_TRUE(torch::equal(stacked.y[k], alone.y)) << "threads " << threads << " k " << k;
      EXPECT_TRUE(torch::equal(stacked.gx[k], alone.gx)) << "threads " << threads << " k " << k;
      EXPECT_TRUE(torch::equal(stacked.gw[k], alone.gw)) << "threads " << threads << " k " << k;
      EXPECT_TRUE(torch::equal(stacked.gb[k][0], alone.gb)) << "threads " << threads << " k " << k;
    }
  }
  torch::set_num_threads(before);
}

}  // namespace
}  // namespace memaudit::engine
