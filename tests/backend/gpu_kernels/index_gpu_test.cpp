// GPU index kernels beyond the op table's GPU-vs-CPU suite: duplicate scatter indices against
// double references, the last-writer rule of plain scatter/index_put, non-contiguous operands,
// compaction (masked_select, nonzero) on large inputs, 64-bit offsets past 2^31 elements, and the
// kernel error channel (a bad device index raises kiln::Error at the next sync). Skip without GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/gpu_kernels/gpu_test_util.h"
#include "kiln/cuda.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

using namespace gpu_test;

struct DeterministicScope {
  explicit DeterministicScope(bool on) { use_deterministic_algorithms(on); }
  ~DeterministicScope() { use_deterministic_algorithms(false); }
};

TEST(IndexGpu, ScatterAddWithManyDuplicatesMatchesDoubleReference) {
  KILN_NEED_GPU();
  const int64_t n = 1000, k = 200000;
  auto xv = rand_vec(n, 1), sv = rand_vec(k, 2);
  auto iv = rand_idx(k, n, 3);
  std::vector<double> want = xv;
  for (int64_t j = 0; j < k; ++j) want[iv[j]] += sv[j];
  Tensor x = from_vector(xv).to(DType::Float32).to(kGpu);
  Tensor s = from_vector(sv).to(DType::Float32).to(kGpu);
  Tensor i = from_vector(iv).to(kGpu);
  for (bool det : {false, true}) {
    DeterministicScope scope(det);
    auto got = host(scatter_add(x, 0, i, s));
    ASSERT_EQ(got.size(), want.size());
    for (int64_t e = 0; e < n; ++e) EXPECT_NEAR(got[e], want[e], 2e-3) << e << " det " << det;
    // index_add with alpha and index_put with accumulate on the same data.
    auto ia = host(index_add(x, 0, i, s, 0.5));
    auto ip = host(index_put(x, {i}, s, /*accumulate=*/true));
    for (int64_t e = 0; e < n; ++e) {
      double w2 = xv[e] + 0.5 * (want[e] - xv[e]);
      EXPECT_NEAR(ia[e], w2, 2e-3) << e;
      EXPECT_NEAR(ip[e], want[e], 2e-3) << e;
    }
  }
}

// Half-precision index_add / scatter_add add in the storage type (atomics by default, in index
// order in deterministic mode). Either order must stay within the recursive-summation bound
// (m + 1) * u * sum|terms| of the exact sum of the half-rounded inputs (u = 2^-11 for float16,
// 2^-8 for bfloat16; m additions into a slot).
TEST(IndexGpu, HalfPrecisionAccumulationStaysWithinTheSummationBound) {
  KILN_NEED_GPU();
  const int64_t n = 1000, k = 3000;
  for (DType dt : {DType::Float16, DType::BFloat16}) {
    const double u = dt == DType::Float16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
    Tensor xh = from_vector(rand_vec(n, 11, -4, 4)).to(dt);
    Tensor sh = from_vector(rand_vec(k, 12, -4, 4)).to(dt);
    const auto iv = rand_idx(k, n, 13);
    const auto xv = host(xh), sv = host(sh);  // the half-rounded inputs, exactly
    std::vector<double> want = xv, sum_abs(static_cast<size_t>(n)), cnt(static_cast<size_t>(n));
    for (int64_t e = 0; e < n; ++e) sum_abs[e] = std::abs(xv[e]);
    for (int64_t j = 0; j < k; ++j) {
      want[iv[j]] += sv[j];
      sum_abs[iv[j]] += std::abs(sv[j]);
      cnt[iv[j]] += 1;
    }
    Tensor x = xh.to(kGpu), src = sh.to(kGpu), i = from_vector(iv).to(kGpu);
    for (bool det : {false, true}) {
      DeterministicScope scope(det);
      const auto ia = host(index_add(x, 0, i, src));
      const auto sa = host(scatter_add(x, 0, i, src));
      for (int64_t e = 0; e < n; ++e) {
        const double bound = (cnt[e] + 1) * u * sum_abs[e] * 1.0001;
        EXPECT_NEAR(ia[e], want[e], bound) << dtype_name(dt) << " det " << det << " slot " << e;
        EXPECT_NEAR(sa[e], want[e], bound) << dtype_name(dt) << " det " << det << " slot " << e;
      }
    }
  }
}

TEST(IndexGpu, ScatterReduceAllReductionsWithDuplicatesMatchReference) {
  KILN_NEED_GPU();
  const int64_t rows = 50, cols = 7, k = 400;
  auto xv = rand_vec(rows * cols, 4, 0.5, 1.5), sv = rand_vec(k * cols, 5, 0.5, 1.5);
  auto iv = rand_idx(k * cols, rows, 6);
  Tensor x = from_vector(xv).reshape({rows, cols});
  Tensor s = from_vector(sv).reshape({k, cols});
  Tensor i = from_vector(iv).reshape({k, cols});
  for (std::string red : {"sum", "prod", "mean", "amax", "amin"})
    for (bool self : {true, false}) {
      // double reference straight from the definition
      std::vector<double> acc(xv.size()), cnt(xv.size(), self ? 1 : 0);
      std::vector<bool> hit(xv.size(), false);
      for (size_t e = 0; e < xv.size(); ++e) acc[e] = xv[e];
      for (int64_t r = 0; r < k; ++r)
        for (int64_t c = 0; c < cols; ++c) {
          const size_t d = static_cast<size_t>(iv[r * cols + c] * cols + c);
          const double v = sv[r * cols + c];
          if (!self && !hit[d])
            acc[d] = red == "prod" ? 1 : red == "amax" ? -1e300 : red == "amin" ? 1e300 : 0;
          hit[d] = true;
          cnt[d] += 1;
          if (red == "sum" || red == "mean") acc[d] += v;
          if (red == "prod") acc[d] *= v;
          if (red == "amax") acc[d] = std::max(acc[d], v);
          if (red == "amin") acc[d] = std::min(acc[d], v);
        }
      if (red == "mean")
        for (size_t e = 0; e < acc.size(); ++e)
          if (cnt[e] > 0) acc[e] /= cnt[e];
      auto got = host(scatter_reduce(x.to(kGpu), 0, i.to(kGpu), s.to(kGpu), red, self));
      for (size_t e = 0; e < acc.size(); ++e)
        EXPECT_NEAR(got[e], acc[e], 1e-9 * std::max(1.0, std::abs(acc[e])))
            << red << " self " << self << " at " << e;
    }
}

TEST(IndexGpu, PlainScatterAndIndexPutKeepTheLastWriterLikeTheCpu) {
  KILN_NEED_GPU();
  const int64_t n = 64, k = 5000;
  auto iv = rand_idx(k, n, 7);
  std::vector<double> sv(k);
  for (int64_t j = 0; j < k; ++j) sv[j] = static_cast<double>(j);  // exact in int32
  Tensor x = zeros({n}, TensorOptions(DType::Int32));
  Tensor s = from_vector(sv).to(DType::Int32);
  Tensor i = from_vector(iv);
  EXPECT_TRUE(bit_equal(scatter(x.to(kGpu), 0, i.to(kGpu), s.to(kGpu)), scatter(x, 0, i, s)));
  EXPECT_TRUE(bit_equal(index_copy(x.to(kGpu), 0, i.to(kGpu), s.to(kGpu)), index_copy(x, 0, i, s)));
  EXPECT_TRUE(bit_equal(index_put(x.to(kGpu), {i.to(kGpu)}, s.to(kGpu)), index_put(x, {i}, s)));
}

TEST(IndexGpu, NonContiguousOperandsMatchTheCpu) {
  KILN_NEED_GPU();
  auto xv = rand_vec(30 * 40, 8);
  Tensor x = from_vector(xv).reshape({30, 40}).to(DType::Float32);
  Tensor xt = x.to(kGpu).t();  // [40, 30], strides (1, 40)
  Tensor idx = from_vector(rand_idx(40 * 60, 30, 9)).reshape({40, 60});
  Tensor idx_g = idx.to(kGpu).narrow(1, 0, 60).slice(1, 0, std::nullopt, 2);  // strided
  Tensor idx_c = idx.slice(1, 0, std::nullopt, 2);
  EXPECT_TRUE(bit_equal(gather(xt, 1, idx_g), gather(x.t(), 1, idx_c)));
  // In place into a non-contiguous view (the kernel works on a contiguous copy and writes back).
  Tensor buf_g = zeros({40, 60}, TensorOptions(DType::Float32).device(kGpu));
  Tensor buf_c = zeros({40, 60}, TensorOptions(DType::Float32));
  Tensor src = from_vector(rand_vec(40 * 30, 10)).reshape({40, 30}).to(DType::Float32);
  Tensor sidx = from_vector(rand_idx(40 * 30, 30, 11)).reshape({40, 30});
  {
    DeterministicScope scope(true);  // ordered sums: bit-equal to the CPU's
    buf_g.slice(1, 0, std::nullopt, 2).scatter_add_(1, sidx.to(kGpu), src.to(kGpu));
  }
  buf_c.slice(1, 0, std::nullopt, 2).scatter_add_(1, sidx, src);
  EXPECT_TRUE(bit_equal(buf_g, buf_c));
  // index_select / index with a transposed input.
  Tensor sel = from_vector(std::vector<int64_t>{3, 0, 29, 3, -1});
  EXPECT_TRUE(bit_equal(index_select(xt, 1, sel.to(kGpu)), index_select(x.t(), 1, sel)));
  EXPECT_TRUE(
      bit_equal(index(xt, {std::nullopt, sel.to(kGpu)}), index(x.t(), {std::nullopt, sel})));
}

TEST(IndexGpu, CompactionOnMillionsOfElementsMatchesTheCpu) {
  KILN_NEED_GPU();
  const int64_t n = 3000017;
  auto v = rand_vec(n, 12);
  Tensor x = from_vector(v).to(DType::Float32).reshape({n});
  Tensor mask = gt(x, 0.3);
  EXPECT_TRUE(bit_equal(masked_select(x.to(kGpu), mask.to(kGpu)), masked_select(x, mask)));
  Tensor x3 = x.narrow(0, 0, 100 * 150 * 197).reshape({100, 150, 197});
  Tensor m3 = gt(x3, 0.9);
  EXPECT_TRUE(bit_equal(nonzero(m3.to(kGpu)), nonzero(m3)));
  // transposed (non-contiguous) input: row-major order of the logical shape
  EXPECT_TRUE(bit_equal(nonzero(m3.to(kGpu).transpose(0, 2)), nonzero(m3.transpose(0, 2))));
  Tensor src = from_vector(rand_vec(n, 13)).to(DType::Float32);
  EXPECT_TRUE(bit_equal(masked_scatter(x.to(kGpu), mask.to(kGpu), src.to(kGpu)),
                        masked_scatter(x, mask, src)));
}

TEST(IndexGpu, GatherPast2To31ElementsUses64BitOffsets) {
  KILN_NEED_GPU();
  const int64_t n = (int64_t{1} << 31) + 4096;
  Tensor x = ones({n}, TensorOptions(DType::Int8).device(kGpu));
  x.narrow(0, n - 10, 10).fill_(7);
  Tensor idx = from_vector(std::vector<int64_t>{n - 1, 5, n - 10, n - 11, -1}).to(kGpu);
  auto got = host(gather(x, 0, idx));
  EXPECT_EQ(got, (std::vector<double>{7, 1, 7, 1, 7}));
  auto sel = host(index_select(x, 0, idx));
  EXPECT_EQ(sel, got);
  // nonzero over > 2^31 elements: only the last 10 are != 1 - 1
  Tensor y = sub(x, 1);
  Tensor nz = nonzero(y);
  ASSERT_EQ(nz.size(0), 10);
  EXPECT_EQ(host(nz.narrow(0, 0, 1).reshape({1}))[0], static_cast<double>(n - 10));
}

TEST(IndexGpu, OutOfRangeDeviceIndexRaisesAtTheNextSyncAndTheProcessGoesOn) {
  KILN_NEED_GPU();
  Tensor x = arange(0, 5, 1, TensorOptions(DType::Float32).device(kGpu));
  Tensor bad = from_vector(std::vector<int64_t>{1, 7, 2}).to(kGpu);
  Tensor y = gather(x, 0, bad);  // launches; the kernel reports, nothing throws yet
  try {
    (void)y.to(kCpu);
    FAIL() << "expected kiln::Error";
  } catch (const kiln::Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("[gather] index 7 is out of bounds for dimension 0 with size 5"),
              std::string::npos)
        << m;
  }
  // The slot is free again: good calls work, and a second bad call reports again, this time at
  // a stream synchronize.
  EXPECT_EQ(host(gather(x, 0, from_vector(std::vector<int64_t>{4, -5}).to(kGpu))),
            (std::vector<double>{4, 0}));
  Tensor z = index_select(x, 0, from_vector(std::vector<int64_t>{-6}).to(kGpu));
  EXPECT_THROW(cuda::current_stream().synchronize(), kiln::Error);
  // scatter_add and index_put report too; the item() of a later result raises.
  Tensor s = ones({1}, TensorOptions(DType::Float32).device(kGpu));
  Tensor w = scatter_add(x, 0, from_vector(std::vector<int64_t>{9}).to(kGpu), s);
  EXPECT_THROW((void)w.sum().item<float>(), kiln::Error);
  Tensor v = index_put(x, {from_vector(std::vector<int64_t>{-9}).to(kGpu)}, s);
  EXPECT_THROW((void)v.to(kCpu), kiln::Error);
  EXPECT_EQ(host(x), (std::vector<double>{0, 1, 2, 3, 4}));
}

}  // namespace
}  // namespace kiln
