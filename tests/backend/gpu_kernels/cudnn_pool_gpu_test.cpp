// Average pooling with cuDNN's backward (Note [cuDNN pooling], backend/gpu/dnn.h): forward and
// backward in float16/bfloat16/float32/float64 with and without counting the padding, against
// float64 loops, and cuDNN's own forward against the same loops; ceil_mode calls stay on kiln's
// kernels and are right too.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backend/gpu/dnn.h"
#include "backend/gpu_kernels/gpu_test_util.h"
#include "kiln/nn/functional/conv.h"

// Weak: CPU-only builds link this binary without backend/gpu/dnn.cu.
namespace kiln::gpu::dnn {
bool available() __attribute__((weak));
int64_t pool_call_count() __attribute__((weak));
bool avg_pool2d(const Tensor&, const Tensor&, bool, const PoolParams&) __attribute__((weak));
}  // namespace kiln::gpu::dnn

namespace kiln {
namespace {

using namespace gpu_test;
namespace F = nn::functional;

struct Pool {
  int64_t n, c, h, w, k, s, p;
  bool ceil, include_pad;
  int64_t oh() const { return out(h); }
  int64_t ow() const { return out(w); }
  int64_t out(int64_t x) const {
    const int64_t span = x + 2 * p - k;
    int64_t o = (ceil ? (span + s - 1) / s : span / s) + 1;
    if (ceil && (o - 1) * s >= x + p) --o;  // the last window must start inside
    return o;
  }
  // The divisor of output (i, j), PyTorch's rule.
  double divisor(int64_t i, int64_t j) const {
    const int64_t h0 = i * s - p, w0 = j * s - p;
    const int64_t h1 = std::min(h0 + k, h + p), w1 = std::min(w0 + k, w + p);
    if (include_pad) return static_cast<double>((h1 - h0) * (w1 - w0));
    return static_cast<double>((std::min(h1, h) - std::max<int64_t>(h0, 0)) *
                               (std::min(w1, w) - std::max<int64_t>(w0, 0)));
  }
};

// y = avg_pool(x) and gx = avg_pool backward(gy) by loops over the windows.
void reference(const Pool& q, const std::vector<double>& x, const std::vector<double>& gy,
               std::vector<double>& y, std::vector<double>& gx) {
  const int64_t planes = q.n * q.c, oh = q.oh(), ow = q.ow();
  y.assign(static_cast<size_t>(planes * oh * ow), 0.0);
  gx.assign(x.size(), 0.0);
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        const double d = q.divisor(i, j);
        const size_t o = static_cast<size_t>((pl * oh + i) * ow + j);
        for (int64_t a = i * q.s - q.p; a < i * q.s - q.p + q.k; ++a)
          for (int64_t b = j * q.s - q.p; b < j * q.s - q.p + q.k; ++b) {
            if (a < 0 || a >= q.h || b < 0 || b >= q.w) continue;
            const size_t e = static_cast<size_t>((pl * q.h + a) * q.w + b);
            y[o] += x[e] / d;
            gx[e] += gy[o] / d;
          }
      }
}

void check(const Pool& q, DType dt, double tol, const std::string& what) {
  const int64_t nx = q.n * q.c * q.h * q.w, ny = q.n * q.c * q.oh() * q.ow();
  auto xv = rand_vec(nx, 7), gv = rand_vec(ny, 8);
  // Round the inputs to the dtype first so the reference sees the same values.
  Tensor x = from_vector(xv, {q.n, q.c, q.h, q.w}).to(dt);
  Tensor gy = from_vector(gv, {q.n, q.c, q.oh(), q.ow()}).to(dt);
  std::vector<double> y_ref, gx_ref;
  reference(q, host(x), host(gy), y_ref, gx_ref);
  Tensor xg = x.to(kGpu).requires_grad_(true);
  Tensor y = F::avg_pool2d(xg, {q.k, q.k}, {q.s, q.s}, {q.p, q.p}, q.ceil, q.include_pad);
  ASSERT_EQ(y.sizes(), IntArrayRef({q.n, q.c, q.oh(), q.ow()})) << what;
  y.backward(gy.to(kGpu));
  auto yv = host(y), gxv = host(xg.grad());
  for (size_t i = 0; i < yv.size(); ++i)
    ASSERT_NEAR(yv[i], y_ref[i], tol * (1 + std::abs(y_ref[i]))) << what << " y[" << i << "]";
  for (size_t i = 0; i < gxv.size(); ++i)
    ASSERT_NEAR(gxv[i], gx_ref[i], tol * (1 + std::abs(gx_ref[i]))) << what << " gx[" << i << "]";
}

// cuDNN's own forward (not used by the op: kiln's kernel is faster) against the same loops.
void check_cudnn_forward(const Pool& q, DType dt, double tol, const std::string& what) {
  auto xv = rand_vec(q.n * q.c * q.h * q.w, 9);
  Tensor x = from_vector(xv, {q.n, q.c, q.h, q.w}).to(dt);
  std::vector<double> y_ref, unused;
  reference(q, host(x), std::vector<double>(q.n * q.c * q.oh() * q.ow(), 0.0), y_ref, unused);
  Tensor y = empty({q.n, q.c, q.oh(), q.ow()}, TensorOptions(dt).device(kGpu));
  ASSERT_TRUE(gpu::dnn::avg_pool2d(x.to(kGpu), y, false,
                                   {{q.k, q.k}, {q.s, q.s}, {q.p, q.p}, q.include_pad}))
      << what;
  auto yv = host(y);
  for (size_t i = 0; i < yv.size(); ++i)
    ASSERT_NEAR(yv[i], y_ref[i], tol * (1 + std::abs(y_ref[i]))) << what << " y[" << i << "]";
}

TEST(CudnnPoolGpu, AvgPoolForwardBackwardAgainstLoops) {
  KILN_NEED_GPU();
  const bool cudnn = &gpu::dnn::available != nullptr && gpu::dnn::available();
  const struct {
    DType dt;
    double tol;
  } types[] = {{DType::Float64, 1e-12},
               {DType::Float32, 1e-5},
               {DType::BFloat16, 1e-2},
               {DType::Float16, 2e-3}};
  const Pool pools[] = {{2, 3, 11, 9, 3, 2, 1, false, true},
                        {2, 3, 11, 9, 3, 2, 1, false, false},
                        {1, 4, 8, 8, 2, 2, 0, false, true},
                        {3, 2, 7, 13, 5, 1, 2, false, false}};
  for (const auto& t : types)
    for (const Pool& q : pools) {
      const int64_t before = cudnn ? gpu::dnn::pool_call_count() : 0;
      const std::string what = std::string(dtype_name(t.dt)) + " k" + std::to_string(q.k) + " s" +
                               std::to_string(q.s) + " p" + std::to_string(q.p) +
                               (q.include_pad ? " include_pad" : " exclude_pad");
      check(q, t.dt, t.tol, what);
      // The backward ran through cuDNN (the forward stays on kiln's faster kernel).
      if (cudnn) {
        EXPECT_EQ(gpu::dnn::pool_call_count() - before, 1) << what;
      }
      if (cudnn) check_cudnn_forward(q, t.dt, t.tol, what + " (cuDNN forward)");
    }
  if (!cudnn) GTEST_SKIP() << "cuDNN unavailable: kiln's kernels were checked instead";
}

TEST(CudnnPoolGpu, CeilModeStaysOnKilnKernels) {
  KILN_NEED_GPU();
  const bool cudnn = &gpu::dnn::available != nullptr && gpu::dnn::available();
  const Pool q{2, 2, 10, 10, 3, 2, 1, true, true};  // one more window than the floor rule
  ASSERT_EQ(q.oh(), 6);
  const int64_t before = cudnn ? gpu::dnn::pool_call_count() : 0;
  check(q, DType::Float32, 1e-5, "ceil_mode");
  if (cudnn) {
    EXPECT_EQ(gpu::dnn::pool_call_count(), before);
  }
}

}  // namespace
}  // namespace kiln
