// GPU layer_norm / rms_norm backward (the fused dx + parameter-gradient kernel of Note [Fused
// layer_norm backward] and the paths it falls back to) and forward (the persistent kernel's rows
// of six vectors) against double-precision loops over the stored values; run-to-run bit equality.
#include <cmath>

#include "backend/gpu_kernels/gpu_test_util.h"
#include "kiln/nn/functional/norm.h"

namespace kiln {
namespace {

using gpu_test::host;
using gpu_test::kGpu;
using gpu_test::rand_vec;
namespace F = nn::functional;

struct NormCase {
  int64_t rows, n;
  DType dtype;
  bool rms, weight, bias;
};

std::string name(const NormCase& c) {
  return std::string(c.rms ? "rms_norm" : "layer_norm") + " " + std::to_string(c.rows) + "x" +
         std::to_string(c.n) + " " + dtype_name(c.dtype) + (c.weight ? " w" : "") +
         (c.bias ? " b" : "");
}

Tensor stored(const std::vector<double>& v, IntArrayRef shape, DType d) {
  return from_vector(v, TensorOptions(DType::Float64)).reshape(shape).to(d);
}

struct Grads {
  Tensor dx, dw, db;
};

Grads gpu_backward(const NormCase& c, const Tensor& x, const Tensor& w, const Tensor& b,
                   const Tensor& go) {
  Tensor xg = x.to(kGpu).requires_grad_();
  Tensor wg = c.weight ? w.to(kGpu).requires_grad_() : Tensor();
  Tensor bg = c.bias ? b.to(kGpu).requires_grad_() : Tensor();
  Tensor y = c.rms ? F::rms_norm(xg, {c.n}, wg, 1e-5) : F::layer_norm(xg, {c.n}, wg, bg, 1e-5);
  y.backward(go.to(kGpu));
  return {xg.grad(), c.weight ? wg.grad() : Tensor(), c.bias ? bg.grad() : Tensor()};
}

void check_case(const NormCase& c) {
  const int64_t R = c.rows, N = c.n;
  const std::string what = name(c);
  Tensor x = stored(rand_vec(R * N, 100 + N, -2, 2), {R, N}, c.dtype);
  Tensor go = stored(rand_vec(R * N, 200 + N), {R, N}, c.dtype);
  Tensor w = stored(rand_vec(N, 300 + N, 0.5, 1.5), {N}, c.dtype);
  Tensor b = stored(rand_vec(N, 400 + N), {N}, c.dtype);
  const std::vector<double> vx = host(x), vg = host(go), vw = host(w);
  // Reference: dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)), gw = g * w (rms: no
  // mean(gw) term, xhat = x * rstd); dw = sum_rows g * xhat, db = sum_rows g.
  std::vector<double> dx(static_cast<size_t>(R * N)), dw(static_cast<size_t>(N), 0.0),
      db(static_cast<size_t>(N), 0.0), dw_abs(static_cast<size_t>(N), 0.0),
      db_abs(static_cast<size_t>(N), 0.0);
  for (int64_t r = 0; r < R; ++r) {
    const double* xr = &vx[static_cast<size_t>(r * N)];
    const double* gr = &vg[static_cast<size_t>(r * N)];
    double mu = 0, q = 0;
    if (!c.rms) {
      for (int64_t i = 0; i < N; ++i) mu += xr[i];
      mu /= static_cast<double>(N);
    }
    for (int64_t i = 0; i < N; ++i) q += (xr[i] - mu) * (xr[i] - mu);
    const double rs = 1.0 / std::sqrt(q / static_cast<double>(N) + 1e-5);
    double s1 = 0, s2 = 0;
    for (int64_t i = 0; i < N; ++i) {
      const double gw = gr[i] * (c.weight ? vw[static_cast<size_t>(i)] : 1.0);
      s1 += gw;
      s2 += gw * (xr[i] - mu) * rs;
    }
    const double a = c.rms ? 0.0 : s1 / static_cast<double>(N), bq = s2 / static_cast<double>(N);
    for (int64_t i = 0; i < N; ++i) {
      const double xh = (xr[i] - mu) * rs;
      const double gw = gr[i] * (c.weight ? vw[static_cast<size_t>(i)] : 1.0);
      dx[static_cast<size_t>(r * N + i)] = rs * (gw - a - xh * bq);
      dw[static_cast<size_t>(i)] += gr[i] * xh;
      db[static_cast<size_t>(i)] += gr[i];
      dw_abs[static_cast<size_t>(i)] += std::abs(gr[i] * xh);
      db_abs[static_cast<size_t>(i)] += std::abs(gr[i]);
    }
  }
  // Tolerances: float32 arithmetic (a few ulps of the row's scale), plus the output's rounding
  // for 16-bit dtypes.
  const bool half = c.dtype != DType::Float32;
  const double out_rel = half ? (c.dtype == DType::BFloat16 ? 8e-3 : 1e-3) : 2e-6;
  Grads gg = gpu_backward(c, x, w, b, go);
  ASSERT_TRUE(gg.dx.defined()) << what;
  std::vector<double> got = host(gg.dx);
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], dx[i], out_rel * std::abs(dx[i]) + (half ? 2e-2 : 2e-5))
        << what << " dx " << i;
  if (c.weight) {
    std::vector<double> gw = host(gg.dw);
    for (int64_t i = 0; i < N; ++i) {
      const size_t k = static_cast<size_t>(i);
      ASSERT_NEAR(gw[k], dw[k], out_rel * std::abs(dw[k]) + 1e-5 * dw_abs[k] + 1e-6)
          << what << " dweight " << i;
    }
  }
  if (c.bias) {
    std::vector<double> gb = host(gg.db);
    for (int64_t i = 0; i < N; ++i) {
      const size_t k = static_cast<size_t>(i);
      ASSERT_NEAR(gb[k], db[k], out_rel * std::abs(db[k]) + 1e-5 * db_abs[k] + 1e-6)
          << what << " dbias " << i;
    }
  }
  // The same call again: bit-identical (the sums have a fixed order).
  Grads again = gpu_backward(c, x, w, b, go);
  EXPECT_TRUE(gpu_test::bit_equal(gg.dx, again.dx)) << what;
  if (c.weight) EXPECT_TRUE(gpu_test::bit_equal(gg.dw, again.dw)) << what;
  if (c.bias) EXPECT_TRUE(gpu_test::bit_equal(gg.db, again.db)) << what;
}

TEST(NormBackwardGpu, Float32RowsOfOneWarp) {
  KILN_NEED_GPU();
  // 768 (GPT-2: six vectors per lane), 512 (four, padded to six), 256, 128 with fewer rows
  // than the grid has warps, 2-D inputs as [rows, n].
  for (const NormCase& c : {NormCase{1000, 768, DType::Float32, false, true, true},
                            NormCase{37, 512, DType::Float32, false, true, true},
                            NormCase{300, 256, DType::Float32, false, true, true},
                            NormCase{5, 128, DType::Float32, false, true, true},
                            NormCase{1000, 768, DType::Float32, false, true, false},
                            NormCase{1000, 768, DType::Float32, true, true, false}})
    check_case(c);
}

TEST(NormBackwardGpu, HalfPrecisionRows) {
  KILN_NEED_GPU();
  for (const NormCase& c : {NormCase{1000, 768, DType::BFloat16, false, true, true},
                            NormCase{64, 256, DType::Float16, true, true, false},
                            NormCase{100, 1000, DType::BFloat16, false, true, true}})
    check_case(c);
}

TEST(NormBackwardGpu, FallbackShapesAndNoParameters) {
  KILN_NEED_GPU();
  // Rows not a multiple of the vector width, rows longer than one warp's registers, and no
  // parameter gradients at all: the unfused kernels.
  for (const NormCase& c : {NormCase{300, 130, DType::Float32, false, true, true},
                            NormCase{64, 2048, DType::Float32, false, true, true},
                            NormCase{200, 768, DType::Float32, false, false, false},
                            NormCase{50, 3000, DType::Float32, true, true, false}})
    check_case(c);
}

TEST(NormForwardGpu, Float32RowsOfFiveAndSixVectors) {
  KILN_NEED_GPU();
  // 768 (six 4-float vectors per lane of a 32-lane warp), 640 (five: the sixth masked), 704
  // (5.5), with and without parameters, layer and rms norm, rows fewer and more than one wave.
  struct Case {
    int64_t rows, n;
    bool rms, params;
  };
  for (const Case& c : {Case{4000, 768, false, true}, Case{3, 640, false, true},
                        Case{777, 704, false, false}, Case{1000, 768, true, true}}) {
    const int64_t R = c.rows, N = c.n;
    Tensor x = stored(rand_vec(R * N, 500 + N, -3, 3), {R, N}, DType::Float32);
    Tensor w = stored(rand_vec(N, 600 + N, 0.5, 1.5), {N}, DType::Float32);
    Tensor b = stored(rand_vec(N, 700 + N), {N}, DType::Float32);
    Tensor wg = c.params ? w.to(kGpu) : Tensor(), bg = c.params && !c.rms ? b.to(kGpu) : Tensor();
    Tensor y = c.rms ? F::rms_norm(x.to(kGpu), {N}, wg, 1e-5)
                     : F::layer_norm(x.to(kGpu), {N}, wg, bg, 1e-5);
    const std::vector<double> vx = host(x), vw = host(w), vb = host(b), got = host(y);
    for (int64_t r = 0; r < R; ++r) {
      const double* xr = &vx[static_cast<size_t>(r * N)];
      double mu = 0, q = 0;
      if (!c.rms) {
        for (int64_t i = 0; i < N; ++i) mu += xr[i];
        mu /= static_cast<double>(N);
      }
      for (int64_t i = 0; i < N; ++i) q += (xr[i] - mu) * (xr[i] - mu);
      const double rs = 1.0 / std::sqrt(q / static_cast<double>(N) + 1e-5);
      for (int64_t i = 0; i < N; ++i) {
        double want = (xr[i] - mu) * rs;
        if (c.params) want *= vw[static_cast<size_t>(i)];
        if (c.params && !c.rms) want += vb[static_cast<size_t>(i)];
        ASSERT_NEAR(got[static_cast<size_t>(r * N + i)], want, 4e-6 * (1 + std::abs(want)))
            << (c.rms ? "rms_norm " : "layer_norm ") << R << "x" << N << " row " << r << " col "
            << i;
      }
    }
    Tensor again = c.rms ? F::rms_norm(x.to(kGpu), {N}, wg, 1e-5)
                         : F::layer_norm(x.to(kGpu), {N}, wg, bg, 1e-5);
    EXPECT_TRUE(gpu_test::bit_equal(y, again));
  }
}

}  // namespace
}  // namespace kiln
