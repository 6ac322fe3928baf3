// GPU sort-family tests beyond the op table's GPU-vs-CPU suite: large and many-line sorts (block,
// CUB and portable paths) against std::stable_sort references with PyTorch's NaN order, topk,
// descending int64 keys, and the selection/unique/count ops on lines long enough for the radix
// path, against the CPU kernels. Skip without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "kiln/cuda.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

#define KILN_NEED_GPU() \
  if (!cuda::is_available()) GTEST_SKIP() << "no GPU: GPU kernel tests need a cuda device"

const Device kGpu(kCUDA, 0);
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// KILN_GPU_SORT_PORTABLE=1 for the scope: long lines take the portable bitonic network.
struct PortableSort {
  explicit PortableSort(bool on) {
    if (on) setenv("KILN_GPU_SORT_PORTABLE", "1", 1);
  }
  ~PortableSort() { unsetenv("KILN_GPU_SORT_PORTABLE"); }
};

std::vector<double> host(const Tensor& t) {
  Tensor c = t.to(Device(kCPU)).to(DType::Float64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

std::vector<int64_t> host_i64(const Tensor& t) {
  Tensor c = t.to(Device(kCPU)).to(DType::Int64).contiguous();
  const int64_t* p = c.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + c.numel());
}

bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

// PyTorch's order: NaN greatest (all NaNs equal), -0.0 == 0.0.
bool less_nan_last(double a, double b) { return (!std::isnan(a) && std::isnan(b)) || a < b; }

// Stable argsort of v (one line).
template <class T, class Less>
std::vector<int64_t> stable_argsort(const std::vector<T>& v, bool desc, Less less) {
  std::vector<int64_t> o(v.size());
  std::iota(o.begin(), o.end(), 0);
  std::stable_sort(o.begin(), o.end(), [&](int64_t a, int64_t b) {
    return desc ? less(v[b], v[a]) : less(v[a], v[b]);
  });
  return o;
}

// Values with duplicates, NaNs, signed zeros and infinities.
std::vector<double> messy(int64_t n, uint64_t seed, bool specials = true) {
  std::mt19937_64 g(seed);
  std::uniform_int_distribution<int> u(-500, 500), s(0, 99);
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) {
    x = u(g) / 4.0;
    if (!specials) continue;
    const int r = s(g);
    if (r == 0) x = kNaN;
    if (r == 1) x = -0.0;
    if (r == 2) x = 0.0;
    if (r == 3) x = (u(g) > 0 ? kInf : -kInf);
  }
  return v;
}

// Checks sort(x, dim, desc) on the GPU against a stable reference, line by line. x is a CPU
// tensor whose values are exact in double.
void check_sort(const Tensor& x, int64_t dim, bool desc) {
  SCOPED_TRACE(std::string(dtype_name(x.dtype())) + " dim " + std::to_string(dim) +
               (desc ? " desc" : " asc"));
  auto [gv, gi] = sort(x.to(kGpu), dim, desc);
  ASSERT_TRUE(gv.is_cuda());
  // Lines along dim as rows of a [lines, n] view.
  Tensor xm = x.movedim({dim}, {-1}).contiguous();
  const int64_t n = x.size(dim), lines = x.numel() / n;
  std::vector<double> xv = host(xm), vv = host(gv.movedim({dim}, {-1}));
  std::vector<int64_t> iv = host_i64(gi.movedim({dim}, {-1}));
  int64_t bad = 0;
  for (int64_t l = 0; l < lines; ++l) {
    std::vector<double> line(xv.begin() + l * n, xv.begin() + (l + 1) * n);
    std::vector<int64_t> want = stable_argsort(line, desc, less_nan_last);
    for (int64_t i = 0; i < n && bad < 5; ++i) {
      const int64_t got = iv[l * n + i];
      if (got != want[i] || !same(vv[l * n + i], line[want[i]])) {
        ADD_FAILURE() << "line " << l << " rank " << i << ": got index " << got << " value "
                      << vv[l * n + i] << ", want index " << want[i] << " value " << line[want[i]];
        ++bad;
      }
    }
  }
}

TEST(GpuSort, MillionFloatsWithNaNsAndDuplicatesMatchStableReference) {
  KILN_NEED_GPU();
  const int64_t n = int64_t{1} << 20;
  Tensor x = from_vector(messy(n, 1)).to(DType::Float32);
  for (bool portable : {false, true}) {
    PortableSort ps(portable);
    SCOPED_TRACE(portable ? "portable bitonic" : "radix");
    for (bool desc : {false, true}) check_sort(x, 0, desc);
  }
  // And the CPU kernel agrees, indices included.
  auto [cv, ci] = sort(x, 0, true);
  auto [gv, gi] = sort(x.to(kGpu), 0, true);
  EXPECT_EQ(host_i64(gi), host_i64(ci));
}

TEST(GpuSort, ManyShortAndLongLinesAnyDimMatchStableReference) {
  KILN_NEED_GPU();
  struct Case {
    std::vector<int64_t> shape;
    int64_t dim;
  };
  // Block path (several lines per block, one line per block, the largest block line), CUB's
  // segmented path, strided lines (dim 0), a 3-d tensor with a middle dim.
  const std::vector<Case> cases = {{{3000, 37}, 1}, {{37, 3000}, 0}, {{3, 4096}, 1},
                                   {{6, 4097}, 1},  {{5000, 3}, 0},  {{4, 9, 700}, 1}};
  for (const Case& cs : cases)
    for (bool portable : {false, true}) {
      PortableSort ps(portable);
      int64_t numel = 1;
      for (int64_t s : cs.shape) numel *= s;
      Tensor base = from_vector(messy(numel, 7 + numel)).reshape(cs.shape);
      Tensor ints = from_vector(messy(numel, 9, false)).reshape(cs.shape).mul(4);
      check_sort(base.to(DType::Float32), cs.dim, false);
      check_sort(base.to(DType::Float64), cs.dim, true);
      check_sort(base.to(DType::BFloat16), cs.dim, true);
      check_sort(base.to(DType::Float16), cs.dim, false);
      check_sort(ints.to(DType::Int32), cs.dim, true);
      check_sort(ints.to(DType::Int16), cs.dim, false);
      check_sort(ints.abs().remainder(256).to(DType::UInt8), cs.dim, false);
      check_sort(ints.remainder(128).to(DType::Int8), cs.dim, true);
      check_sort(ints.gt(0), cs.dim, true);
    }
}

TEST(GpuSort, NonContiguousInputSortsLikeItsContiguousCopy) {
  KILN_NEED_GPU();
  Tensor x = from_vector(messy(64 * 1000, 3)).reshape({64, 1000}).to(DType::Float32);
  Tensor g = x.to(kGpu).transpose(0, 1);  // lines of stride 1000 along dim 1
  auto [v1, i1] = sort(g, 1, true);
  auto [v2, i2] = sort(g.contiguous(), 1, true);
  EXPECT_EQ(host_i64(i1), host_i64(i2));
  check_sort(x.transpose(0, 1), 1, true);
}

TEST(GpuSort, TopKMatchesCpuAndStableReference) {
  KILN_NEED_GPU();
  for (int64_t n : {300, 10000}) {
    Tensor x = from_vector(messy(64 * n, n)).reshape({64, n}).to(DType::Float32);
    Tensor g = x.to(kGpu);
    for (int64_t k : {int64_t{1}, int64_t{7}, n}) {
      for (bool largest : {true, false}) {
        SCOPED_TRACE("n " + std::to_string(n) + " k " + std::to_string(k) +
                     (largest ? " largest" : " smallest"));
        auto [gv, gi] = topk(g, k, 1, largest);
        auto [cv, ci] = topk(x, k, 1, largest);
        std::vector<int64_t> gis = host_i64(gi);
        EXPECT_EQ(gis, host_i64(ci));
        std::vector<double> xv = host(x), gvs = host(gv);
        for (int64_t l = 0; l < 64; ++l) {
          std::vector<double> line(xv.begin() + l * n, xv.begin() + (l + 1) * n);
          std::vector<int64_t> want = stable_argsort(line, largest, less_nan_last);
          for (int64_t i = 0; i < k; ++i) {
            ASSERT_EQ(gis[l * k + i], want[i]) << "line " << l << " rank " << i;
            ASSERT_TRUE(same(gvs[l * k + i], line[want[i]]));
          }
        }
      }
    }
  }
}

TEST(GpuSort, DescendingInt64KeysUseAllBits) {
  KILN_NEED_GPU();
  std::mt19937_64 g(11);
  for (int64_t n : {int64_t{100000}, int64_t{1000}}) {
    std::vector<int64_t> v(static_cast<size_t>(n));
    for (auto& x : v) x = static_cast<int64_t>(g()) >> (g() % 60);  // every magnitude
    v[0] = std::numeric_limits<int64_t>::min();
    v[1] = std::numeric_limits<int64_t>::max();
    v[2] = -1;
    v[3] = 0;
    v[4] = v[5];
    for (bool portable : {false, true}) {
      PortableSort ps(portable);
      auto [gv, gi] = sort(from_vector(v).to(kGpu), 0, true);
      std::vector<int64_t> want = stable_argsort(v, true, std::less<int64_t>());
      std::vector<int64_t> got_i = host_i64(gi), got_v = host_i64(gv);
      ASSERT_EQ(got_i, want);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got_v[i], v[want[i]]);
    }
  }
}

// Exact equality of every output (values compared with NaN == NaN).
void expect_same(const Tensor& got, const Tensor& want, const char* what) {
  SCOPED_TRACE(what);
  ASSERT_TRUE(got.is_cuda());
  ASSERT_EQ(got.sizes(), want.sizes());
  ASSERT_EQ(got.dtype(), want.dtype());
  if (want.dtype() == DType::Int64) {
    EXPECT_EQ(host_i64(got), host_i64(want));
    return;
  }
  std::vector<double> a = host(got), b = host(want);
  int64_t bad = 0;
  for (size_t i = 0; i < a.size() && bad < 5; ++i)
    if (!same(a[i], b[i])) {
      ADD_FAILURE() << "element " << i << ": got " << a[i] << ", want " << b[i];
      ++bad;
    }
}

TEST(GpuSort, SelectionsOnLongLinesMatchCpu) {
  KILN_NEED_GPU();
  Tensor x = from_vector(messy(7 * 20001, 5)).reshape({7, 20001}).to(DType::Float32);
  Tensor xn = from_vector(messy(7 * 20001, 6, false)).reshape({7, 20001}).to(DType::Float64);
  for (bool portable : {false, true}) {
    PortableSort ps(portable);
    for (const Tensor& t : {x, xn, x.transpose(0, 1).contiguous().transpose(0, 1)}) {
      Tensor g = t.to(kGpu);
      auto check2 = [](std::tuple<Tensor, Tensor> got, std::tuple<Tensor, Tensor> want,
                       const char* what) {
        expect_same(std::get<0>(got), std::get<0>(want), what);
        expect_same(std::get<1>(got), std::get<1>(want), what);
      };
      check2(kthvalue(g, 1234, 1), kthvalue(t, 1234, 1), "kthvalue");
      check2(median(g, 1), median(t, 1), "median");
      check2(nanmedian(g, 1), nanmedian(t, 1), "nanmedian");
      check2(mode(g, 1), mode(t, 1), "mode");
      expect_same(median(g), median(t), "median all");
      Tensor q = from_vector(std::vector<double>{0, 0.1, 0.5, 0.77, 1}).to(t.dtype());
      for (const char* how : {"linear", "lower", "higher", "midpoint", "nearest"}) {
        expect_same(quantile(g.to(DType::Float64), q.to(DType::Float64), 1, false, how),
                    quantile(t.to(DType::Float64), q.to(DType::Float64), 1, false, how), how);
        expect_same(nanquantile(g.to(DType::Float64), 0.3, 1, true, how),
                    nanquantile(t.to(DType::Float64), 0.3, 1, true, how), how);
      }
    }
  }
}

TEST(GpuSort, UniqueAndCountsMatchCpu) {
  KILN_NEED_GPU();
  std::vector<double> v = messy(200000, 8);
  for (bool portable : {false, true}) {
    PortableSort ps(portable);
    for (DType dt : {DType::Float32, DType::Int64, DType::BFloat16}) {
      Tensor t = from_vector(v).to(dt);
      if (dt == DType::Int64) t = from_vector(messy(200000, 8, false)).mul(4).to(dt);
      Tensor g = t.to(kGpu);
      auto [gu, ginv, gc] = unique(g, true, true, true);
      auto [cu, cinv, cc] = unique(t, true, true, true);
      expect_same(gu, cu, "unique values");
      expect_same(ginv, cinv, "unique inverse");
      expect_same(gc, cc, "unique counts");
      auto [gu2, ginv2, gc2] = unique_consecutive(g.narrow(0, 0, 5000), true, true);
      auto [cu2, cinv2, cc2] = unique_consecutive(t.narrow(0, 0, 5000), true, true);
      expect_same(gu2, cu2, "unique_consecutive values");
      expect_same(ginv2, cinv2, "unique_consecutive inverse");
      expect_same(gc2, cc2, "unique_consecutive counts");
      // Rows: few distinct values per column, so many equal rows.
      Tensor rows = t.narrow(0, 0, 3 * 6000).reshape({6000, 3}).remainder(3);
      auto [gr, grinv, grc] = unique(rows.to(kGpu), true, true, true, 0);
      auto [cr, crinv, crc] = unique(rows, true, true, true, 0);
      expect_same(gr, cr, "unique dim 0 values");
      expect_same(grinv, crinv, "unique dim 0 inverse");
      expect_same(grc, crc, "unique dim 0 counts");
    }
  }
}

TEST(GpuSort, HistcBincountSearchsortedMatchCpu) {
  KILN_NEED_GPU();
  std::vector<double> v = messy(1 << 20, 12);
  Tensor x = from_vector(v).to(DType::Float32);
  expect_same(histc(x.to(kGpu), 97, -100, 100), histc(x, 97, -100, 100), "histc");
  expect_same(histc(x.to(kGpu).to(DType::Float16), 10, -50, 50),
              histc(x.to(DType::Float16), 10, -50, 50), "histc float16");
  Tensor idx = from_vector(messy(300000, 13, false)).abs().mul(4).to(DType::Int64);
  Tensor w = from_vector(messy(300000, 14, false)).to(DType::Float64).div(7);
  expect_same(bincount(idx.to(kGpu)), bincount(idx), "bincount");
  for (bool portable : {false, true}) {
    PortableSort ps(portable);
    expect_same(bincount(idx.to(kGpu), w.to(kGpu), 5000), bincount(idx, w, 5000),
                "bincount weighted (sums in index order: exact)");
    expect_same(bincount(idx.to(kGpu), w.to(kGpu).to(DType::Float32)),
                bincount(idx, w.to(DType::Float32)), "bincount weighted float32");
  }
  Tensor seq = std::get<0>(sort(from_vector(messy(4 * 1000, 15)).reshape({4, 1000}), 1));
  Tensor vals = from_vector(messy(4 * 3000, 16)).reshape({4, 3000});
  for (bool right : {false, true}) {
    expect_same(searchsorted(seq.to(kGpu), vals.to(kGpu), false, right),
                searchsorted(seq, vals, false, right), "searchsorted");
    expect_same(searchsorted(seq[1].to(kGpu), vals.to(kGpu), true, right).to(DType::Int64),
                searchsorted(seq[1], vals, true, right).to(DType::Int64), "searchsorted 1-d");
    // An unsorted sequence with its argsort as the sorter (strided on the GPU).
    Tensor raw = from_vector(messy(4 * 1000, 17, false)).reshape({4, 1000});
    Tensor sorter = argsort(raw, 1, false, true);
    Tensor graw = raw.to(kGpu).t().contiguous().t();
    Tensor gsorter = sorter.to(kGpu).t().contiguous().t();
    expect_same(searchsorted(graw, vals.to(kGpu), false, right, std::nullopt, gsorter),
                searchsorted(raw, vals, false, right, std::nullopt, sorter), "searchsorted sorter");
  }
  // A CPU sorter with GPU boundaries is an error naming both devices, as PyTorch.
  Tensor s1 = from_vector(std::vector<double>{3, 1, 2});
  EXPECT_THROW(searchsorted(s1.to(kGpu), s1.to(kGpu), false, false, std::nullopt,
                            argsort(s1, 0, false, true)),
               Error);
}

}  // namespace
}  // namespace kiln
