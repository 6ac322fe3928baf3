// Tests of the CPU index_select row paths (behind embedding-style lookups): rows of 16 to 256
// bytes with prefetching, streamed stores for outputs over 8 MiB, 1-D gathers, negative and
// int32 indices, strided index vectors, and out-of-range errors, against plain loops.
#include <gtest/gtest.h>

#include <vector>

#include "kiln/kiln.h"
#include "kiln/ops/indexing.h"

namespace kiln {
namespace {

std::vector<double> vals(const Tensor& t) {
  Tensor c = t.to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

// out[r] = x[idx[r]] row by row (negative indices count from the end).
std::vector<double> select_ref(const Tensor& x, const std::vector<int64_t>& idx) {
  const std::vector<double> xv = vals(x);
  const int64_t n = x.size(0), w = x.numel() / n;
  std::vector<double> out;
  for (int64_t i : idx) {
    const int64_t r = i < 0 ? i + n : i;
    out.insert(out.end(), xv.begin() + r * w, xv.begin() + (r + 1) * w);
  }
  return out;
}

std::vector<int64_t> scattered(int64_t k, int64_t n, bool negative) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < k; ++i) {
    int64_t j = (i * 2654435761LL + 7) % n;
    v.push_back(negative && i % 3 == 0 ? j - n : j);
  }
  return v;
}

TEST(IndexSelectRows, RowSizesDtypesAndIndices) {
  manual_seed(31);
  struct Case {
    int64_t n, w;
    DType dt;
  };
  // Row bytes 16, 32, 48, 64, 128, 256 (fixed-size paths), 20 and 4 (general and 1-D paths).
  for (const Case& c : std::vector<Case>{{50, 4, kFloat32},
                                         {37, 8, kFloat32},
                                         {41, 12, kFloat32},
                                         {64, 16, kFloat32},
                                         {29, 16, kFloat64},
                                         {33, 64, kFloat32},
                                         {45, 5, kFloat32},
                                         {300, 1, kFloat32},
                                         {70, 2, kInt64}}) {
    Tensor x = (randn({c.n, c.w}) * 100).to(c.dt);
    if (c.w == 1) x = x.reshape({c.n});
    for (bool negative : {false, true})
      for (int64_t k : {int64_t{1}, int64_t{17}, int64_t{5000}}) {
        const std::vector<int64_t> idx = scattered(k, c.n, negative);
        Tensor it = from_vector(idx, {k}).to(kInt64);
        const std::vector<double> want = select_ref(x, idx);
        EXPECT_EQ(vals(index_select(x, 0, it)), want) << c.n << "x" << c.w << " k " << k;
        EXPECT_EQ(vals(index_select(x, 0, it.to(kInt32))), want) << "int32 index";
        // A strided index vector (every other element of a longer one).
        std::vector<int64_t> twice;
        for (int64_t i : idx) twice.push_back(i), twice.push_back(0);
        Tensor strided = from_vector(twice, {2 * k}).to(kInt64).slice(0, 0, 2 * k, 2);
        EXPECT_EQ(vals(index_select(x, 0, strided)), want) << "strided index";
      }
    Tensor bad = from_vector(std::vector<int64_t>{0, 1, c.n}, {3}).to(kInt64);
    EXPECT_THROW(index_select(x, 0, bad), Error);
    Tensor bad_neg = from_vector(std::vector<int64_t>{-c.n - 1}, {1}).to(kInt64);
    EXPECT_THROW(index_select(x, 0, bad_neg), Error);
  }
}

TEST(IndexSelectRows, LargeOutputsStreamTheirStores) {
  // 48000 rows of 64 float32 (256 bytes; 11.7 MiB out) and 300000 rows of 16 float32 (18 MiB).
  for (int64_t w : {int64_t{64}, int64_t{16}}) {
    const int64_t n = 1000, k = w == 64 ? 48000 : 300000;
    Tensor x = arange(static_cast<double>(n * w)).reshape({n, w}).to(kFloat32);
    const std::vector<int64_t> idx = scattered(k, n, true);
    Tensor out = index_select(x, 0, from_vector(idx, {k}).to(kInt64));
    const float* p = out.data_ptr<float>();
    int64_t wrong = 0;
    for (int64_t r = 0; r < k; ++r) {
      const int64_t src = idx[r] < 0 ? idx[r] + n : idx[r];
      for (int64_t j = 0; j < w; ++j) wrong += p[r * w + j] != static_cast<float>(src * w + j);
    }
    EXPECT_EQ(wrong, 0) << "rows of " << w;
    // An out-of-range index near the end of a large selection still raises.
    std::vector<int64_t> bad = idx;
    bad[k - 3] = n;
    EXPECT_THROW(index_select(x, 0, from_vector(bad, {k}).to(kInt64)), Error);
  }
}

}  // namespace
}  // namespace kiln
