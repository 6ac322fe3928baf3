// Engine semantics against PyTorch's documented behaviour: accumulation, retain_graph,
// create_graph, inputs=, autograd::grad, grad modes, detach, dtype/broadcast handling.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/kiln.h"

namespace kiln {
namespace {

std::vector<double> vals(const Tensor& t) {
  std::vector<double> v;
  for (const Scalar& s : t.detach().tolist_flat()) v.push_back(s.to<double>());
  return v;
}

void expect_near_vec(const Tensor& t, const std::vector<double>& want, double tol = 1e-12) {
  ASSERT_TRUE(t.defined());
  auto got = vals(t);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

Tensor leaf(std::vector<double> v) {
  return kiln::from_vector(v, TensorOptions(DType::Float64)).requires_grad_();
}

TEST(AutogradEngine, SquareSumGradient) {
  Tensor x = leaf({1.0, -2.0, 3.5});
  Tensor y = (x * x).sum();
  EXPECT_TRUE(y.requires_grad());
  EXPECT_FALSE(y.is_leaf());
  EXPECT_TRUE(x.is_leaf());
  y.backward();
  expect_near_vec(x.grad(), {2.0, -4.0, 7.0});
}

TEST(AutogradEngine, GradFnNames) {
  Tensor x = leaf({1.0, 2.0});
  EXPECT_EQ((x * x).grad_fn()->name(), "MulBackward0");
  EXPECT_EQ(x.exp().grad_fn()->name(), "ExpBackward0");
  EXPECT_EQ(x.sum().grad_fn()->name(), "SumBackward0");
  EXPECT_EQ(x.unsqueeze(0).grad_fn()->name(), "UnsqueezeBackward0");
  EXPECT_EQ(x.grad_fn(), nullptr);
}

TEST(AutogradEngine, AccumulatesAcrossBackwardCalls) {
  Tensor x = leaf({0.5, 1.5});
  Tensor y = (x * x * x).sum();
  y.backward({}, true);
  y.backward();
  // d/dx x^3 = 3x^2, twice
  expect_near_vec(x.grad(), {2 * 3 * 0.25, 2 * 3 * 2.25});
}

TEST(AutogradEngine, SecondBackwardWithoutRetainGraphThrows) {
  Tensor x = leaf({0.5, 1.5});
  Tensor y = (x.exp() * x).sum();
  y.backward();
  try {
    y.backward();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("second time"), std::string::npos) << e.what();
  }
}

TEST(AutogradEngine, DiamondGraphSumsBothPaths) {
  // a = 2x; b = a*a + exp(a); db/dx = (2a + exp(a)) * 2
  Tensor x = leaf({0.3, -0.7});
  Tensor a = x * 2;
  Tensor b = (a * a + a.exp()).sum();
  b.backward();
  std::vector<double> want;
  for (double xv : {0.3, -0.7}) want.push_back((2 * 2 * xv + std::exp(2 * xv)) * 2);
  expect_near_vec(x.grad(), want);
}

TEST(AutogradEngine, ImplicitGradientOnlyForScalars) {
  Tensor x = leaf({1.0, 2.0});
  Tensor y = x * 3;
  EXPECT_THROW(y.backward(), Error);
  Tensor v = kiln::tensor({0.5, -1.0}, TensorOptions(DType::Float64));
  y.backward(v);
  expect_near_vec(x.grad(), {1.5, -3.0});
}

TEST(AutogradEngine, BackwardOnTensorNotRequiringGradThrows) {
  Tensor x = kiln::tensor({1.0, 2.0}, TensorOptions(DType::Float64));
  EXPECT_THROW(x.sum().backward(), Error);
}

TEST(AutogradEngine, RetainGradKeepsNonLeafGradient) {
  Tensor x = leaf({1.0, 2.0});
  Tensor h = x * 3;
  Tensor h2 = x * 4;
  h.retain_grad();
  EXPECT_TRUE(h.retains_grad());
  EXPECT_FALSE(h2.retains_grad());
  (h * h + h2).sum().backward();
  expect_near_vec(h.grad(), {6.0, 12.0});  // d/dh h^2 = 2h
  EXPECT_FALSE(h2.grad().defined());
  expect_near_vec(x.grad(), {2 * 3.0 * 3 + 4, 2 * 6.0 * 3 + 4});
}

TEST(AutogradEngine, CreateGraphGivesSecondDerivative) {
  Tensor x = leaf({0.5, -1.25});
  Tensor y = (x * x * x).sum();
  auto g = autograd::grad({y}, {x}, {}, std::nullopt, true);
  expect_near_vec(g[0], {3 * 0.25, 3 * 1.5625});
  EXPECT_TRUE(g[0].requires_grad());
  g[0].sum().backward();
  expect_near_vec(x.grad(), {6 * 0.5, 6 * -1.25});
}

TEST(AutogradEngine, ThirdDerivativeOfSin) {
  Tensor x = leaf({0.4});
  Tensor y = x.sin();
  Tensor d1 = autograd::grad({y}, {x}, {}, true, true)[0];
  Tensor d2 = autograd::grad({d1}, {x}, {}, true, true)[0];
  Tensor d3 = autograd::grad({d2}, {x}, {}, true, true)[0];
  expect_near_vec(d1, {std::cos(0.4)});
  expect_near_vec(d2, {-std::sin(0.4)});
  expect_near_vec(d3, {-std::cos(0.4)});
}

TEST(AutogradEngine, GradDoesNotTouchDotGrad) {
  Tensor x = leaf({1.0, 2.0});
  Tensor y = (x * x).sum();
  auto g = autograd::grad({y}, {x});
  expect_near_vec(g[0], {2.0, 4.0});
  EXPECT_FALSE(x.grad().defined());
}

TEST(AutogradEngine, GradOfUnusedInput) {
  Tensor x = leaf({1.0}), z = leaf({2.0});
  Tensor y = (x * 2).sum();
  EXPECT_THROW(autograd::grad({y}, {x, z}, {}, true), Error);
  auto g = autograd::grad({y}, {x, z}, {}, true, false, true);
  expect_near_vec(g[0], {2.0});
  EXPECT_FALSE(g[1].defined());
}

TEST(AutogradEngine, GradWithRespectToNonLeaf) {
  Tensor x = leaf({1.5, 2.0});
  Tensor h = x * x;
  Tensor y = (h.sin()).sum();
  auto g = autograd::grad({y}, {h});
  expect_near_vec(g[0], {std::cos(2.25), std::cos(4.0)});
}

TEST(AutogradEngine, BackwardInputsAccumulatesOnlyThere) {
  Tensor a = leaf({1.0, 2.0}), b = leaf({3.0, 4.0});
  Tensor y = (a * b).sum();
  y.backward({}, std::nullopt, false, {a});
  expect_near_vec(a.grad(), {3.0, 4.0});
  EXPECT_FALSE(b.grad().defined());
}

TEST(AutogradEngine, BroadcastGradientsAreSummed) {
  Tensor a = kiln::tensor({1.0, 2.0, 3.0}, TensorOptions(DType::Float64)).view({3, 1});
  a.requires_grad_();
  Tensor b = leaf({10.0, 20.0, 30.0, 40.0});
  (a * b).sum().backward();
  // d/da_i sum_j a_i b_j = sum_j b_j; d/db_j = sum_i a_i
  expect_near_vec(a.grad(), {100.0, 100.0, 100.0});
  EXPECT_EQ(a.grad().sizes(), IntArrayRef({3, 1}));
  expect_near_vec(b.grad(), {6.0, 6.0, 6.0, 6.0});
}

TEST(AutogradEngine, MixedDtypesCastGradientToInputDtype) {
  Tensor x = kiln::tensor({1.0, 2.0}, TensorOptions(DType::Float32)).requires_grad_();
  Tensor w = leaf({3.0, 5.0});
  (x * w).sum().backward();
  EXPECT_EQ(x.grad().dtype(), DType::Float32);
  EXPECT_EQ(w.grad().dtype(), DType::Float64);
  expect_near_vec(x.grad(), {3.0, 5.0});
  Tensor y = x.to(DType::Float64) * 2;
  EXPECT_TRUE(y.requires_grad());
}

TEST(AutogradEngine, LeafGradHasTheLeafsLayout) {
  // The gradient reaches w through a transpose; PyTorch still gives w.grad w's strides.
  Tensor w = kiln::zeros({2, 3}, TensorOptions(DType::Float64)).requires_grad_();
  Tensor x = kiln::ones({4, 3}, TensorOptions(DType::Float64));
  kiln::matmul(x, w.t()).sum().backward();
  EXPECT_EQ(w.grad().strides(), w.strides());
  expect_near_vec(w.grad(), {4, 4, 4, 4, 4, 4});
}

TEST(AutogradEngine, NoGradGuards) {
  Tensor x = leaf({1.0});
  {
    NoGradGuard ng;
    EXPECT_FALSE(is_grad_enabled());
    EXPECT_FALSE((x * 2).requires_grad());
    {
      EnableGradGuard eg;
      EXPECT_TRUE((x * 2).requires_grad());
    }
    {
      AutoGradMode m(true);
      EXPECT_TRUE((x * 2).requires_grad());
    }
  }
  EXPECT_TRUE(is_grad_enabled());
  set_grad_enabled(false);
  EXPECT_FALSE((x * 2).requires_grad());
  set_grad_enabled(true);
  {
    InferenceMode im;
    EXPECT_TRUE(InferenceMode::is_enabled());
    EXPECT_FALSE(is_grad_enabled());
    EXPECT_FALSE((x * 2).requires_grad());
  }
  EXPECT_FALSE(InferenceMode::is_enabled());
  EXPECT_TRUE((x * 2).requires_grad());
}

TEST(AutogradEngine, DetachStopsGradient) {
  Tensor x = leaf({2.0});
  Tensor y = x * x;
  Tensor d = y.detach();
  EXPECT_FALSE(d.requires_grad());
  (x * d).sum().backward();
  expect_near_vec(x.grad(), {4.0});  // d treated as the constant 4
  Tensor z = x * 3;
  z.detach_();
  EXPECT_FALSE(z.requires_grad());
  EXPECT_TRUE(z.is_leaf());
}

TEST(AutogradEngine, RequiresGradOnlyForFloatingAndComplex) {
  Tensor i = kiln::tensor({1, 2}, TensorOptions(DType::Int64));
  EXPECT_THROW(i.requires_grad_(), Error);
  Tensor x = leaf({1.0});
  EXPECT_THROW((x * 2).requires_grad_(false), Error);
}

TEST(AutogradEngine, ComplexAbsSquaredFollowsConjugateConvention) {
  // PyTorch: z = 1+2j; (z.abs()**2).backward() gives z.grad == 2z = 2+4j.
  Tensor z = kiln::tensor({1.0}, TensorOptions(DType::Float64)).to(DType::Complex128);
  z = (z + Scalar(complex<double>(0, 2))).detach().requires_grad_();
  Tensor y = kiln::square(z.abs()).sum();
  y.backward();
  auto g = z.grad().tolist_flat()[0].to<complex<double>>();
  EXPECT_NEAR(g.real(), 2.0, 1e-12);
  EXPECT_NEAR(g.imag(), 4.0, 1e-12);
  // and for the holomorphic z*z, with real loss Re(z^2): grad = conj(2z) = 2-4j
  z.mutable_grad() = Tensor();
  (z * z).real().sum().backward();
  g = z.grad().tolist_flat()[0].to<complex<double>>();
  EXPECT_NEAR(g.real(), 2.0, 1e-12);
  EXPECT_NEAR(g.imag(), -4.0, 1e-12);
}

TEST(AutogradEngine, MultiOutputPrimitive) {
  // var_mean over all elements: d var/dx_i = 2 (x_i - m) / (n - 1); d mean/dx_i = 1/n
  Tensor x = leaf({1.0, 4.0, 2.0, 7.0});
  auto [v, m] = kiln::var_mean(x, {0}, 1, false);
  (v + m * 3).backward();
  const double mean = 3.5;
  std::vector<double> want;
  for (double xv : {1.0, 4.0, 2.0, 7.0}) want.push_back(2 * (xv - mean) / 3 + 3.0 / 4);
  expect_near_vec(x.grad(), want);
}

}  // namespace
}  // namespace kiln
