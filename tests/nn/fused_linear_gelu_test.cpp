// nn::functional::linear_gelu on the CPU: the composite path equals gelu(linear(...)) bit for bit,
// and the fused path's autograd wiring (driven here by float64 CPU hooks) matches the composite's
// gradients, passes gradcheck and falls back to the composite for double backward.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numbers>
#include <random>
#include <vector>

#include "dispatch/registry.h"
#include "kiln/autograd.h"
#include "kiln/kiln.h"
#include "kiln/nn/functional/fused.h"

namespace kiln {
namespace {

namespace F = kiln::nn::functional;

Tensor rand_t(std::vector<int64_t> shape, uint64_t seed, DType dt = kFloat64) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(-1.5, 1.5);
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) x = u(g);
  return from_vector(v).reshape(shape).to(dt);
}

bool bit_equal(const Tensor& a, const Tensor& b) {
  Tensor x = a.contiguous(), y = b.contiguous();
  return x.sizes() == y.sizes() && x.dtype() == y.dtype() &&
         std::memcmp(x.data_ptr(), y.data_ptr(), static_cast<size_t>(x.nbytes())) == 0;
}

double max_diff(const Tensor& a, const Tensor& b) {
  return (a.to(kFloat64) - b.to(kFloat64)).abs().max().item<double>();
}

// Float64 CPU hooks standing in for the GPU backend, written from the formulas of Note [Fused
// linear+GELU] with the derivative of the tanh approximation spelled out here.
int g_forward_calls = 0, g_grad_pre_calls = 0, g_weight_grad_calls = 0;
bool g_bias_in_grad_pre = false;  // whether grad_pre sets the bias gradient
Tensor gelu_tanh(const Tensor& p) {
  const double c = std::sqrt(2 / std::numbers::pi);
  return p * 0.5 * (kiln::tanh((p + p * p * p * 0.044715) * c) + 1);
}
Tensor dgelu_tanh(const Tensor& p) {
  const double c = std::sqrt(2 / std::numbers::pi);
  Tensor t = kiln::tanh((p + p * p * p * 0.044715) * c);
  return (t + 1) * 0.5 + p * 0.5 * (1 - t * t) * c * (p * p * (3 * 0.044715) + 1);
}
struct CpuHooks {
  detail::LinearGeluHooks saved;
  CpuHooks() {
    (void)detail::kernel_registry();  // started first: its start-up sets the GPU hooks
    saved = detail::linear_gelu_hooks();
    auto& h = detail::linear_gelu_hooks();
    g_forward_calls = g_grad_pre_calls = g_weight_grad_calls = 0;
    h.accepts = [](const Tensor& x, const Tensor&, const Tensor&) {
      return x.device().type == kCPU && x.dtype() == kFloat64;
    };
    h.forward = [](const Tensor& x2, const Tensor& w, const Tensor& b, Tensor* pre) {
      ++g_forward_calls;
      Tensor p = x2.mm(w.t()) + b;
      if (pre) *pre = p;
      return gelu_tanh(p);
    };
    h.grad_pre = [](const Tensor& g, const Tensor& p, Tensor* gb) {
      ++g_grad_pre_calls;
      Tensor gp = (g * dgelu_tanh(p)).contiguous();
      if (gb && g_bias_in_grad_pre) *gb = gp.sum(0);
      return gp;
    };
    h.weight_grad = [](const Tensor& gp, const Tensor& x2, Tensor* gb) {
      ++g_weight_grad_calls;
      if (gb) *gb = gp.sum(0);
      return gp.t().mm(x2);
    };
  }
  ~CpuHooks() { detail::linear_gelu_hooks() = saved; }
};

TEST(FusedLinearGeluCpu, CompositePathEqualsGeluOfLinear) {
  for (DType dt : {kFloat32, kFloat64}) {
    Tensor x = rand_t({3, 5, 7}, 1, dt), w = rand_t({4, 7}, 2, dt), b = rand_t({4}, 3, dt);
    for (const char* ap : {"tanh", "none"}) {
      EXPECT_TRUE(bit_equal(F::linear_gelu(x, w, b, ap), F::gelu(linear(x, w, b), ap))) << ap;
      EXPECT_TRUE(bit_equal(F::linear_gelu(x, w, {}, ap), F::gelu(linear(x, w), ap))) << ap;
    }
    Tensor x1 = rand_t({7}, 4, dt);  // 1-D input
    EXPECT_TRUE(bit_equal(F::linear_gelu(x1, w, b), F::gelu(linear(x1, w, b), "tanh")));
  }
  EXPECT_THROW(F::linear_gelu(rand_t({2, 7}, 5), rand_t({4, 7}, 6), rand_t({4}, 7), "erf"), Error);
  EXPECT_THROW(F::linear_gelu(rand_t({2, 6}, 5), rand_t({4, 7}, 6), rand_t({4}, 7)), Error);
}

TEST(FusedLinearGeluCpu, CompositeGradcheck) {
  Tensor x = rand_t({2, 3, 5}, 11).requires_grad_(), w = rand_t({4, 5}, 12).requires_grad_(),
         b = rand_t({4}, 13).requires_grad_();
  for (const char* ap : {"tanh", "none"}) {
    autograd::Func f = [&](const autograd::variable_list& v) {
      return F::linear_gelu(v[0], v[1], v[2], ap);
    };
    EXPECT_TRUE(autograd::gradcheck(f, {x, w, b})) << ap;
  }
}

// The fused path (LinearGeluFn) with float64 CPU hooks: same values and gradients as the
// composite (to rounding), only the hooks' work in the forward and backward passes.
TEST(FusedLinearGeluCpu, FusedPathMatchesComposite) {
  CpuHooks hooks;
  Tensor x0 = rand_t({3, 4, 9}, 21), w0 = rand_t({6, 9}, 22), b0 = rand_t({6}, 23);
  Tensor gy = rand_t({3, 4, 6}, 24);
  for (int variant = 0; variant < 16; ++variant) {
    const int mask = variant % 8;  // which of x, w, b require grad
    if (mask == 0) continue;
    g_bias_in_grad_pre = variant >= 8;  // the bias gradient from grad_pre, or after it
    SCOPED_TRACE(variant);
    auto run = [&](bool fused) {
      Tensor x = x0.clone().requires_grad_(mask & 1), w = w0.clone().requires_grad_(mask & 2),
             b = b0.clone().requires_grad_(mask & 4);
      Tensor y = fused ? F::linear_gelu(x, w, b) : F::gelu(linear(x, w, b), "tanh");
      y.backward(gy);
      return std::vector<Tensor>{y.detach(), x.grad(), w.grad(), b.grad()};
    };
    g_forward_calls = g_grad_pre_calls = g_weight_grad_calls = 0;
    auto f = run(true), r = run(false);
    EXPECT_EQ(g_forward_calls, 1);
    EXPECT_EQ(g_grad_pre_calls, 1);
    EXPECT_EQ(g_weight_grad_calls, (mask & 2) ? 1 : 0);
    EXPECT_LT(max_diff(f[0], r[0]), 1e-13);
    for (int i = 0; i < 3; ++i) {
      ASSERT_EQ(f[i + 1].defined(), bool(mask & (1 << i))) << i;
      if (f[i + 1].defined()) {
        EXPECT_LT(max_diff(f[i + 1], r[i + 1]), 1e-12) << i;
      }
    }
  }
  g_bias_in_grad_pre = false;
  // No gradient needed: the forward hook alone, no saved pre-activation.
  g_forward_calls = g_grad_pre_calls = 0;
  Tensor y = F::linear_gelu(x0, w0, b0);
  EXPECT_EQ(g_forward_calls, 1);
  EXPECT_FALSE(y.requires_grad());
  EXPECT_LT(max_diff(y, F::gelu(linear(x0, w0, b0), "tanh")), 1e-13);
  // Not for the fused path: "none", no bias, float32.
  g_forward_calls = 0;
  F::linear_gelu(x0, w0, b0, "none");
  F::linear_gelu(x0, w0);
  F::linear_gelu(x0.to(kFloat32), w0.to(kFloat32), b0.to(kFloat32));
  EXPECT_EQ(g_forward_calls, 0);
}

TEST(FusedLinearGeluCpu, FusedPathGradcheckAndDoubleBackward) {
  CpuHooks hooks;
  Tensor x = rand_t({5, 3}, 31).requires_grad_(), w = rand_t({4, 3}, 32).requires_grad_(),
         b = rand_t({4}, 33).requires_grad_();
  autograd::Func f = [](const autograd::variable_list& v) {
    return F::linear_gelu(v[0], v[1], v[2]);
  };
  EXPECT_TRUE(autograd::gradcheck(f, {x, w, b}));
  EXPECT_TRUE(autograd::gradgradcheck(f, {x, w, b}));
  EXPECT_GT(g_forward_calls, 0);
  EXPECT_GT(g_grad_pre_calls, 0);
  // create_graph takes the composite's backward (the hooks' kernels are not differentiable).
  g_grad_pre_calls = 0;
  Tensor y = F::linear_gelu(x, w, b);
  autograd::variable_list g = autograd::grad({y.sum()}, {x, w, b}, {}, true, true);
  EXPECT_EQ(g_grad_pre_calls, 0);
  EXPECT_TRUE(g[0].requires_grad());
  Tensor yr = F::gelu(linear(x, w, b), "tanh");
  autograd::variable_list gr = autograd::grad({yr.sum()}, {x, w, b}, {}, true, true);
  for (int i = 0; i < 3; ++i) EXPECT_LT(max_diff(g[i], gr[i]), 1e-13) << i;
}

}  // namespace
}  // namespace kiln
