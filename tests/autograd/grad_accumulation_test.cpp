// AccumulateGrad without copies: a gradient no one else holds becomes the leaf's .grad as it is
// (Note [Stealing the gradient]), never an alias of a tensor the user can see; gradients cast to
// the leaf's dtype arrive in the leaf's layout (Note [Gradient casts in the leaf's layout]).
#include <gtest/gtest.h>

#include <cstdint>

#include "kiln/kiln.h"

namespace kiln {
namespace {

// Reference values of a float64 tensor, element (i, j) of a 2-D tensor as a double.
double at(const Tensor& t, int64_t i, int64_t j) { return t.detach()[i][j].item<double>(); }

// A [r, c] tensor with element (i, j) = base + 0.25 * (i * c + j) - 1, as dtype.
Tensor ramp(int64_t r, int64_t c, double base, DType dtype) {
  std::vector<double> v;
  for (int64_t k = 0; k < r * c; ++k) v.push_back(base + 0.25 * static_cast<double>(k) - 1.0);
  return kiln::from_vector(v, TensorOptions(DType::Float64)).reshape({r, c}).to(dtype);
}

TEST(GradAccumulation, FreshGradientBecomesTheGradWithoutACopy) {
  Tensor w = ramp(3, 4, 0.5, DType::Float64).requires_grad_();
  Tensor c = ramp(3, 4, 2.0, DType::Float64);
  // The hook sees the gradient on its way into AccumulateGrad; it keeps only the address.
  const void* seen = nullptr;
  w.register_hook([&](const Tensor& g) {
    seen = g.data_ptr();
    return Tensor();
  });
  (w * w * c).sum().backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().data_ptr(), seen);  // stolen: the engine's buffer is the .grad
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j)
      EXPECT_DOUBLE_EQ(at(w.grad(), i, j), 2.0 * at(w, i, j) * at(c, i, j));
  // A second backward accumulates into the same buffer, in place (grad mode off).
  Tensor first = w.grad();
  (w * c).sum().backward();
  EXPECT_EQ(w.grad().data_ptr(), first.data_ptr());
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j)
      EXPECT_DOUBLE_EQ(at(w.grad(), i, j), 2.0 * at(w, i, j) * at(c, i, j) + at(c, i, j));
}

TEST(GradAccumulation, UserGradientIsNeverAliased) {
  // backward(G) on the leaf itself and through ops whose vjp passes G through unchanged: the
  // .grad must be a copy, since the caller still holds G.
  Tensor x = ramp(2, 3, 1.0, DType::Float64).requires_grad_();
  Tensor g = ramp(2, 3, -3.0, DType::Float64);
  Tensor g_ref = g.clone();
  x.backward(g);
  ASSERT_TRUE(x.grad().defined());
  EXPECT_NE(x.grad().data_ptr(), g.data_ptr());
  Tensor y = ramp(2, 3, 0.0, DType::Float64).requires_grad_();
  (y * 1.0).backward(g);
  (y + 0.0).backward(g);
  EXPECT_NE(y.grad().data_ptr(), g.data_ptr());
  g.mul_(10.0);  // must not reach either .grad
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j) {
      EXPECT_DOUBLE_EQ(at(x.grad(), i, j), at(g_ref, i, j));
      EXPECT_DOUBLE_EQ(at(y.grad(), i, j), 2.0 * at(g_ref, i, j));
    }
}

TEST(GradAccumulation, HookResultHeldByTheUserIsCopied) {
  Tensor x = ramp(2, 2, 1.0, DType::Float64).requires_grad_();
  Tensor held = ramp(2, 2, 5.0, DType::Float64);
  x.register_hook([held](const Tensor&) { return held; });
  (x * x).sum().backward();
  EXPECT_NE(x.grad().data_ptr(), held.data_ptr());
  held.zero_();
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 2; ++j)
      EXPECT_DOUBLE_EQ(at(x.grad(), i, j), 5.0 + 0.25 * (2 * i + j) - 1);
}

TEST(GradAccumulation, ViewIntoALargerBufferIsCopied) {
  // The gradient of a slice of a split is a view into the split's full gradient buffer: it must
  // not become the .grad (it would keep the whole buffer alive and share its storage).
  Tensor a = ramp(2, 3, 1.0, DType::Float64).requires_grad_();
  Tensor b = ramp(2, 3, 2.0, DType::Float64).requires_grad_();
  Tensor cat = kiln::cat({a, b}, 0);
  Tensor c = ramp(4, 3, -1.0, DType::Float64);
  (cat * c).sum().backward();
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j) {
      EXPECT_DOUBLE_EQ(at(a.grad(), i, j), at(c, i, j));
      EXPECT_DOUBLE_EQ(at(b.grad(), i, j), at(c, i + 2, j));
    }
  // Whatever the cat backward returns, the two grads do not overlap.
  const auto* pa = static_cast<const char*>(a.grad().data_ptr());
  const auto* pb = static_cast<const char*>(b.grad().data_ptr());
  EXPECT_TRUE(pa + 6 * sizeof(double) <= pb || pb + 6 * sizeof(double) <= pa);
  Tensor ga = a.grad();
  ga.zero_();
  EXPECT_DOUBLE_EQ(at(b.grad(), 1, 2), at(c, 3, 2));
}

TEST(GradAccumulation, CastGradientArrivesInTheLeafLayout) {
  // The float32 copy of a float64 weight used transposed (a linear's weight under autocast):
  // its float32 gradient arrives as a transposed view and is cast into the leaf's layout.
  Tensor w = ramp(3, 4, 0.5, DType::Float64).requires_grad_();
  Tensor c = ramp(4, 3, 1.5, DType::Float32);
  (w.to(DType::Float32).t() * c).sum().backward();
  Tensor g = w.grad();
  ASSERT_TRUE(g.defined());
  EXPECT_EQ(g.dtype(), DType::Float64);
  EXPECT_TRUE(g.is_contiguous());
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) EXPECT_DOUBLE_EQ(at(g, i, j), at(c.to(DType::Float64), j, i));
}

TEST(GradAccumulation, CastGradientOfATransposedLeafKeepsItsStrides) {
  // A leaf that is itself a dense transposed layout: .grad takes its strides (PyTorch's layout
  // contract), also when the gradient is produced by a cast.
  Tensor base = ramp(4, 3, 0.0, DType::Float64);
  Tensor w = base.t().detach().requires_grad_();  // [3, 4], strides (1, 3)
  ASSERT_FALSE(w.is_contiguous());
  Tensor c = ramp(3, 4, 2.0, DType::Float32);
  (w.to(DType::Float32) * c).sum().backward();
  Tensor g = w.grad();
  ASSERT_TRUE(g.defined());
  EXPECT_EQ(g.strides(), w.strides());
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) EXPECT_DOUBLE_EQ(at(g, i, j), at(c.to(DType::Float64), i, j));
}

TEST(GradAccumulation, TiedWeightSumsGradientsOfTwoLayouts) {
  // A weight used directly and, cast and transposed, a second time (GPT-2's tied embedding):
  // the two gradients sum into one .grad.
  Tensor w = ramp(3, 4, 0.5, DType::Float64).requires_grad_();
  Tensor c1 = ramp(3, 4, -2.0, DType::Float64);
  Tensor c2 = ramp(4, 3, 3.0, DType::Float32);
  ((w * c1).sum() + (w.to(DType::Float32).t() * c2).sum()).backward();
  Tensor g = w.grad();
  ASSERT_TRUE(g.defined());
  EXPECT_TRUE(g.is_contiguous());
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j)
      EXPECT_DOUBLE_EQ(at(g, i, j), at(c1, i, j) + at(c2.to(DType::Float64), j, i));
}

TEST(GradAccumulation, CreateGraphKeepsTheCastRecorded) {
  // With create_graph the cast gradient stays differentiable: d/dw of sum(dL/dw * w) where
  // L = sum(c * w^2 as float32) is 4 c w (in float32 precision, exact for these values).
  Tensor w = ramp(2, 2, 1.0, DType::Float64).requires_grad_();
  Tensor c = ramp(2, 2, 0.5, DType::Float32);
  Tensor wf = w.to(DType::Float32);
  Tensor gw = autograd::grad({(wf * wf * c).sum()}, {w}, {}, std::nullopt, true)[0];
  ASSERT_TRUE(gw.requires_grad());
  Tensor h = autograd::grad({(gw * w).sum()}, {w})[0];
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 2; ++j)
      EXPECT_DOUBLE_EQ(at(h, i, j), 4.0 * at(c.to(DType::Float64), i, j) * at(w, i, j));
}

}  // namespace
}  // namespace kiln
