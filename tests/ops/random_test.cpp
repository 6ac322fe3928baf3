// Unit tests of the random family beyond the op table: bit-exact values against the Philox
// stream, counters reserved per call, thread-count independence, reproducibility, strided
// outputs, distribution laws (moments and chi-square on 1e5-1e6 samples, 5-sigma bounds),
// multinomial and randperm frequencies, reduced-precision bounds, and error cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <vector>

#include "kernels/distributions.h"
#include "kernels/philox.h"
#include "kiln/kiln.h"
#include "kiln/ops/random.h"

namespace kiln {
namespace {

using u128 = unsigned __int128;
constexpr uint64_t kSeed = 20240917;

Generator gen(uint64_t seed = kSeed) {
  Generator g;
  g.manual_seed(seed);
  return g;
}

// The stream of a call that starts at offset 0 of `seed` (Note [Philox streams]).
uint32_t word(uint64_t seed, uint64_t j) { return philox_word(seed, 0, j); }
uint64_t draw64(uint64_t seed, uint64_t d) {
  return static_cast<uint64_t>(word(seed, 2 * d)) |
         (static_cast<uint64_t>(word(seed, 2 * d + 1)) << 32);
}

std::vector<double> vals(const Tensor& t) {
  Tensor c = t.to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}
std::vector<int64_t> ivals(const Tensor& t) {
  Tensor c = t.to(kInt64).contiguous();
  const int64_t* p = c.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + c.numel());
}

// Same dtype, shape and bytes (row-major).
::testing::AssertionResult same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.sizes() != b.sizes())
    return ::testing::AssertionFailure() << "dtype or shape differ";
  Tensor x = a.contiguous(), y = b.contiguous();
  if (std::memcmp(x.data_ptr(), y.data_ptr(), static_cast<size_t>(x.nbytes())) != 0)
    return ::testing::AssertionFailure() << "values differ";
  return ::testing::AssertionSuccess();
}

struct ThreadGuard {
  int old = get_num_threads();
  ~ThreadGuard() { set_num_threads(old); }
};

// ---- statistics -----------------------------------------------------------------------------

// |sample mean - mu| and |sample variance - var| within 5 standard errors; mu4 is the fourth
// central moment (the variance of the variance estimator is (mu4 - var^2) / n).
void expect_moments(const std::vector<double>& x, double mu, double var, double mu4) {
  const double n = static_cast<double>(x.size());
  double m = 0;
  for (double v : x) m += v;
  m /= n;
  double s2 = 0;
  for (double v : x) s2 += (v - mu) * (v - mu);
  s2 /= n;
  EXPECT_LE(std::abs(m - mu), 5 * std::sqrt(var / n)) << "mean " << m << " vs " << mu;
  EXPECT_LE(std::abs(s2 - var), 5 * std::sqrt((mu4 - var * var) / n))
      << "variance " << s2 << " vs " << var;
}

// Pearson's chi-square of counts against probabilities; categories of probability 0 must be
// empty. The bound is the chi-square quantile at about 3e-7 (Wilson-Hilferty with z = 5).
void expect_chi2(const std::vector<int64_t>& counts, const std::vector<double>& probs) {
  ASSERT_EQ(counts.size(), probs.size());
  const double n = std::accumulate(counts.begin(), counts.end(), 0.0);
  double stat = 0;
  int df = -1;
  for (size_t k = 0; k < counts.size(); ++k) {
    if (probs[k] == 0) {
      EXPECT_EQ(counts[k], 0) << "category " << k << " has probability 0";
      continue;
    }
    const double e = n * probs[k];
    stat += (counts[k] - e) * (counts[k] - e) / e;
    ++df;
  }
  const double a = 2.0 / (9.0 * df);
  const double bound = df * std::pow(1 - a + 5 * std::sqrt(a), 3);
  EXPECT_LE(stat, bound) << "chi-square " << stat << " with " << df << " degrees of freedom";
}

// Counts of x in equal-probability bins given by the increasing inner edges.
std::vector<int64_t> bin_counts(const std::vector<double>& x, const std::vector<double>& edges) {
  std::vector<int64_t> c(edges.size() + 1, 0);
  for (double v : x) ++c[std::upper_bound(edges.begin(), edges.end(), v) - edges.begin()];
  return c;
}

// ---- exact values -----------------------------------------------------------------------------

TEST(RandomExact, RandFloat32IsTheTop24BitsOfEachWord) {
  Tensor t = rand({1001}, gen(), kFloat32);
  const float* p = t.data_ptr<float>();
  for (int64_t i = 0; i < 1001; ++i) {
    const float ref = static_cast<float>(word(kSeed, i) >> 8) / 16777216.0f;
    ASSERT_EQ(p[i], ref) << i;
  }
}

TEST(RandomExact, RandFloat64IsTheTop53BitsOfEach64BitDraw) {
  Tensor t = rand({3, 333}, gen(), kFloat64);
  const double* p = t.data_ptr<double>();
  for (int64_t i = 0; i < 999; ++i)
    ASSERT_EQ(p[i], std::ldexp(static_cast<double>(draw64(kSeed, i) >> 11), -53)) << i;
}

TEST(RandomExact, RandnUsesBoxMullerPairs) {
  Tensor f = randn({257}, gen(), kFloat32);
  Tensor d = randn({257}, gen(), kFloat64);
  for (int64_t i = 0; i < 257; ++i) {
    const uint64_t p = i / 2;
    auto zf = rng_normal_pair_float(word(kSeed, 2 * p), word(kSeed, 2 * p + 1));
    auto zd = rng_normal_pair_double(draw64(kSeed, 2 * p), draw64(kSeed, 2 * p + 1));
    ASSERT_EQ(f.data_ptr<float>()[i], (i & 1) ? zf.second : zf.first) << i;
    ASSERT_EQ(d.data_ptr<double>()[i], (i & 1) ? zd.second : zd.first) << i;
  }
}

TEST(RandomExact, RandintIsMultiplyShiftOfEachDraw) {
  Tensor t = randint(-1000, 1000, {777}, gen());
  EXPECT_EQ(t.dtype(), kInt64);
  const int64_t* p = t.data_ptr<int64_t>();
  for (int64_t i = 0; i < 777; ++i)
    ASSERT_EQ(p[i],
              -1000 + static_cast<int64_t>((static_cast<u128>(draw64(kSeed, i)) * 2000) >> 64));
  // The full int64 range (2^64 values) takes each element's whole 128-bit counter: the high half.
  Tensor w = empty({513}, kInt64);
  w.random_(std::numeric_limits<int64_t>::min(), std::nullopt, gen());
  for (int64_t i = 0; i < 513; ++i)
    ASSERT_EQ(w.data_ptr<int64_t>()[i],
              static_cast<int64_t>(static_cast<uint64_t>(std::numeric_limits<int64_t>::min()) +
                                   draw64(kSeed, 2 * i + 1)));
}

// ---- counters, reproducibility --------------------------------------------------------------

TEST(RandomState, EachCallReservesCeilOfWordsOverFour) {
  Generator g = gen();
  uint64_t off = 0;
  auto expect_adv = [&](uint64_t counters) {
    off += counters;
    EXPECT_EQ(g.get_offset(), off);
  };
  rand({10}, g, kFloat32);  // 1 word each
  expect_adv(3);
  rand({10}, g, kBFloat16);
  expect_adv(3);
  randn({5}, g, kFloat64);  // 2 words each
  expect_adv(3);
  randint(0, 7, {5}, g);  // range <= 2^32: 2 words
  expect_adv(3);
  randint(0, int64_t{1} << 40, {3}, g);  // wider: 4 words
  expect_adv(3);
  randperm(5, g);  // one 64-bit key per index
  expect_adv(3);
  multinomial(ones({2, 3}), 5, true, g);  // 10 draws of 2 words
  expect_adv(5);
  multinomial(ones({2, 3}), 2, false, g);  // one draw per category
  expect_adv(3);
  Tensor e = empty({4}, kInt32);
  e.bernoulli_(0.5, g);  // integer outputs use double math
  expect_adv(2);
  rand({0}, g);
  expect_adv(0);
}

TEST(RandomState, SameSeedReproducesAndConsecutiveCallsDiffer) {
  manual_seed(77);
  Tensor a = randn({64});
  Tensor b = randn({64});
  manual_seed(77);
  Tensor c = randn({64});
  EXPECT_TRUE(same_bits(a, c));
  EXPECT_FALSE(same_bits(a, b));
  Generator g = gen(5);
  Tensor x = rand({100}, g), y = rand({100}, g);
  EXPECT_FALSE(same_bits(x, y));
  EXPECT_TRUE(same_bits(x, rand({100}, gen(5))));
  EXPECT_FALSE(same_bits(x, rand({100}, gen(6))));
}

TEST(RandomState, TwoCallsEqualOneLongCallWhenTheFirstEndsOnABlock) {
  // Note [Philox streams]: true exactly when n1 * k is a multiple of 4.
  auto check = [](std::function<Tensor(int64_t, Generator&)> f, int64_t n1, int64_t n2) {
    Generator g = gen();
    Tensor a = f(n1, g), b = f(n2, g);
    Generator h = gen();
    Tensor all = f(n1 + n2, h);
    EXPECT_TRUE(same_bits(a, all.slice(0, 0, n1)));
    EXPECT_TRUE(same_bits(b, all.slice(0, n1, n1 + n2)));
  };
  check([](int64_t n, Generator& g) { return rand({n}, g, kFloat32); }, 8, 13);
  check([](int64_t n, Generator& g) { return randn({n}, g, kFloat32); }, 12, 7);
  check([](int64_t n, Generator& g) { return randn({n}, g, kFloat64); }, 6, 9);
  check([](int64_t n, Generator& g) { return randint(-5, 5, {n}, g); }, 10, 3);
  check([](int64_t n, Generator& g) { return randint(0, int64_t{1} << 50, {n}, g); }, 3, 5);
}

// ---- thread-count independence --------------------------------------------------------------

TEST(RandomThreads, ValuesDoNotDependOnTheThreadCount) {
  ThreadGuard guard;
  const int64_t n = 1000003;  // odd: chunk borders fall inside Philox blocks and normal pairs
  std::vector<std::pair<const char*, std::function<Tensor()>>> ops = {
      {"rand f32", [&] { return rand({n}, gen(), kFloat32); }},
      {"rand f64", [&] { return rand({n}, gen(), kFloat64); }},
      {"rand bf16", [&] { return rand({n}, gen(), kBFloat16); }},
      {"randn f32", [&] { return randn({n}, gen(), kFloat32); }},
      {"randn f64", [&] { return randn({n}, gen(), kFloat64); }},
      {"randn f16", [&] { return randn({n}, gen(), kFloat16); }},
      {"normal tensors",
       [&] {
         return normal(rand({1000, 1003}, gen(1)), ones({1003}), gen());
       }},
      {"log_normal_", [&] { return empty({n}).log_normal_(0, 1, gen()); }},
      {"exponential_", [&] { return empty({n}, kFloat64).exponential_(3, gen()); }},
      {"geometric_", [&] { return empty({n}, kInt32).geometric_(0.1, gen()); }},
      {"cauchy_", [&] { return empty({n}).cauchy_(0, 1, gen()); }},
      {"bernoulli_", [&] { return empty({n}, kInt8).bernoulli_(0.3, gen()); }},
      {"bernoulli p", [&] { return bernoulli(rand({n}, gen(2)), gen()); }},
      {"randint", [&] { return randint(-3, 1000, {n}, gen()); }},
      {"random_ int64", [&] { return empty({n}, kInt64).random_(gen()); }},
      {"randperm", [&] { return randperm(300007, gen()); }},
      {"multinomial repl",
       [&] {
         return multinomial(rand({3, 100}, gen(3)), 200001, true, gen());
       }},
      {"multinomial",
       [&] {
         return multinomial(rand({5003, 50}, gen(4)), 7, false, gen());
       }},
  };
  for (auto& [name, f] : ops) {
    SCOPED_TRACE(name);
    set_num_threads(1);
    Tensor one = f();
    for (int t : {2, 3}) {
      set_num_threads(t);
      EXPECT_TRUE(same_bits(one, f())) << t << " threads";
    }
  }
}

// ---- strided outputs ------------------------------------------------------------------------

TEST(RandomStrided, ElementsGetValuesByLogicalRowMajorIndex) {
  Tensor t = empty({300, 200}).t();  // [200, 300], column-major in memory
  ASSERT_FALSE(t.is_contiguous());
  t.uniform_(0, 1, gen());
  EXPECT_TRUE(same_bits(t, rand({200, 300}, gen())));

  Tensor buf = zeros({4, 10}, kFloat64);
  Tensor v = buf.slice(1, 0, std::nullopt, 2);  // every other column
  v.normal_(0, 1, gen());
  EXPECT_TRUE(same_bits(v, randn({4, 5}, gen(), kFloat64)));
  for (double x : vals(buf.slice(1, 1, std::nullopt, 2))) EXPECT_EQ(x, 0.0);

  Tensor p = empty({5, 6, 7}, kInt32).permute({2, 0, 1});
  p.random_(0, 100, gen());
  EXPECT_TRUE(same_bits(p, randint(0, 100, {7, 5, 6}, gen(), kInt32)));

  Tensor b = empty({64, 33}, kBool).t();
  b.bernoulli_(0.5, gen());
  Tensor b2 = empty({33, 64}, kBool);
  b2.bernoulli_(0.5, gen());
  EXPECT_TRUE(same_bits(b, b2));
}

TEST(RandomStrided, BernoulliTensorPBroadcastsToSelf) {
  Tensor p = tensor({0.0, 1.0, 0.5}, kFloat64);
  Tensor x = empty({40000, 3}, kFloat32);
  x.bernoulli_(p, gen());
  const auto v = vals(x);
  int64_t ones_mid = 0;
  for (int64_t i = 0; i < 40000; ++i) {
    ASSERT_EQ(v[3 * i], 0.0);
    ASSERT_EQ(v[3 * i + 1], 1.0);
    ones_mid += v[3 * i + 2] == 1.0;
  }
  expect_chi2({40000 - ones_mid, ones_mid}, {0.5, 0.5});
}

// ---- distribution laws ----------------------------------------------------------------------

constexpr int64_t kN = 1000000;

TEST(RandomLaws, Uniform) {
  for (DType d : {kFloat32, kFloat64, kBFloat16}) {
    SCOPED_TRACE(dtype_name(d));
    Tensor t = empty({kN}, d).uniform_(-2, 3, gen());
    const auto x = vals(t);
    EXPECT_GE(*std::min_element(x.begin(), x.end()), -2.0);
    EXPECT_LT(*std::max_element(x.begin(), x.end()), 3.0);
    // (bfloat16 rounding moves the variance by about step^2 / 12 < 3e-5, far inside the bound.)
    const double w = 5;
    expect_moments(x, 0.5, w * w / 12, std::pow(w, 4) / 80);
    std::vector<double> edges;
    for (int k = 1; k < 20; ++k) edges.push_back(-2 + w * k / 20.0);
    if (d != kBFloat16) expect_chi2(bin_counts(x, edges), std::vector<double>(20, 0.05));
  }
}

TEST(RandomLaws, UniformStaysBelowOneAfterRounding) {
  for (DType d : {kBFloat16, kFloat16}) {
    SCOPED_TRACE(dtype_name(d));
    const auto x = vals(rand({1 << 21}, gen(), d));
    const double below_one = d == kBFloat16 ? 1 - std::ldexp(1.0, -8) : 1 - std::ldexp(1.0, -11);
    EXPECT_EQ(*std::max_element(x.begin(), x.end()), below_one);
    EXPECT_GE(*std::min_element(x.begin(), x.end()), 0.0);
  }
  const auto y = vals(empty({1 << 20}, kBFloat16).uniform_(-1, 0.5, gen()));
  EXPECT_LT(*std::max_element(y.begin(), y.end()), 0.5);
}

TEST(RandomLaws, Normal) {
  // Equal-probability bins of N(0, 1) from its quantiles (bisection on erf).
  std::vector<double> edges;
  for (int k = 1; k < 25; ++k) {
    double lo = -10, hi = 10;
    for (int it = 0; it < 200; ++it) {
      const double mid = (lo + hi) / 2;
      (0.5 * std::erfc(-mid / std::sqrt(2.0)) < k / 25.0 ? lo : hi) = mid;
    }
    edges.push_back(lo);
  }
  for (DType d : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    SCOPED_TRACE(dtype_name(d));
    const auto x = vals(empty({kN}, d).normal_(1, 2, gen()));
    expect_moments(x, 1, 4, 48);
    std::vector<double> z;
    for (double v : x) z.push_back((v - 1) / 2);
    if (d == kFloat32 || d == kFloat64)
      expect_chi2(bin_counts(z, edges), std::vector<double>(25, 0.04));
  }
  // Complex: real and imaginary parts are independent N(0, 1/2).
  Tensor c = randn({kN}, gen(), kComplex64);
  expect_moments(vals(c.real()), 0, 0.5, 0.75);
  expect_moments(vals(c.imag()), 0, 0.5, 0.75);
}

TEST(RandomLaws, NormalWithTensorsIsMeanPlusStdTimesRandn) {
  Tensor mean = rand({300, 1}, gen(8)), sd = rand({1, 200}, gen(9));
  Tensor got = normal(mean, sd, gen());
  Tensor z = randn({300, 200}, gen());
  const auto g = vals(got), m = vals(mean), s = vals(sd), zz = vals(z);
  for (int64_t i = 0; i < 300; ++i)
    for (int64_t j = 0; j < 200; ++j) {
      const double ref = m[i] + s[j] * zz[i * 200 + j];
      ASSERT_NEAR(g[i * 200 + j], ref, 1e-6 * (1 + std::abs(ref)));
    }
  Tensor f = normal(2.0, 3.0, {kN}, gen(), kFloat64);
  expect_moments(vals(f), 2, 9, 3 * 81);
}

TEST(RandomLaws, ExponentialLogNormalCauchy) {
  for (DType d : {kFloat32, kFloat64}) {
    SCOPED_TRACE(dtype_name(d));
    // Exponential(2): mean 1/2, variance 1/4, fourth central moment 9/16.
    expect_moments(vals(empty({kN}, d).exponential_(2, gen())), 0.5, 0.25, 9.0 / 16);
    // log of LogNormal(0.2, 0.5) is N(0.2, 0.25).
    auto ln = vals(empty({kN}, d).log_normal_(0.2, 0.5, gen()));
    for (double& v : ln) v = std::log(v);
    expect_moments(ln, 0.2, 0.25, 3 * 0.0625);
    // Cauchy(1, 2) in ten bins of equal probability.
    std::vector<double> edges;
    for (int k = 1; k < 10; ++k) edges.push_back(1 + 2 * std::tan(M_PI * (k / 10.0 - 0.5)));
    expect_chi2(bin_counts(vals(empty({kN}, d).cauchy_(1, 2, gen())), edges),
                std::vector<double>(10, 0.1));
  }
  // Rounding to float16 never produces 0 (values around 1e-4: many would underflow).
  const auto h = vals(empty({kN}, kFloat16).exponential_(1e4, gen()));
  EXPECT_GT(*std::min_element(h.begin(), h.end()), 0.0);
}

TEST(RandomLaws, Geometric) {
  const double p = 0.3;
  for (DType d : {kFloat32, kFloat64, kInt64}) {
    SCOPED_TRACE(dtype_name(d));
    const auto x = ivals(empty({kN}, d).geometric_(p, gen()));
    std::vector<int64_t> counts(16, 0);  // values 1..15, then the tail
    for (int64_t v : x) {
      ASSERT_GE(v, 1);
      ++counts[std::min<int64_t>(v, 16) - 1];
    }
    std::vector<double> probs;
    for (int k = 1; k <= 15; ++k) probs.push_back(std::pow(1 - p, k - 1) * p);
    probs.push_back(std::pow(1 - p, 15));
    expect_chi2(counts, probs);
  }
}

TEST(RandomLaws, Bernoulli) {
  for (DType d : {kFloat32, kFloat64, kBool, kUInt8}) {
    SCOPED_TRACE(dtype_name(d));
    const auto x = ivals(empty({kN}, d).bernoulli_(0.3, gen()));
    int64_t ones = 0;
    for (int64_t v : x) {
      ASSERT_TRUE(v == 0 || v == 1);
      ones += v;
    }
    expect_chi2({kN - ones, ones}, {0.7, 0.3});
  }
  const auto z = ivals(bernoulli(zeros({1000}), gen()));
  const auto o = ivals(bernoulli(ones({1000}), gen()));
  for (int64_t i = 0; i < 1000; ++i) ASSERT_TRUE(z[i] == 0 && o[i] == 1);
  const auto q = ivals(bernoulli(zeros({kN}, kFloat16), 0.25, gen()));
  expect_chi2({kN - std::accumulate(q.begin(), q.end(), int64_t{0}),
               std::accumulate(q.begin(), q.end(), int64_t{0})},
              {0.75, 0.25});
}

TEST(RandomLaws, IntegersAreUniform) {
  {
    const auto x = ivals(randint(-3, 7, {kN}, gen(), kInt8));
    std::vector<int64_t> c(10, 0);
    for (int64_t v : x) {
      ASSERT_TRUE(v >= -3 && v < 7);
      ++c[v + 3];
    }
    expect_chi2(c, std::vector<double>(10, 0.1));
  }
  {
    const auto x = ivals(empty({kN}, kUInt8).random_(gen()));  // [0, 255]
    std::vector<int64_t> c(256, 0);
    for (int64_t v : x) ++c[v];
    expect_chi2(c, std::vector<double>(256, 1.0 / 256));
  }
  {
    const auto x = ivals(empty({kN}, kBool).random_(gen()));
    const int64_t ones = std::accumulate(x.begin(), x.end(), int64_t{0});
    expect_chi2({kN - ones, ones}, {0.5, 0.5});
  }
  {
    // float16: integers in [0, 2048]; mean 1024, variance (2049^2 - 1) / 12.
    const auto x = vals(empty({kN}, kFloat16).random_(gen()));
    for (double v : x) ASSERT_TRUE(v >= 0 && v <= 2048 && v == std::floor(v));
    const double var = (2049.0 * 2049.0 - 1) / 12;
    expect_moments(x, 1024, var, 9.0 / 5 * var * var);
  }
  {
    // int64 random_(): [0, 2^63 - 1]; the top 8 bits below the sign are uniform.
    Tensor t = empty({kN}, kInt64).random_(gen());
    const int64_t* p = t.data_ptr<int64_t>();
    std::vector<int64_t> c(256, 0);
    for (int64_t i = 0; i < kN; ++i) {
      ASSERT_GE(p[i], 0);
      ++c[p[i] >> 55];
    }
    expect_chi2(c, std::vector<double>(256, 1.0 / 256));
    // The full int64 range: the sign is a fair coin.
    Tensor w = randint(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
                       {kN}, gen());
    int64_t neg = 0;
    for (int64_t v : ivals(w)) neg += v < 0;
    expect_chi2({neg, kN - neg}, {0.5, 0.5});
  }
}

// ---- multinomial ----------------------------------------------------------------------------

TEST(RandomMultinomial, WithReplacementFollowsTheWeights) {
  Tensor w = tensor({0.2, 0.0, 0.6, 1.2});  // probabilities 0.1, 0, 0.3, 0.6
  Tensor s = multinomial(w, 600000, true, gen());
  EXPECT_EQ(s.sizes(), IntArrayRef({600000}));
  EXPECT_EQ(s.dtype(), kInt64);
  std::vector<int64_t> c(4, 0);
  for (int64_t v : ivals(s)) ++c[v];
  expect_chi2(c, {0.1, 0.0, 0.3, 0.6});
}

TEST(RandomMultinomial, WithoutReplacementDrawsInOrderWithoutRepeats) {
  const std::vector<double> p = {0.1, 0.2, 0.3, 0.4};
  const int64_t rows = 200000;
  Tensor w = tensor({1.0, 2.0, 3.0, 4.0}, kFloat32).unsqueeze(0).expand({rows, 4}).contiguous();
  Tensor s = multinomial(w, 2, false, gen());
  ASSERT_EQ(s.sizes(), IntArrayRef({rows, 2}));
  const auto v = ivals(s);
  std::vector<int64_t> c(16, 0);
  std::vector<double> probs(16, 0);
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b)
      if (a != b) probs[a * 4 + b] = p[a] * p[b] / (1 - p[a]);
  for (int64_t r = 0; r < rows; ++r) ++c[v[2 * r] * 4 + v[2 * r + 1]];
  expect_chi2(c, probs);  // repeats (a == b) have probability 0

  // All categories: a permutation; zero weights are never drawn while others remain.
  Tensor all = multinomial(tensor({{1.0, 5.0, 2.0}, {0.0, 1.0, 1.0}}), 2, false, gen());
  const auto a = ivals(all);
  EXPECT_NE(a[0], a[1]);
  EXPECT_TRUE((a[2] == 1 && a[3] == 2) || (a[2] == 2 && a[3] == 1));
  Tensor full3 = multinomial(tensor({3.0, 1.0, 2.0}), 3, false, gen());
  auto f = ivals(full3);
  std::sort(f.begin(), f.end());
  EXPECT_EQ(f, (std::vector<int64_t>{0, 1, 2}));
}

// ---- randperm -------------------------------------------------------------------------------

TEST(RandomRandperm, IsAPermutation) {
  for (int64_t n : {int64_t{1}, int64_t{1000}, int64_t{100003}}) {
    auto v = ivals(randperm(n, gen()));
    std::sort(v.begin(), v.end());
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(v[i], i);
  }
  auto h = ivals(randperm(2049, gen(), kFloat16));
  std::sort(h.begin(), h.end());
  for (int64_t i = 0; i < 2049; ++i) ASSERT_EQ(h[i], i);
}

TEST(RandomRandperm, AllSixPermutationsOfThreeAreEquallyLikely) {
  Generator g = gen();
  std::map<std::vector<int64_t>, int64_t> c;
  const int64_t n = 60000;
  for (int64_t i = 0; i < n; ++i) ++c[ivals(randperm(3, g))];
  ASSERT_EQ(c.size(), 6u);
  std::vector<int64_t> counts;
  for (auto& [perm, k] : c) counts.push_back(k);
  expect_chi2(counts, std::vector<double>(6, 1.0 / 6));
}

// ---- *_like, errors ---------------------------------------------------------------------------

TEST(RandomApi, LikeFunctionsKeepShapeAndDtype) {
  Tensor t = zeros({3, 4}, kFloat64);
  EXPECT_EQ(rand_like(t).dtype(), kFloat64);
  EXPECT_EQ(randn_like(t).sizes(), IntArrayRef({3, 4}));
  Tensor i = randint_like(zeros({5, 6}, kInt32), 3, 9);
  EXPECT_EQ(i.dtype(), kInt32);
  for (int64_t v : ivals(i)) EXPECT_TRUE(v >= 3 && v < 9);
  EXPECT_EQ(randint(10, {2}).dtype(), kInt64);
  EXPECT_EQ(randperm(4).dtype(), kInt64);
  EXPECT_EQ(rand({2}, TensorOptions(kFloat16)).dtype(), kFloat16);
}

TEST(RandomApi, FailedCallsLeaveTheGeneratorUnchanged) {
  Generator g = gen();
  rand({3}, g);
  const uint64_t off = g.get_offset();
  auto expect_error = [&](const char* what, std::function<void()> f) {
    try {
      f();
      ADD_FAILURE() << "expected kiln::Error containing " << what;
    } catch (const kiln::Error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
    EXPECT_EQ(g.get_offset(), off);
  };
  expect_error("negative probability", [&] { multinomial(tensor({1.0, -1.0}), 1, true, g); });
  expect_error("all probabilities to be in [0, 1]", [&] { bernoulli(tensor({0.5, 2.0}), g); });
  expect_error("all elements of std >= 0.0", [&] { normal(zeros({2}), tensor({1.0, -1.0}), g); });
  expect_error("'low' to be less than 'high'", [&] { randint(3, 3, {2}, g); });
  expect_error("expected a floating point or complex dtype, got int32",
               [&] { randn({2}, g, kInt32); });
  expect_error("[uniform_] expected a 'cpu' generator",
               [&] { rand({2}, Generator(Device(DeviceType::CUDA)), kFloat32); });
  expect_error("[randperm] not implemented for dtype complex64",
               [&] { randperm(3, g, kComplex64); });
  expect_error("[uniform_] expected a floating point tensor",
               [&] { empty({2}, kFloat8_e4m3fn).uniform_(0, 1, g); });
}

}  // namespace
}  // namespace kiln
