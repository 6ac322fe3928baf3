// Unit tests of the reductions beyond the op table: summation accuracy (2^24 ones, 1e7 x 0.1f),
// independence from the thread count, var stability for large offsets, NaN/tie rules, empty and
// 0-dim inputs, dtypes of results, out= forms, and error messages.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/reduce_stats_ops.h"
#include "kiln/kiln.h"
#include "kiln/ops/reduce.h"

namespace kiln {
namespace {

// Restores the thread count when a test ends.
struct ThreadGuard {
  int saved = get_num_threads();
  ~ThreadGuard() { set_num_threads(saved); }
};

std::vector<float> random_floats(size_t n, uint64_t seed, float lo = -1, float hi = 1) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(g);
  return v;
}

template <class T>
std::vector<T> values_of(const Tensor& t) {
  Tensor c = t.contiguous();
  const T* p = c.data_ptr<T>();
  return std::vector<T>(p, p + c.numel());
}

// Bitwise equality of two float tensors (NaNs with equal bits count as equal).
template <class T>
bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes() || a.dtype() != b.dtype()) return false;
  auto x = values_of<T>(a), y = values_of<T>(b);
  return std::memcmp(x.data(), y.data(), x.size() * sizeof(T)) == 0;
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ReduceSum, OnesPast2To24AreExact) {
  ThreadGuard guard;
  const int64_t n = (int64_t(1) << 24) + 1000;
  Tensor x = ones({n}, kFloat32);
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    // A float accumulator that adds one at a time stops at 2^24.
    EXPECT_EQ(x.sum().item<double>(), static_cast<double>(n)) << threads << " threads";
    EXPECT_EQ(x.view({1, n}).sum(1).item<double>(), static_cast<double>(n));
    // Lane mode (outer reduction): 2^24 + 1000 rows of 2 lanes.
    Tensor y = ones({n, 2}, kFloat32);
    std::vector<float> s = values_of<float>(y.sum(0));
    EXPECT_EQ(s[0], static_cast<float>(n));
    EXPECT_EQ(s[1], static_cast<float>(n));
  }
}

TEST(ReduceSum, TenMillionTenthsCloseToDoubleSum) {
  ThreadGuard guard;
  const int64_t n = 10'000'000;
  const float v = 0.1f;
  const double exact = static_cast<double>(v) * static_cast<double>(n);  // the stored values' sum
  Tensor x = full({n}, v, kFloat32);
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    const double got = x.sum().item<double>();
    // Pairwise summation's bound is about eps * log2(n) = 1.4e-6 relative; one float at a
    // time is off by about 9% here (adding 0.1 to 1e6 rounds to 0.0625 or 0.125).
    EXPECT_LT(std::fabs(got - exact) / exact, 1e-6) << got << " vs " << exact;
    const double got_lanes = values_of<float>(full({n / 4, 4}, v, kFloat32).sum(0))[3];
    const double exact_lanes = exact / 4;
    EXPECT_LT(std::fabs(got_lanes - exact_lanes) / exact_lanes, 1e-6);
  }
}

TEST(ReduceSum, RandomValuesErrorGrowsSlowly) {
  // Sum of 2^22 random floats against a double sum of the same floats.
  const int64_t n = int64_t(1) << 22;
  auto v = random_floats(n, 7, 0, 1);
  double ref = 0;
  for (float f : v) ref += f;
  Tensor x = from_vector(v);
  const double got = x.sum().item<double>();
  EXPECT_LT(std::fabs(got - ref) / ref, 1e-6);
}

struct Case {
  std::vector<int64_t> shape;
  std::vector<int64_t> dims;
};

TEST(ReduceThreads, ResultsDoNotDependOnThreadCount) {
  ThreadGuard guard;
  const std::vector<Case> cases = {
      {{1 << 22}, {0}},         // full reduction, chunked over the range
      {{3, 1 << 20}, {1}},      // few outputs, long inner reductions
      {{1 << 20, 3}, {0}},      // lane mode, few lanes
      {{1 << 16, 64}, {0}},     // lane mode, one block of 64 lanes
      {{4096, 300}, {1}},       // many outputs
      {{64, 512, 33}, {0, 2}},  // two reduced dims
      {{33, 2048, 17}, {1}},    // middle dim, lane mode with outer kept dims
  };
  for (const Case& cs : cases) {
    int64_t n = 1;
    for (int64_t s : cs.shape) n *= s;
    Tensor x = from_vector(random_floats(n, 11, -3, 3), cs.shape);
    std::vector<Tensor> r1, r2;
    auto all_ops = [&](std::vector<Tensor>& r) {
      r.push_back(x.sum(cs.dims));
      r.push_back(x.mean(cs.dims));
      r.push_back(x.var(cs.dims));
      r.push_back(x.norm(2, cs.dims));
      r.push_back(x.norm(3.5, cs.dims));
      r.push_back(x.logsumexp(cs.dims));
      r.push_back(x.to(kFloat16).sum(cs.dims).to(kFloat32));
      r.push_back(x.amax(cs.dims));
    };
    set_num_threads(1);
    all_ops(r1);
    set_num_threads(2);
    all_ops(r2);
    for (size_t i = 0; i < r1.size(); ++i)
      EXPECT_TRUE(same_bits<float>(r1[i], r2[i])) << "op " << i << " shape " << cs.shape[0];
    if (cs.dims.size() == 1) {
      set_num_threads(1);
      Tensor a1 = x.argmax(cs.dims[0]);
      set_num_threads(2);
      Tensor a2 = x.argmax(cs.dims[0]);
      EXPECT_TRUE(same_bits<int64_t>(a1, a2));
    }
  }
}

TEST(ReduceSum, OuterReductionMatchesDoubleLoops) {
  const int64_t rows = 100003, cols = 67;  // odd sizes: partial lane blocks and leaves
  auto v = random_floats(rows * cols, 3);
  Tensor x = from_vector(v, {rows, cols});
  std::vector<float> got = values_of<float>(x.sum(0));
  for (int64_t j = 0; j < cols; ++j) {
    double ref = 0;
    for (int64_t i = 0; i < rows; ++i) ref += v[i * cols + j];
    EXPECT_NEAR(got[j], ref, 1e-6 * rows) << j;
  }
}

TEST(ReduceVar, StableForLargeOffsets) {
  const int64_t n = 1 << 20;
  std::mt19937_64 g(5);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<double> v(n);
  for (auto& x : v) x = 1e8 + u(g);
  long double mean = 0;
  for (double x : v) mean += x;
  mean /= n;
  long double m2 = 0;
  for (double x : v) m2 += (x - mean) * (x - mean);
  const double ref = static_cast<double>(m2 / (n - 1));
  Tensor x = from_vector(v);
  EXPECT_NEAR(x.var().item<double>(), ref, 1e-9 * ref);
  auto [var, mu] = var_mean(x.view({1024, 1024}), {0, 1});
  EXPECT_NEAR(var.item<double>(), ref, 1e-9 * ref);
  EXPECT_NEAR(mu.item<double>(), static_cast<double>(mean), 1e-7);
  // float32 input with an offset far above the noise.
  std::vector<float> f(4096);
  for (size_t i = 0; i < f.size(); ++i) f[i] = 1e4f + static_cast<float>(i % 7) * 0.25f;
  long double fm = 0, fq = 0;
  for (float y : f) fm += y;
  fm /= f.size();
  for (float y : f) fq += (y - fm) * (y - fm);
  const double fref = static_cast<double>(fq / f.size());
  EXPECT_NEAR(from_vector(f).var({}, 0).item<double>(), fref, 1e-6 * fref);
}

TEST(ReduceMinMax, NanPropagatesAndFirstIndexWins) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = from_vector(std::vector<float>{1, 5, nan, 5, nan, 2});
  EXPECT_TRUE(std::isnan(x.amax().item<float>()));
  EXPECT_TRUE(std::isnan(x.min().item<float>()));
  EXPECT_EQ(x.argmax().item<int64_t>(), 2);
  EXPECT_EQ(x.argmin().item<int64_t>(), 2);
  Tensor y = from_vector(std::vector<float>{1, 5, 3, 5, -2, -2});
  EXPECT_EQ(y.argmax().item<int64_t>(), 1);
  EXPECT_EQ(y.argmin().item<int64_t>(), 4);
  auto [vals, idx] = y.view({2, 3}).max(1);
  EXPECT_EQ(values_of<float>(vals), (std::vector<float>{5, 5}));
  EXPECT_EQ(values_of<int64_t>(idx), (std::vector<int64_t>{1, 0}));
  // Long rows with the max repeated: the first occurrence, in inner and lane modes.
  std::vector<float> big(5000, 0.f);
  big[1234] = 7;
  big[4000] = 7;
  Tensor b = from_vector(big);
  EXPECT_EQ(b.argmax().item<int64_t>(), 1234);
  EXPECT_EQ(values_of<int64_t>(b.view({5000, 1}).expand({5000, 3}).argmax(0)),
            (std::vector<int64_t>{1234, 1234, 1234}));
}

TEST(ReduceMinMax, LongRowsWithNanAndInf) {
  // Long contiguous rows take the packed compare path; NaN and inf at various positions.
  for (DType dt : {kFloat32, kFloat64, kFloat16}) {
    for (int64_t pos : {0, 5, 16, 777, 999}) {
      auto v = random_floats(1000, 20 + pos, -5, 5);
      v[(pos + 500) % 1000] = INFINITY;
      v[(pos + 300) % 1000] = -INFINITY;
      Tensor x = from_vector(v).to(dt);
      EXPECT_EQ(x.amax().item<double>(), INFINITY);
      EXPECT_EQ(x.argmax().item<int64_t>(), (pos + 500) % 1000);
      EXPECT_EQ(x.amin().item<double>(), -INFINITY);
      EXPECT_EQ(x.argmin().item<int64_t>(), (pos + 300) % 1000);
      v[pos] = NAN;
      v[(pos + 123) % 1000] = NAN;
      Tensor y = from_vector(v).to(dt);
      EXPECT_TRUE(std::isnan(y.amax().item<double>())) << pos;
      EXPECT_TRUE(std::isnan(y.amin().item<double>())) << pos;
      EXPECT_EQ(y.argmax().item<int64_t>(), std::min(pos, (pos + 123) % 1000));
      EXPECT_EQ(y.argmin().item<int64_t>(), std::min(pos, (pos + 123) % 1000));
      // Without special values: the exact max and its first index.
      auto w = random_floats(1000, 40 + pos, -5, 5);
      w[pos] = 9;
      w[999] = 9;
      Tensor z = from_vector(w).to(dt);
      EXPECT_EQ(z.amax().item<double>(), 9.0);
      EXPECT_EQ(z.argmax().item<int64_t>(), pos);
      EXPECT_EQ(z.logsumexp(0).item<double>() >= 9.0, true);
    }
  }
}

TEST(ReduceEmpty, IdentitiesAndErrors) {
  Tensor e = zeros({0, 3}, kFloat32);
  EXPECT_EQ(values_of<float>(e.sum(0)), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(values_of<float>(e.prod(0)), (std::vector<float>{1, 1, 1}));
  EXPECT_TRUE(std::isnan(e.mean().item<float>()));
  EXPECT_EQ(e.sum(1).sizes(), IntArrayRef({0}));
  EXPECT_EQ(e.amax(1).numel(), 0);  // reduces a non-empty dim: fine
  EXPECT_FALSE(e.any().item<bool>());
  EXPECT_TRUE(e.all().item<bool>());
  EXPECT_EQ(e.logsumexp(0).sizes(), IntArrayRef({3}));
  EXPECT_TRUE(std::isinf(e.logsumexp(0)[0].item<float>()));
  EXPECT_NE(error_of([&] { e.amax(0); }).find("Expected reduction dim 0 to have non-zero size"),
            std::string::npos);
  EXPECT_NE(error_of([&] { e.argmax(0); }).find("Expected reduction dim 0"), std::string::npos);
  EXPECT_NE(error_of([&] { e.max(); }).find("Expected reduction dim to be specified"),
            std::string::npos);
  EXPECT_NE(error_of([&] { e.norm(INFINITY); }).find("empty tensor"), std::string::npos);
  EXPECT_EQ(e.norm(2).item<float>(), 0.f);
  EXPECT_EQ(e.count_nonzero().item<int64_t>(), 0);
}

TEST(ReduceZeroDim, DimZeroAndMinusOne) {
  Tensor s = full({}, 3.5, kFloat64);
  EXPECT_EQ(s.sum(0).item<double>(), 3.5);
  EXPECT_EQ(s.sum(-1, true).dim(), 0);
  EXPECT_EQ(s.amax(0).item<double>(), 3.5);
  EXPECT_EQ(s.argmax(0).item<int64_t>(), 0);
  auto [v, i] = s.max(-1);
  EXPECT_EQ(v.item<double>(), 3.5);
  EXPECT_EQ(i.item<int64_t>(), 0);
  EXPECT_TRUE(std::isnan(s.var().item<double>()));  // one element, correction 1
  EXPECT_EQ(s.var({}, 0).item<double>(), 0.0);
  EXPECT_NE(error_of([&] { s.sum(1); }).find("dimension out of range"), std::string::npos);
}

TEST(ReduceDTypes, ResultTypes) {
  Tensor i = arange(10, kInt32);
  EXPECT_EQ(i.sum().dtype(), kInt64);
  EXPECT_EQ(i.sum().item<int64_t>(), 45);
  EXPECT_EQ(i.prod().dtype(), kInt64);
  EXPECT_EQ(i.sum(kInt32).dtype(), kInt32);
  EXPECT_EQ(i.sum(kFloat64).dtype(), kFloat64);
  EXPECT_EQ(ones({5}, kBool).sum().item<int64_t>(), 5);
  EXPECT_EQ(i.amax().dtype(), kInt32);
  EXPECT_EQ(i.argmax().dtype(), kInt64);
  EXPECT_EQ(i.to(kUInt8).any().dtype(), kUInt8);
  EXPECT_EQ(i.any().dtype(), kBool);
  EXPECT_EQ(i.logsumexp(0).dtype(), get_default_dtype());
  EXPECT_EQ(i.mean(kFloat64).item<double>(), 4.5);
  EXPECT_NE(error_of([&] { i.mean(); }).find("could not infer output dtype"), std::string::npos);
  EXPECT_NE(error_of([&] { i.var(); }).find("floating point and complex"), std::string::npos);
  EXPECT_NE(error_of([&] { i.norm(); }).find("floating point or complex"), std::string::npos);
  Tensor h = ones({4}, kFloat16);
  EXPECT_EQ(h.sum().dtype(), kFloat16);
  EXPECT_EQ(h.mean(kFloat32).dtype(), kFloat32);
  Tensor z = ones({3}, kComplex64);
  EXPECT_EQ(z.sum().dtype(), kComplex64);
  EXPECT_EQ(z.var().dtype(), kFloat32);
  EXPECT_EQ(z.norm().dtype(), kFloat32);
  EXPECT_NE(error_of([&] { z.amax(); }).find("complex"), std::string::npos);
  // Integer overflow wraps in int64, as PyTorch.
  Tensor big = full({2}, std::numeric_limits<int64_t>::max(), kInt64);
  EXPECT_EQ(big.sum().item<int64_t>(), int64_t(-2));
}

TEST(ReduceErrors, DimsAndOut) {
  Tensor x = ones({2, 3}, kFloat32);
  EXPECT_NE(error_of([&] { x.sum(2); }).find("dimension out of range"), std::string::npos);
  EXPECT_NE(error_of([&] { x.sum({1, -1}); }).find("appears multiple times"), std::string::npos);
  EXPECT_NE(error_of([&] { x.argmax(-3); }).find("dimension out of range"), std::string::npos);
  Tensor out = empty({5}, kFloat32);
  EXPECT_NE(error_of([&] { sum_out(out, x, 1); }).find("[sum]"), std::string::npos);
  Tensor out_i = empty({2}, kInt64);
  EXPECT_NE(error_of([&] { amax_out(out_i, x, 1); }).find("dtype"), std::string::npos);
  EXPECT_NE(error_of([&] { x.norm("nuc"); }).find("nuc"), std::string::npos);
}

TEST(ReduceOut, OutFormsWriteIntoTheGivenTensor) {
  Tensor x = arange(6, kFloat32).view({2, 3});
  Tensor out = empty({0}, kFloat32);
  sum_out(out, x, 1);
  EXPECT_EQ(values_of<float>(out), (std::vector<float>{3, 12}));
  Tensor out64 = empty({2}, kFloat64);
  mean_out(out64, x, 1);
  EXPECT_EQ(values_of<double>(out64), (std::vector<double>{1, 4}));
  Tensor vals = empty({3}, kFloat32), idx = empty({3}, kInt64);
  max_out(vals, idx, x, 0);
  EXPECT_EQ(values_of<float>(vals), (std::vector<float>{3, 4, 5}));
  EXPECT_EQ(values_of<int64_t>(idx), (std::vector<int64_t>{1, 1, 1}));
  Tensor o_int = empty({2}, kInt32);
  sum_out(o_int, arange(6, kInt32).view({2, 3}), 1);
  EXPECT_EQ(values_of<int32_t>(o_int), (std::vector<int32_t>{3, 12}));
  // A non-contiguous out= tensor.
  Tensor base = zeros({3, 2}, kFloat32);
  Tensor col = base.select(1, 1);
  sum_out(col, x, 0);
  EXPECT_EQ(values_of<float>(base), (std::vector<float>{0, 3, 0, 5, 0, 7}));
}

TEST(ReduceStats, SmallKnownValues) {
  // Values whose statistics are exact in binary: {1, 2, 3, 4}.
  Tensor x = arange(1, 5, 1, kFloat64);
  EXPECT_EQ(x.var().item<double>(), 5.0 / 3.0);
  EXPECT_EQ(x.var({}, 0).item<double>(), 1.25);
  EXPECT_EQ(var(x, true).item<double>(), 5.0 / 3.0);
  EXPECT_EQ(var(x, false).item<double>(), 1.25);
  EXPECT_EQ(x.std({}, 0).item<double>(), std::sqrt(1.25));
  EXPECT_EQ(x.norm(1).item<double>(), 10.0);
  EXPECT_EQ(x.norm(INFINITY).item<double>(), 4.0);
  EXPECT_EQ(x.norm(-INFINITY).item<double>(), 1.0);
  EXPECT_EQ(x.norm(0).item<double>(), 4.0);
  EXPECT_EQ(x.norm().item<double>(), std::sqrt(30.0));
  EXPECT_EQ(x.norm("fro").item<double>(), std::sqrt(30.0));
  EXPECT_EQ(linalg::vector_norm(x, 3).item<double>(), std::pow(100.0, 1.0 / 3.0));
  EXPECT_EQ(x.count_nonzero().item<int64_t>(), 4);
  auto [mn, mx] = x.aminmax();
  EXPECT_EQ(mn.item<double>(), 1.0);
  EXPECT_EQ(mx.item<double>(), 4.0);
  // logsumexp with huge and infinite values.
  Tensor l = from_vector(std::vector<double>{1000, 1000});
  EXPECT_NEAR(l.logsumexp(0).item<double>(), 1000 + std::log(2.0), 1e-12);
  Tensor li = from_vector(std::vector<double>{INFINITY, 1});
  EXPECT_EQ(li.logsumexp(0).item<double>(), INFINITY);
  Tensor ln = from_vector(std::vector<double>{-INFINITY, -INFINITY});
  EXPECT_EQ(ln.logsumexp(0).item<double>(), -INFINITY);
}

TEST(ReduceLogSumExp, FastExpWithinTwoUlps) {
  // The branch-free e^x (x <= 0) behind float logsumexp, against the double exponential.
  double worst = 0;
  for (int i = 0; i <= 2'000'000; ++i) {
    const float x = -87.0f * static_cast<float>(i) / 2'000'000.0f;
    const double want = std::exp(static_cast<double>(x));
    const double got = cpu::red::exp_nonpositive(x);
    worst = std::max(worst, std::fabs(got - want) / want);
  }
  EXPECT_LT(worst, 2.4e-7);  // 2 float ulps (2^-23 relative is 1.19e-7)
  EXPECT_EQ(cpu::red::exp_nonpositive(0.0f), 1.0f);
  EXPECT_EQ(cpu::red::exp_nonpositive(-INFINITY), 0.0f);
  EXPECT_EQ(cpu::red::exp_nonpositive(-1000.0f), 0.0f);
  EXPECT_TRUE(std::isnan(cpu::red::exp_nonpositive(NAN)));
  // logsumexp of float32 rows against a double reference.
  auto v = random_floats(64 * 1000, 9, -30, 30);
  Tensor x = from_vector(v, {1000, 64});
  std::vector<float> got = values_of<float>(x.logsumexp(1));
  for (int64_t r = 0; r < 1000; ++r) {
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < 64; ++j) m = std::max(m, static_cast<double>(v[r * 64 + j]));
    for (int64_t j = 0; j < 64; ++j) s += std::exp(v[r * 64 + j] - m);
    EXPECT_NEAR(got[r], m + std::log(s), 4e-6 * std::fabs(m + std::log(s)) + 1e-6) << r;
  }
}

}  // namespace
}  // namespace kiln
