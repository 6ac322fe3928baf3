// GPU convolution, pooling and unfold/fold tests: conv2d/conv3d forward and both gradients
// against double-precision direct loops, pools and unfold/fold against the CPU kernels (same
// windows and orders of additions, so equal bits; cuDNN's average pools within 4 ulp). Skip
// without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kiln/cuda.h"
#include "kiln/kiln.h"
#include "kiln/nn/functional/conv.h"

namespace kiln {
namespace {

namespace F = kiln::nn::functional;

#define KILN_NEED_GPU() \
  if (!cuda::is_available()) GTEST_SKIP() << "no GPU: GPU kernel tests need a cuda device"

const Device kGpu(kCUDA, 0);

std::vector<double> rand_vec(int64_t n, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) x = u(g);
  return v;
}

std::vector<double> host(const Tensor& t) {
  Tensor c = t.to(Device(kCPU)).to(DType::Float64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tol,
                 const char* what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(got.size(), want.size());
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 5; ++i)
    if (!(std::abs(got[i] - want[i]) <= tol * (1 + std::abs(want[i])))) {
      ADD_FAILURE() << "element " << i << ": got " << got[i] << ", want " << want[i];
      ++bad;
    }
}

void expect_equal(const Tensor& got, const Tensor& want, const char* what) {
  SCOPED_TRACE(what);
  ASSERT_TRUE(got.is_cuda());
  ASSERT_EQ(got.sizes(), want.sizes());
  std::vector<double> a = host(got), b = host(want);
  int bad = 0;
  for (size_t i = 0; i < a.size() && bad < 5; ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) {
      ADD_FAILURE() << "element " << i << ": got " << a[i] << ", want " << b[i];
      ++bad;
    }
}

// A 2-D convolution problem with its double-precision direct results: y, dx, dw for the
// upstream gradient gy.
struct Conv2d {
  int64_t n, c, h, w, o, kh, kw, sh, sw, ph, pw, dh, dw, groups;
  int64_t oh() const { return (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1; }
  int64_t ow() const { return (w + 2 * pw - dw * (kw - 1) - 1) / sw + 1; }
  int64_t cg() const { return c / groups; }
  int64_t og() const { return o / groups; }
};

void reference(const Conv2d& p, const std::vector<double>& x, const std::vector<double>& wt,
               const std::vector<double>& b, const std::vector<double>& gy, std::vector<double>& y,
               std::vector<double>& dx, std::vector<double>& dwt) {
  const int64_t OH = p.oh(), OW = p.ow();
  y.assign(p.n * p.o * OH * OW, 0);
  dx.assign(x.size(), 0);
  dwt.assign(wt.size(), 0);
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t o = 0; o < p.o; ++o) {
      const int64_t g = o / p.og();
      for (int64_t i = 0; i < OH; ++i)
        for (int64_t j = 0; j < OW; ++j) {
          const int64_t yi = ((n * p.o + o) * OH + i) * OW + j;
          double s = b.empty() ? 0 : b[o];
          for (int64_t ci = 0; ci < p.cg(); ++ci)
            for (int64_t a = 0; a < p.kh; ++a)
              for (int64_t e = 0; e < p.kw; ++e) {
                const int64_t hh = i * p.sh - p.ph + a * p.dh, ww = j * p.sw - p.pw + e * p.dw;
                if (hh < 0 || hh >= p.h || ww < 0 || ww >= p.w) continue;
                const int64_t xi = ((n * p.c + g * p.cg() + ci) * p.h + hh) * p.w + ww;
                const int64_t wi = ((o * p.cg() + ci) * p.kh + a) * p.kw + e;
                s += x[xi] * wt[wi];
                dx[xi] += gy[yi] * wt[wi];
                dwt[wi] += gy[yi] * x[xi];
              }
          y[yi] = s;
        }
    }
}

TEST(GpuConv, Conv2dForwardAndGradientsMatchDirectLoops) {
  KILN_NEED_GPU();
  const std::vector<Conv2d> cases = {
      {2, 3, 9, 11, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1},  // 3x3 stride 1
      {3, 4, 10, 7, 6, 3, 2, 2, 1, 1, 0, 2, 1, 2},  // strides, dilation, groups
      {2, 6, 5, 5, 6, 1, 1, 1, 1, 0, 0, 1, 1, 3},   // pointwise, groups
      {1, 4, 8, 8, 4, 3, 3, 2, 2, 1, 1, 1, 1, 4},   // depthwise
  };
  int seed = 0;
  for (const Conv2d& p : cases)
    for (DType dt : {DType::Float32, DType::Float64}) {
      SCOPED_TRACE("case " + std::to_string(seed) + " " + dtype_name(dt));
      auto xv = rand_vec(p.n * p.c * p.h * p.w, ++seed),
           wv = rand_vec(p.o * p.cg() * p.kh * p.kw, ++seed);
      auto bv = rand_vec(p.o, ++seed), gv = rand_vec(p.n * p.o * p.oh() * p.ow(), ++seed);
      std::vector<double> y, dx, dw;
      reference(p, xv, wv, bv, gv, y, dx, dw);
      Tensor x = from_vector(xv).reshape({p.n, p.c, p.h, p.w}).to(dt).to(kGpu);
      Tensor w = from_vector(wv).reshape({p.o, p.cg(), p.kh, p.kw}).to(dt).to(kGpu);
      Tensor b = from_vector(bv).to(dt).to(kGpu);
      Tensor gy = from_vector(gv).reshape({p.n, p.o, p.oh(), p.ow()}).to(dt).to(kGpu);
      x.requires_grad_();
      w.requires_grad_();
      Tensor out = F::conv2d(x, w, b, {p.sh, p.sw}, {p.ph, p.pw}, {p.dh, p.dw}, p.groups);
      ASSERT_TRUE(out.is_cuda());
      const double tol = dt == DType::Float32 ? 2e-5 : 1e-12;
      expect_near(host(out), y, tol, "y");
      out.backward(gy);
      expect_near(host(x.grad()), dx, tol, "dx");
      expect_near(host(w.grad()), dw, tol, "dw");
    }
}

TEST(GpuConv, Conv3dAndBatchLargerThanOneChunkMatchCpu) {
  KILN_NEED_GPU();
  Tensor x = from_vector(rand_vec(2 * 3 * 5 * 6 * 7, 40)).reshape({2, 3, 5, 6, 7});
  Tensor w = from_vector(rand_vec(4 * 3 * 2 * 3 * 2, 41)).reshape({4, 3, 2, 3, 2});
  Tensor want = F::conv3d(x, w, {}, {1, 2, 1}, {1, 0, 1}, {2, 1, 1});
  Tensor got = F::conv3d(x.to(kGpu), w.to(kGpu), {}, {1, 2, 1}, {1, 0, 1}, {2, 1, 1});
  expect_near(host(got), host(want), 1e-12, "conv3d");
  // Images whose columns (16 * 49 * 128^2 elements each) fill a 2^26-element chunk after 5:
  // three chunks.
  Tensor xb =
      from_vector(rand_vec(12 * 16 * 128 * 128, 42)).reshape({12, 16, 128, 128}).to(DType::Float32);
  Tensor wb = from_vector(rand_vec(8 * 16 * 7 * 7, 43)).reshape({8, 16, 7, 7}).to(DType::Float32);
  expect_near(host(F::conv2d(xb.to(kGpu), wb.to(kGpu), {}, 1, 3)),
              host(F::conv2d(xb, wb, {}, 1, 3)), 1e-4, "chunked conv2d");
}

// Average pools run through cuDNN where it takes them (Note [cuDNN pooling]), which sums a window
// in its own order: equal to the CPU within a few units in the last place (NaN where the CPU has
// NaN), not bit for bit.
void expect_avg(const Tensor& got, const Tensor& want, const char* what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(got.sizes(), want.sizes());
  const double ulp = want.dtype() == DType::Float64   ? 2.3e-16
                     : want.dtype() == DType::Float32 ? 1.2e-7
                                                      : 7.9e-3;
  std::vector<double> a = host(got), b = host(want);
  int bad = 0;
  for (size_t i = 0; i < a.size() && bad < 5; ++i)
    if (!(std::isnan(a[i]) ? std::isnan(b[i])
                           : std::abs(a[i] - b[i]) <= 4 * ulp * std::max(1.0, std::abs(b[i])))) {
      ADD_FAILURE() << "element " << i << ": got " << a[i] << ", want " << b[i];
      ++bad;
    }
}

TEST(GpuConv, PoolsAndGradientsMatchCpu) {
  KILN_NEED_GPU();
  auto v = rand_vec(3 * 4 * 13 * 17, 50);
  v[5] = std::nan("");  // a NaN wins its max windows
  for (DType dt : {DType::Float32, DType::Float64, DType::BFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = from_vector(v).reshape({3, 4, 13, 17}).to(dt);
    Tensor g = x.to(kGpu);
    auto [cv, ci] = F::max_pool2d_with_indices(x, {3, 2}, {2, 2}, {1, 1}, {1, 2}, true);
    auto [gvv, gi] = F::max_pool2d_with_indices(g, {3, 2}, {2, 2}, {1, 1}, {1, 2}, true);
    expect_equal(gvv, cv, "max_pool2d values");
    expect_equal(gi, ci, "max_pool2d indices");
    expect_avg(F::avg_pool2d(g, {3, 3}, {2, 1}, {1, 1}, true, false),
               F::avg_pool2d(x, {3, 3}, {2, 1}, {1, 1}, true, false), "avg_pool2d");
    expect_equal(F::adaptive_avg_pool2d(g, {5, 7}), F::adaptive_avg_pool2d(x, {5, 7}),
                 "adaptive_avg_pool2d");
    expect_equal(F::adaptive_avg_pool2d(g, {20, 30}), F::adaptive_avg_pool2d(x, {20, 30}),
                 "adaptive_avg_pool2d upsampling");
    expect_equal(F::adaptive_max_pool2d(g, {4, 6}), F::adaptive_max_pool2d(x, {4, 6}),
                 "adaptive_max_pool2d");
    if (dt == DType::BFloat16) continue;
    // Gradients through each pool's backward op.
    Tensor gy_src = from_vector(rand_vec(3 * 4 * 64, 51));
    auto grad_of = [&](const Tensor& in, auto f) {
      Tensor t = in.detach().clone();
      t.requires_grad_();
      Tensor y = f(t);
      Tensor gy = gy_src.narrow(0, 0, y.numel()).reshape(y.sizes()).to(in.dtype()).to(in.device());
      y.backward(gy);
      return t.grad();
    };
    Tensor xf = from_vector(rand_vec(3 * 4 * 13 * 17, 52)).reshape({3, 4, 13, 17}).to(dt);
    auto mp = [](const Tensor& t) { return F::max_pool2d(t, {3, 3}, {2, 2}, {1, 1}); };
    auto ap = [](const Tensor& t) { return F::avg_pool2d(t, {3, 2}, {2, 2}, {1, 1}, true, true); };
    auto aap = [](const Tensor& t) { return F::adaptive_avg_pool2d(t, {5, 4}); };
    auto amp = [](const Tensor& t) { return F::adaptive_max_pool2d(t, {3, 5}); };
    expect_equal(grad_of(xf.to(kGpu), mp), grad_of(xf, mp), "max_pool2d backward");
    expect_avg(grad_of(xf.to(kGpu), ap), grad_of(xf, ap), "avg_pool2d backward");
    expect_equal(grad_of(xf.to(kGpu), aap), grad_of(xf, aap), "adaptive_avg_pool2d backward");
    expect_equal(grad_of(xf.to(kGpu), amp), grad_of(xf, amp), "adaptive_max_pool2d backward");
  }
}

TEST(GpuConv, UnfoldFoldMatchCpuBitForBit) {
  KILN_NEED_GPU();
  for (DType dt : {DType::Float32, DType::Float64}) {
    Tensor x = from_vector(rand_vec(2 * 3 * 10 * 9, 60)).reshape({2, 3, 10, 9}).to(dt);
    Tensor cols = F::unfold(x, {3, 2}, {2, 1}, {1, 0}, {2, 1});
    expect_equal(F::unfold(x.to(kGpu), {3, 2}, {2, 1}, {1, 0}, {2, 1}), cols, "unfold");
    expect_equal(F::fold(cols.to(kGpu), {10, 9}, {3, 2}, {2, 1}, {1, 0}, {2, 1}),
                 F::fold(cols, {10, 9}, {3, 2}, {2, 1}, {1, 0}, {2, 1}), "fold");
  }
}

}  // namespace
}  // namespace kiln
