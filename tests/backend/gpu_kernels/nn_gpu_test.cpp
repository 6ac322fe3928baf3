// GPU nn kernels beyond the op table's GPU-vs-CPU suite: rows longer than a block, rows of one
// element, non-contiguous inputs, bfloat16 against float64 references, layer_norm backward
// against the CPU, deterministic embedding backward, fused cross-entropy and dropout (the CPU's
// Philox mask bit for bit). Skip without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kiln/cuda.h"
#include "kiln/kiln.h"
#include "nn/functional/nn_ops.h"

namespace kiln {
namespace {

#define KILN_NEED_GPU() \
  if (!cuda::is_available()) GTEST_SKIP() << "no GPU: GPU nn kernel tests need a cuda device"

const Device kGpu(kCUDA, 0);

std::vector<double> rand_vec(int64_t n, uint64_t seed, double lo = -3, double hi = 3) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) x = u(g);
  return v;
}

Tensor cpu_tensor(const std::vector<double>& v, IntArrayRef shape, DType dt) {
  return from_vector(v).reshape(shape).to(dt);
}

std::vector<double> host(const Tensor& t) {
  Tensor c = t.to(Device(kCPU)).to(DType::Float64).contiguous();
  const double* p = static_cast<const double*>(c.data_ptr());
  return std::vector<double>(p, p + c.numel());
}

// max |a - b| / (atol + rtol * |b|) <= 1.
::testing::AssertionResult near(const std::vector<double>& a, const std::vector<double>& b,
                                double atol, double rtol) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (size_t i = 0; i < a.size(); ++i) {
    const bool both_nan = std::isnan(a[i]) && std::isnan(b[i]);
    if (!both_nan && !(std::abs(a[i] - b[i]) <= atol + rtol * std::abs(b[i])))
      return ::testing::AssertionFailure() << "element " << i << ": " << a[i] << " vs " << b[i];
  }
  return ::testing::AssertionSuccess();
}

// Softmax (log = false) or log_softmax of each row of [rows, n], in double.
std::vector<double> ref_softmax(const std::vector<double>& x, int64_t rows, int64_t n, bool log) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const double* p = x.data() + r * n;
    double m = -INFINITY, s = 0;
    for (int64_t i = 0; i < n; ++i) m = std::max(m, p[i]);
    for (int64_t i = 0; i < n; ++i) s += std::exp(p[i] - m);
    for (int64_t i = 0; i < n; ++i)
      y[r * n + i] = log ? p[i] - m - std::log(s) : std::exp(p[i] - m) / s;
  }
  return y;
}

// The values a tensor of dtype dt holds for v (the rounding of the inputs is not error).
std::vector<double> rounded(const std::vector<double>& v, DType dt) {
  return host(from_vector(v).to(dt));
}

TEST(NnGpu, SoftmaxRowsOfEveryLength) {
  KILN_NEED_GPU();
  // In registers (1, 2, 4 vectors per thread, small rows sharing a warp), and the two-pass
  // kernel for rows longer than 1024 threads x 4 vectors.
  for (DType dt : {DType::Float32, DType::BFloat16, DType::Float64})
    for (int64_t n : {1, 3, 64, 100, 768, 8192, 8193, 40000, 70001}) {
      const int64_t rows = n > 10000 ? 3 : 17;
      SCOPED_TRACE(std::string(dtype_name(dt)) + " n " + std::to_string(n));
      const std::vector<double> v = rounded(rand_vec(rows * n, n, -8, 8), dt);
      Tensor x = cpu_tensor(v, {rows, n}, dt).to(kGpu);
      const double tol = dt == DType::BFloat16 ? 1e-2 : dt == DType::Float32 ? 1e-5 : 1e-12;
      for (bool log : {false, true}) {
        Tensor y = log ? detail::log_softmax_op(x, 1) : detail::softmax_op(x, 1);
        EXPECT_TRUE(near(host(y), ref_softmax(v, rows, n, log), log ? tol * 8 : tol * 1e-2, tol));
      }
    }
}

TEST(NnGpu, SoftmaxNonContiguousAndInnerDims) {
  KILN_NEED_GPU();
  const std::vector<double> v = rand_vec(300 * 7, 5);
  Tensor xc = cpu_tensor(v, {300, 7}, DType::Float32);
  Tensor xg = xc.to(kGpu);
  // dim 0 of [300, 7] (inner = 7), and the transposed view's last dim.
  for (int64_t dim : {0, 1}) {
    EXPECT_TRUE(
        near(host(detail::softmax_op(xg, dim)), host(detail::softmax_op(xc, dim)), 1e-7, 1e-5));
    Tensor tg = xg.t(), tc = xc.t();
    EXPECT_TRUE(near(host(detail::log_softmax_op(tg, dim)), host(detail::log_softmax_op(tc, dim)),
                     1e-5, 1e-5));
  }
  // Backward on a strided grad.
  Tensor y = detail::softmax_op(xg, 1);
  Tensor g = from_vector(rand_vec(300 * 14, 6)).reshape({300, 14}).to(DType::Float32);
  Tensor gg = g.to(kGpu).narrow(1, 0, 7), gc = g.narrow(1, 0, 7);
  EXPECT_TRUE(near(host(detail::softmax_backward_op(gg, y, 1)),
                   host(detail::softmax_backward_op(gc, y.to(Device(kCPU)), 1)), 1e-6, 1e-4));
}

// Layer norm of [rows, n] in double (y, mean, rstd).
void ref_layer_norm(const std::vector<double>& x, int64_t rows, int64_t n,
                    const std::vector<double>& w, const std::vector<double>& b, double eps,
                    std::vector<double>& y) {
  y.assign(x.size(), 0);
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < n; ++i) mean += x[r * n + i];
    mean /= n;
    for (int64_t i = 0; i < n; ++i) var += (x[r * n + i] - mean) * (x[r * n + i] - mean);
    const double rstd = 1 / std::sqrt(var / n + eps);
    for (int64_t i = 0; i < n; ++i) y[r * n + i] = (x[r * n + i] - mean) * rstd * w[i] + b[i];
  }
}

TEST(NnGpu, LayerNormBFloat16AgainstFloat64) {
  KILN_NEED_GPU();
  for (int64_t n : {1, 5, 768, 1000, 5120, 40000}) {
    SCOPED_TRACE("n " + std::to_string(n));
    const int64_t rows = n > 10000 ? 3 : 33;
    const DType dt = DType::BFloat16;
    const auto xv = rounded(rand_vec(rows * n, n + 1), dt);
    const auto wv = rounded(rand_vec(n, 2, 0.5, 1.5), dt), bv = rounded(rand_vec(n, 3), dt);
    Tensor x = cpu_tensor(xv, {rows, n}, dt).to(kGpu);
    Tensor w = cpu_tensor(wv, {n}, dt).to(kGpu), b = cpu_tensor(bv, {n}, dt).to(kGpu);
    auto [y, mean, rstd] = detail::layer_norm_op(x, n, w, b, 1e-5);
    EXPECT_EQ(mean.dtype(), DType::Float32);
    std::vector<double> ref;
    ref_layer_norm(xv, rows, n, wv, bv, 1e-5, ref);
    EXPECT_TRUE(near(host(y), ref, 2e-2, 1e-2));
  }
}

TEST(NnGpu, NormBackwardMatchesCpu) {
  KILN_NEED_GPU();
  for (DType dt : {DType::Float32, DType::BFloat16})
    for (int64_t n : {1, 768, 1000, 20000})
      for (bool center : {true, false}) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + " n " + std::to_string(n) +
                     (center ? " layer_norm" : " rms_norm"));
        const int64_t rows = n > 10000 ? 5 : 257;
        Tensor x = cpu_tensor(rand_vec(rows * n, 7), {rows, n}, dt);
        Tensor g = cpu_tensor(rand_vec(rows * n, 8), {rows, n}, dt);
        Tensor w = cpu_tensor(rand_vec(n, 9, 0.5, 1.5), {n}, dt);
        Tensor b = cpu_tensor(rand_vec(n, 10), {n}, dt);
        std::vector<Tensor> res[2];
        for (int dev = 0; dev < 2; ++dev) {
          auto on = [&](const Tensor& t) { return dev ? t.to(kGpu) : t; };
          if (center) {
            auto [y, mean, rstd] = detail::layer_norm_op(on(x), n, on(w), on(b), 1e-5);
            auto [dx, dw, db] =
                detail::layer_norm_backward_op(on(g), on(x), mean, rstd, n, on(w), true);
            res[dev] = {y, mean, rstd, dx, dw, db};
          } else {
            auto [y, rstd] = detail::rms_norm_op(on(x), n, on(w), 1e-5);
            auto [dx, dw] = detail::rms_norm_backward_op(on(g), on(x), rstd, n, on(w));
            res[dev] = {y, rstd, dx, dw};
          }
        }
        const double tol = dt == DType::BFloat16 ? 2e-2 : 1e-4;
        for (size_t k = 0; k < res[0].size(); ++k) {
          // dw / db sum over rows: their error grows with the row count.
          const bool param = k >= (center ? 4u : 3u);
          const double scale = param ? std::sqrt(static_cast<double>(rows)) : 1.0;
          EXPECT_TRUE(near(host(res[1][k]), host(res[0][k]), tol * scale, tol)) << "output " << k;
        }
        // Deterministic: a second GPU run gives the same bits.
        if (center) {
          auto [y, mean, rstd] = detail::layer_norm_op(x.to(kGpu), n, w.to(kGpu), b.to(kGpu), 1e-5);
          auto [dx, dw, db] = detail::layer_norm_backward_op(g.to(kGpu), x.to(kGpu), mean, rstd, n,
                                                             w.to(kGpu), true);
          EXPECT_TRUE(equal(dw, res[1][4]));
          EXPECT_TRUE(equal(db, res[1][5]));
        }
      }
}

TEST(NnGpu, EmbeddingBackwardManyDuplicatesIsDeterministic) {
  KILN_NEED_GPU();
  for (int64_t m : {1, 5000, 70000}) {
    SCOPED_TRACE("m " + std::to_string(m));
    const int64_t v = 50, d = 300;
    std::vector<int64_t> idx(m);
    std::mt19937_64 gen(m);
    for (auto& i : idx) i = static_cast<int64_t>(gen() % 4) * 7;  // four distinct rows
    Tensor ic = from_vector(idx);
    Tensor g = cpu_tensor(rand_vec(m * d, 11), {m, d}, DType::Float32);
    Tensor want = detail::embedding_backward_op(g, ic, v, 14);  // padding_idx 14 gets none
    Tensor a = detail::embedding_backward_op(g.to(kGpu), ic.to(kGpu), v, 14);
    Tensor b = detail::embedding_backward_op(g.to(kGpu), ic.to(kGpu), v, 14);
    EXPECT_TRUE(equal(a, b));
    EXPECT_TRUE(near(host(a), host(want), 1e-3, 1e-5));
    // Forward lookup and int32 indices.
    Tensor w = cpu_tensor(rand_vec(v * d, 12), {v, d}, DType::BFloat16);
    EXPECT_TRUE(
        equal(detail::embedding_op(w.to(kGpu), ic.to(DType::Int32).to(kGpu)).to(Device(kCPU)),
              detail::embedding_op(w, ic)));
  }
}

TEST(NnGpu, CrossEntropyMatchesCpu) {
  KILN_NEED_GPU();
  struct Case {
    int64_t n, c;
    DType dt;
    double ls;
    bool weight;
    int64_t red;
  };
  for (const Case& k :
       {Case{64, 50304, DType::BFloat16, 0.0, false, 1},
        Case{33, 50304, DType::BFloat16, 0.1, true, 0},
        Case{40, 1001, DType::Float32, 0.2, true, 2}, Case{17, 7, DType::Float16, 0.0, false, 1},
        Case{9, 333, DType::Float64, 0.3, true, 1}}) {
    SCOPED_TRACE(std::string(dtype_name(k.dt)) + " [" + std::to_string(k.n) + ", " +
                 std::to_string(k.c) + "]");
    Tensor x = cpu_tensor(rand_vec(k.n * k.c, k.c, -6, 6), {k.n, k.c}, k.dt);
    std::vector<int64_t> t(k.n);
    std::mt19937_64 gen(k.n);
    for (auto& v : t) v = static_cast<int64_t>(gen() % k.c);
    t[0] = -100;
    Tensor tc = from_vector(t);
    Tensor w = k.weight ? cpu_tensor(rand_vec(k.c, 3, 0.5, 2), {k.c}, k.dt) : Tensor();
    auto [l0, lse0] = detail::cross_entropy_loss_op(x, tc, w, -100, k.red, k.ls);
    auto [l1, lse1] = detail::cross_entropy_loss_op(x.to(kGpu), tc.to(kGpu),
                                                    k.weight ? w.to(kGpu) : w, -100, k.red, k.ls);
    const double tol = k.dt == DType::Float64 ? 1e-10 : k.dt == DType::Float32 ? 1e-5 : 1e-2;
    EXPECT_TRUE(near(host(lse1), host(lse0), 1e-5, 1e-5));
    EXPECT_TRUE(near(host(l1), host(l0), tol, tol));
    Tensor g = k.red == 0 ? cpu_tensor(rand_vec(k.n, 4), {k.n}, k.dt) : full({}, 1.5).to(k.dt);
    Tensor d0 = detail::cross_entropy_loss_backward_op(g, x, tc, lse0, w, -100, k.red, k.ls);
    Tensor d1 = detail::cross_entropy_loss_backward_op(
        g.to(kGpu), x.to(kGpu), tc.to(kGpu), lse1, k.weight ? w.to(kGpu) : w, -100, k.red, k.ls);
    EXPECT_TRUE(near(host(d1), host(d0), tol * 1e-2, tol));
  }
}

TEST(NnGpu, DropoutMatchesCpuBitForBit) {
  KILN_NEED_GPU();
  for (DType dt : {DType::Float32, DType::BFloat16, DType::Float64})
    for (int64_t n : {1, 7, 1024, 100003}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " n " + std::to_string(n));
      Tensor x = cpu_tensor(rand_vec(n + 1, n), {n + 1}, dt);
      for (int64_t start : {0, 1}) {  // aligned and misaligned
        Tensor xs = x.narrow(0, start, n);
        auto [y0, m0] = detail::native_dropout_op(xs, 0.3, 987654321, 12345);
        auto [y1, m1] = detail::native_dropout_op(xs.to(kGpu), 0.3, 987654321, 12345);
        EXPECT_TRUE(equal(m1.to(Device(kCPU)), m0));
        EXPECT_TRUE(equal(y1.to(Device(kCPU)), y0));
      }
    }
}

TEST(NnGpu, OutOfRangeTargetsGiveNaN) {
  KILN_NEED_GPU();
  Tensor x = zeros({2, 3}).to(kGpu);
  Tensor t = from_vector<int64_t>({0, 5}).to(kGpu);
  auto [loss, lse] = detail::cross_entropy_loss_op(x, t, {}, -100, 1, 0);
  EXPECT_TRUE(std::isnan(loss.item<float>()));
  auto [nll, total] = detail::nll_loss_op(x, t, {}, -100, 2);
  EXPECT_TRUE(std::isnan(nll.item<float>()));
}

}  // namespace
}  // namespace kiln
