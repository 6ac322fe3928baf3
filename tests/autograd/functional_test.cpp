// The functional API (vjp, jvp, jacobian, hessian, hvp) against derivatives computed by hand in
// double precision, and gradcheck/gradgradcheck on compositions of ops (real and complex).
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/kiln.h"

namespace kiln {
namespace {

using autograd::variable_list;

std::vector<double> vals(const Tensor& t) {
  std::vector<double> v;
  for (const Scalar& s : t.detach().tolist_flat()) v.push_back(s.to<double>());
  return v;
}

void expect_near_vec(const Tensor& t, const std::vector<double>& want, double tol = 1e-10) {
  ASSERT_TRUE(t.defined());
  auto got = vals(t);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

Tensor c64(std::vector<double> v) { return kiln::from_vector(v, TensorOptions(DType::Float64)); }

// f(x, y) = sum(x^2 * y) + sum(sin(x))
Tensor f2(const variable_list& in) { return (in[0] * in[0] * in[1]).sum() + in[0].sin().sum(); }

TEST(AutogradFunctional, Vjp) {
  Tensor x = c64({0.5, -1.0}), y = c64({2.0, 3.0});
  auto [out, g] = autograd::vjp(f2, {x, y});
  EXPECT_NEAR(vals(out)[0], 0.25 * 2 + 1.0 * 3 + std::sin(0.5) + std::sin(-1.0), 1e-12);
  expect_near_vec(g[0], {2 * 0.5 * 2 + std::cos(0.5), 2 * -1.0 * 3 + std::cos(-1.0)});
  expect_near_vec(g[1], {0.25, 1.0});
  EXPECT_FALSE(g[0].requires_grad());
  EXPECT_FALSE(x.requires_grad());  // inputs are not modified
}

TEST(AutogradFunctional, JvpEqualsDirectionalDerivative) {
  Tensor x = c64({0.5, -1.0}), y = c64({2.0, 3.0});
  Tensor vx = c64({1.0, 0.5}), vy = c64({-1.0, 2.0});
  auto [out, jv] = autograd::jvp(f2, {x, y}, {vx, vy});
  // df = sum((2 x y + cos x) vx + x^2 vy)
  double want = 0;
  double xs[2] = {0.5, -1.0}, ys[2] = {2.0, 3.0}, vxs[2] = {1.0, 0.5}, vys[2] = {-1.0, 2.0};
  for (int i = 0; i < 2; ++i)
    want += (2 * xs[i] * ys[i] + std::cos(xs[i])) * vxs[i] + xs[i] * xs[i] * vys[i];
  EXPECT_NEAR(vals(jv)[0], want, 1e-10);
}

TEST(AutogradFunctional, JacobianOfElementwiseAndMatmul) {
  Tensor x = c64({0.3, 0.7, -0.2});
  Tensor j = autograd::jacobian([](const Tensor& t) { return t.exp() * 2; }, x);
  ASSERT_EQ(j.sizes(), IntArrayRef({3, 3}));
  std::vector<double> want(9, 0.0);
  for (int i = 0; i < 3; ++i) want[i * 3 + i] = 2 * std::exp(vals(x)[i]);
  expect_near_vec(j, want);
  // J of A @ x is A
  Tensor a = c64({1, 2, 3, 4, 5, 6}).view({2, 3});
  Tensor ja = autograd::jacobian([&a](const Tensor& t) { return kiln::matmul(a, t); }, x);
  expect_near_vec(ja, {1, 2, 3, 4, 5, 6});
}

TEST(AutogradFunctional, HessianAndHvp) {
  // f = sum(x^3) + x0 * x1: H = diag(6x) + [[0,1],[1,0]]
  auto f = [](const Tensor& t) { return (t * t * t).sum() + t.select(0, 0) * t.select(0, 1); };
  Tensor x = c64({0.5, -2.0});
  Tensor h = autograd::hessian(f, x);
  expect_near_vec(h, {3.0, 1.0, 1.0, -12.0});
  Tensor v = c64({1.0, 2.0});
  auto [out, hv] = autograd::hvp([&f](const variable_list& in) { return f(in[0]); }, {x}, {v});
  expect_near_vec(hv[0], {3.0 * 1 + 1 * 2, 1 * 1 - 12.0 * 2});
}

TEST(AutogradFunctional, GradcheckCompositions) {
  Tensor a = c64({0.3, 0.7, -0.2, 1.1, 0.4, -0.9}).view({2, 3}).requires_grad_();
  Tensor b = c64({0.5, -0.6, 0.8}).requires_grad_();
  auto f = [](const variable_list& in) {
    Tensor t = (in[0] * in[1]).tanh() + in[0].t().matmul(in[0]).sum(0).unsqueeze(0).narrow(1, 0, 3);
    return (t.sigmoid() * in[1].exp()).mean(1);
  };
  EXPECT_TRUE(autograd::gradcheck(autograd::Func(f), {a, b}));
  EXPECT_TRUE(autograd::gradgradcheck(autograd::Func(f), {a, b}));
}

TEST(AutogradFunctional, GradcheckComplex) {
  Tensor z = (c64({0.3, -0.7, 1.2}).to(DType::Complex128) +
              c64({0.5, 0.2, -0.4}).to(DType::Complex128) * Scalar(complex<double>(0, 1)))
                 .requires_grad_();
  auto f = [](const variable_list& in) {
    Tensor w = in[0] * in[0].exp() + in[0].conj_physical() * 2;  // non-holomorphic
    return (w * in[0].abs()).sum();
  };
  EXPECT_TRUE(autograd::gradcheck(autograd::Func(f), {z}));
  EXPECT_TRUE(autograd::gradgradcheck(autograd::Func(f), {z}));
  auto g = [](const variable_list& in) { return kiln::square(in[0].abs()).sum(); };  // real out
  EXPECT_TRUE(autograd::gradcheck(autograd::Func(g), {z}));
}

TEST(AutogradFunctional, GradcheckRejectsSinglePrecision) {
  Tensor x = kiln::ones({2}, TensorOptions(DType::Float32)).requires_grad_();
  EXPECT_THROW(
      autograd::gradcheck(autograd::Func([](const variable_list& in) { return in[0] * 2; }), {x}),
      Error);
}

}  // namespace
}  // namespace kiln
