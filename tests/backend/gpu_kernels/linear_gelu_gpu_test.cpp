// nn::functional::linear_gelu on the GPU (cuBLASLt GELU+bias epilogue, the gelu' kernel, the BGRAD
// epilogue): output and the three gradients against the float64 composite on the CPU for float32,
// bfloat16 and float16, odd and GPT-2 MLP shapes, and under bfloat16 autocast. Skip without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "backend/gpu_kernels/gpu_test_util.h"
#include "dispatch/registry.h"
#include "kiln/amp.h"
#include "kiln/nn/functional/fused.h"

namespace kiln {
namespace {

using namespace gpu_test;
namespace F = kiln::nn::functional;

// The kernel registry's start-up sets the GPU hooks.
#define KILN_NEED_FUSED()          \
  KILN_NEED_GPU();                 \
  (void)detail::kernel_registry(); \
  if (detail::linear_gelu_hooks().accepts == nullptr) GTEST_SKIP() << "no GPU linear_gelu hooks"

// Tolerance relative to the magnitude scale of each element (sums of |terms|). Each result goes
// through about three roundings to the operand dtype (the saved pre-activation, gelu'(p) * g, the
// GEMM output) with float32 accumulation, so 3 ulps of the dtype (eps = 2^-10 for float16, 2^-7
// for bfloat16); float32 is limited by the GELU epilogue and float32 accumulation (as the
// epilogue test: 2e-5), with 5e-5 for the gradients.
double tol(DType d) { return d == kFloat16 ? 3 * 9.77e-4 : d == kBFloat16 ? 3 * 7.82e-3 : 5e-5; }

// |got - want| <= t * (scale + 1e-2) elementwise; reports the first few failures.
void expect_close(const Tensor& got, const Tensor& want, const Tensor& scale, double t,
                  const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(got.sizes(), want.sizes());
  std::vector<double> g = host(got), w = host(want), s = host(scale);
  int bad = 0;
  for (size_t i = 0; i < g.size() && bad < 5; ++i)
    if (!(std::abs(g[i] - w[i]) <= t * (s[i] + 1e-2))) {
      ADD_FAILURE() << "element " << i << ": got " << g[i] << ", want " << w[i] << " (scale "
                    << s[i] << ")";
      ++bad;
    }
}

struct Case {
  int64_t m, k, n;
  DType dt;       // operand dtype (float32 under autocast: the master dtype)
  bool autocast;  // run under bfloat16 autocast
  bool batched;   // input [2, m/2, k] instead of [m, k]
};

void run_case(const Case& c, uint64_t seed) {
  const std::string tag = std::string(dtype_name(c.dt)) + " [" + std::to_string(c.m) + ", " +
                          std::to_string(c.k) + "] -> " + std::to_string(c.n) +
                          (c.autocast ? " autocast" : "");
  SCOPED_TRACE(tag);
  std::vector<int64_t> xs =
      c.batched ? std::vector<int64_t>{2, c.m / 2, c.k} : std::vector<int64_t>{c.m, c.k};
  std::vector<int64_t> ys =
      c.batched ? std::vector<int64_t>{2, c.m / 2, c.n} : std::vector<int64_t>{c.m, c.n};
  Tensor x = from_vector(rand_vec(c.m * c.k, seed, -2, 2)).reshape(xs).to(c.dt).to(kGpu);
  Tensor w = from_vector(rand_vec(c.n * c.k, seed + 1, -0.2, 0.2)).reshape({c.n, c.k}).to(c.dt);
  Tensor b = from_vector(rand_vec(c.n, seed + 2, -1, 1)).to(c.dt);
  w = w.to(kGpu).requires_grad_(), b = b.to(kGpu).requires_grad_(), x.requires_grad_();
  Tensor gy = from_vector(rand_vec(c.m * c.n, seed + 3)).reshape(ys);
  const DType run_dt = c.autocast ? kBFloat16 : c.dt;
  Tensor y;
  {
    std::optional<amp::autocast> ac;
    if (c.autocast) ac.emplace(DeviceType::CUDA, kBFloat16);
    y = F::linear_gelu(x, w, b);
  }
  ASSERT_EQ(y.dtype(), run_dt);
  ASSERT_EQ(y.sizes(), IntArrayRef(ys));
  ASSERT_TRUE(y.grad_fn() && y.grad_fn()->name().find("LinearGelu") != std::string::npos)
      << "the fused path was not taken";
  y.backward(gy.to(run_dt).to(kGpu));
  ASSERT_EQ(w.grad().dtype(), c.dt);

  // float64 references from the values the GPU used (rounded to run_dt).
  auto ref = [&](const Tensor& t) { return t.detach().to(run_dt).to(kCpu).to(kFloat64); };
  Tensor x64 = ref(x).requires_grad_(), w64 = ref(w).requires_grad_(),
         b64 = ref(b).requires_grad_();
  Tensor g64 = ref(gy);
  Tensor y64 = F::gelu(linear(x64, w64, b64), "tanh");
  y64.backward(g64);
  // Scales: sums of |terms|; |gelu'| <= 1.13 on the reals.
  Tensor ax = x64.detach().abs(), aw = w64.detach().abs(), ag = g64.abs() * 1.13;
  Tensor sy = linear(ax, aw, b64.detach().abs());
  Tensor ag2 = ag.reshape({c.m, c.n}), ax2 = ax.reshape({c.m, c.k});
  const double t = tol(run_dt);
  expect_close(y, y64, sy, t, "output");
  expect_close(x.grad(), x64.grad(), ag2.mm(aw).reshape(xs), t, "grad input");
  expect_close(w.grad(), w64.grad(), ag2.t().mm(ax2), t, "grad weight");
  expect_close(b.grad(), b64.grad(), ag2.sum(0), t, "grad bias");
}

TEST(LinearGeluGpu, OddShapesAllDtypes) {
  KILN_NEED_FUSED();
  uint64_t seed = 100;
  for (DType dt : {kFloat32, kBFloat16, kFloat16}) {
    run_case({37, 65, 130, dt, false, false}, seed += 10);
    run_case({38, 24, 40, dt, false, true}, seed += 10);
    run_case({5, 7, 3, dt, false, false}, seed += 10);
  }
}

TEST(LinearGeluGpu, Gpt2MlpShape) {
  KILN_NEED_FUSED();
  run_case({4096, 768, 3072, kBFloat16, false, true}, 7);
}

TEST(LinearGeluGpu, AutocastBf16WithFloat32Weights) {
  KILN_NEED_FUSED();
  run_case({37, 65, 130, kFloat32, true, false}, 300);
  run_case({4096, 768, 3072, kFloat32, true, true}, 301);
}

// No gradient needed: the forward alone, equal to the with-gradient forward; and the
// cases that take the composite on the GPU (approximate "none", no bias, float64).
TEST(LinearGeluGpu, NoGradAndFallbacks) {
  KILN_NEED_FUSED();
  Tensor x = from_vector(rand_vec(33 * 20, 1)).reshape({33, 20}).to(kBFloat16).to(kGpu);
  Tensor w = from_vector(rand_vec(48 * 20, 2)).reshape({48, 20}).to(kBFloat16).to(kGpu);
  Tensor b = from_vector(rand_vec(48, 3)).to(kBFloat16).to(kGpu);
  Tensor y0;
  {
    NoGradGuard ng;
    y0 = F::linear_gelu(x, w, b);
  }
  // With a gradient the epilogue also writes the pre-activation (possibly another algorithm).
  Tensor y1 = F::linear_gelu(x, w, b.clone().requires_grad_());
  Tensor scale = linear(x.abs().to(kFloat64), w.abs().to(kFloat64), b.abs().to(kFloat64));
  expect_close(y0, y1.detach(), scale, tol(kBFloat16), "no-grad forward");
  for (const char* ap : {"none", "tanh"}) {
    Tensor bb = std::string(ap) == "none" ? b : Tensor();
    Tensor got = F::linear_gelu(x, w, bb, ap), want = F::gelu(linear(x, w, bb), ap);
    EXPECT_TRUE(bit_equal(got, want)) << ap;
  }
  Tensor x64 = x.to(kFloat64), w64 = w.to(kFloat64), b64 = b.to(kFloat64);
  EXPECT_TRUE(bit_equal(F::linear_gelu(x64, w64, b64), F::gelu(linear(x64, w64, b64), "tanh")));
}

}  // namespace
}  // namespace kiln
