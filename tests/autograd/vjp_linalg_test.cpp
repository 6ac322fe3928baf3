// The matmul vjp (src/autograd/vjp_linalg.cpp): the gradient of a transposed right operand
// (linear's weight.t()) comes out in the weight's own row-major layout, with the values of
// g^T a computed by loops, real and complex (conj), batched.
#include <gtest/gtest.h>

#include <complex>
#include <vector>

#include "kiln/kiln.h"

namespace kiln {
namespace {

using Cd = std::complex<double>;

template <class T>
std::vector<T> values(const Tensor& t) {
  Tensor c = t.contiguous();
  return std::vector<T>(c.data_ptr<T>(), c.data_ptr<T>() + c.numel());
}

std::vector<Cd> cvalues(const Tensor& t) {
  auto re = values<double>(t.real()), im = values<double>(t.imag());
  std::vector<Cd> v;
  for (size_t i = 0; i < re.size(); ++i) v.emplace_back(re[i], im[i]);
  return v;
}

TEST(VjpLinalg, TransposedWeightGradientKeepsTheWeightLayout) {
  const int64_t m = 4, k = 3, n = 5;
  Tensor x = randn({m, k}, kFloat64), w = randn({n, k}, kFloat64).requires_grad_(true);
  Tensor g = randn({m, n}, kFloat64);
  kiln::matmul(x, w.t()).backward(g);
  ASSERT_TRUE(w.grad().is_contiguous());
  auto xv = values<double>(x), gv = values<double>(g), wg = values<double>(w.grad());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < k; ++j) {
      double want = 0;  // dW[i, j] = sum_r g[r, i] x[r, j]
      for (int64_t r = 0; r < m; ++r) want += gv[r * n + i] * xv[r * k + j];
      EXPECT_NEAR(wg[i * k + j], want, 1e-12) << i << "," << j;
    }
  // The left operand's gradient is unchanged: g @ W.
  Tensor xr = x.clone().requires_grad_(true);
  kiln::matmul(xr, w.detach().t()).backward(g);
  auto wv = values<double>(w), xg = values<double>(xr.grad());
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j = 0; j < k; ++j) {
      double want = 0;
      for (int64_t i = 0; i < n; ++i) want += gv[r * n + i] * wv[i * k + j];
      EXPECT_NEAR(xg[r * k + j], want, 1e-12);
    }
}

TEST(VjpLinalg, ComplexAndBatchedTransposedOperands) {
  const int64_t b = 2, m = 3, k = 2, n = 4;
  Tensor x = randn({b, m, k}, kComplex128), w = randn({b, n, k}, kComplex128).requires_grad_(true);
  Tensor g = randn({b, m, n}, kComplex128);
  kiln::matmul(x, w.mT()).backward(g);
  ASSERT_TRUE(w.grad().is_contiguous());
  auto xv = cvalues(x), gv = cvalues(g), wg = cvalues(w.grad());
  for (int64_t p = 0; p < b; ++p)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < k; ++j) {
        Cd want =
            0;  // PyTorch's convention: dL/dW^T = x^H g, so dW[i, j] = sum_r conj(x[r, j]) g[r, i]
        for (int64_t r = 0; r < m; ++r)
          want += std::conj(xv[(p * m + r) * k + j]) * gv[(p * m + r) * n + i];
        EXPECT_NEAR(std::abs(wg[(p * n + i) * k + j] - want), 0.0, 1e-12) << p << i << j;
      }
  // Double backward through the new form.
  Tensor wd = randn({n, k}, kFloat64).requires_grad_(true);
  Tensor xd = randn({m, k}, kFloat64);
  EXPECT_TRUE(autograd::gradcheck(
      [&](const autograd::variable_list& v) { return kiln::matmul(xd, v[0].t()).pow(2).sum(); },
      {wd}));
  EXPECT_TRUE(autograd::gradgradcheck(
      [&](const autograd::variable_list& v) { return kiln::matmul(xd, v[0].t()).pow(2).sum(); },
      {wd}));
}

}  // namespace
}  // namespace kiln
