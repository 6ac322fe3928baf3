// GPU scan kernels beyond the op table: cumsum of 1M float32 against a double loop, block-mode
// and thread-mode lines on strided inputs, cummax/cummin ties and NaN against the CPU rule, and a
// scan over more than 2^31 elements. Skip without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "backend/gpu_kernels/gpu_test_util.h"
#include "kiln/cuda.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

using namespace gpu_test;

// Elementwise |a - b| <= 1e-2 * |b| + 1e-6 for bfloat16 (one rounding step), 1e-6 relative
// for float32, exact for integers and float64 sums of few terms.
bool near(const Tensor& a, const Tensor& b) {
  auto x = host(a), y = host(b);
  if (x.size() != y.size() || a.dtype() != b.dtype()) return false;
  const double r = a.dtype() == DType::BFloat16  ? 1e-2
                   : a.dtype() == DType::Float32 ? 1e-6
                   : a.dtype() == DType::Float64 ? 1e-13
                                                 : 0;
  for (size_t i = 0; i < x.size(); ++i)
    if (std::abs(x[i] - y[i]) > r * std::abs(y[i]) + (r > 0 ? 1e-6 : 0)) return false;
  return true;
}

TEST(ScanGpu, CumsumOfOneMillionFloat32MatchesADoubleLoop) {
  KILN_NEED_GPU();
  const int64_t n = 1 << 20;
  for (double lo : {0.0, -1.0}) {  // all positive, then cancelling signs
    auto v = rand_vec(n, 21, lo, 1);
    Tensor x = from_vector(v).to(DType::Float32);
    std::vector<double> xf = host(x), want(n);
    double acc = 0, scale = 0;
    for (int64_t i = 0; i < n; ++i) want[i] = acc += xf[i];
    for (double w : want) scale = std::max(scale, std::abs(w));
    auto got = host(cumsum(x.to(kGpu), 0));
    // float32 output rounding of a double-accumulated sum: half an ulp of the value
    for (int64_t i = 0; i < n; ++i)
      ASSERT_NEAR(got[i], want[i], std::abs(want[i]) * 6e-8 + 1e-9) << i;
  }
}

TEST(ScanGpu, EveryScanMatchesTheCpuOnStridedInputsInBothModes) {
  KILN_NEED_GPU();
  // [a, b] with the scanned dim long (block mode) or short (thread mode), both dims, transposed.
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{7, 5000}, {3000, 40}, {9000, 9}}) {
    Tensor x = from_vector(rand_vec(rows * cols, 22, -2, 2)).reshape({rows, cols});
    for (DType dt : {DType::Float32, DType::Float64, DType::Int32, DType::BFloat16}) {
      Tensor xc = dt == DType::Int32 ? mul(x, 10).to(dt) : x.to(dt);
      Tensor xg = xc.to(kGpu);
      for (int64_t dim : {0, 1}) {
        for (bool tr : {false, true}) {
          Tensor a = tr ? xc.t() : xc, ag = tr ? xg.t() : xg;
          // double accumulators in another order: equal after rounding to the output dtype,
          // up to one rounding step
          EXPECT_TRUE(near(cumsum(ag, dim), cumsum(a, dim))) << rows << " " << dim;
          auto [vg, ig] = cummax(ag, dim);
          auto [vc, ic] = cummax(a, dim);
          EXPECT_TRUE(bit_equal(vg, vc));
          EXPECT_TRUE(bit_equal(ig, ic));
          auto [ng, jg] = cummin(ag, dim);
          auto [nc, jc] = cummin(a, dim);
          EXPECT_TRUE(bit_equal(ng, nc));
          EXPECT_TRUE(bit_equal(jg, jc));
          if (dt == DType::Float64) {
            // products and logcumsumexp accumulate in double in a tree: close, not bit-equal
            Tensor p = mul(a, 0.001).add(1);
            auto pg = host(cumprod(p.to(kGpu), dim)), pc = host(cumprod(p, dim));
            auto lg = host(logcumsumexp(ag, dim)), lc = host(logcumsumexp(a, dim));
            for (size_t i = 0; i < pc.size(); ++i) {
              ASSERT_NEAR(pg[i], pc[i], 1e-12 * std::abs(pc[i]));
              ASSERT_NEAR(lg[i], lc[i], 1e-12 * std::max(1.0, std::abs(lc[i])));
            }
          }
        }
      }
    }
  }
}

TEST(ScanGpu, CummaxTiesAndNaNFollowTheCpuRule) {
  KILN_NEED_GPU();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> v(6000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>((i * 37) % 11);  // many ties
  v[2500] = nan;
  v[4100] = nan;
  Tensor x = from_vector(v).to(DType::Float32);
  for (int rep = 0; rep < 2; ++rep) {
    Tensor a = rep == 0 ? x : x.narrow(0, 0, 2400);  // with and without NaN
    auto [vg, ig] = cummax(a.to(kGpu), 0);
    auto [vc, ic] = cummax(a, 0);
    EXPECT_TRUE(bit_equal(ig, ic));
    auto [ng, jg] = cummin(a.to(kGpu), 0);
    auto [nc, jc] = cummin(a, 0);
    EXPECT_TRUE(bit_equal(jg, jc));
    auto hv = host(vg), cv = host(vc);
    for (size_t i = 0; i < hv.size(); ++i)
      EXPECT_TRUE(hv[i] == cv[i] || (std::isnan(hv[i]) && std::isnan(cv[i]))) << i;
  }
}

TEST(ScanGpu, CumsumOverMoreThan2To31Elements) {
  KILN_NEED_GPU();
  const int64_t cols = (int64_t{1} << 30) + 100;  // 2 lines: 2^31 + 200 elements
  Tensor x = ones({2, cols}, TensorOptions(DType::Int8).device(kGpu));
  Tensor y = cumsum(x, 1, DType::Int8);  // wraps modulo 256 as int8 (int64 accumulator)
  auto tail = host(y.narrow(1, cols - 3, 3));
  for (int r = 0; r < 2; ++r)
    for (int k = 0; k < 3; ++k) {
      const int64_t m = (cols - 3 + k + 1) % 256;  // the int64 sum reduced to int8
      EXPECT_EQ(tail[r * 3 + k], static_cast<double>(static_cast<int8_t>(m)));
    }
}

}  // namespace
}  // namespace kiln
