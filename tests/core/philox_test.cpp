// Tests of src/kernels/philox.h (published known answers, Note [Philox streams]) and of
// src/kernels/distributions.h (statistics against closed forms, exact edge cases).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/distributions.h"
#include "kernels/philox.h"

namespace kiln {
namespace {

using u128 = unsigned __int128;

// ---- known answers ------------------------------------------------------------------------

struct Kat {
  uint32_t ctr[4];
  uint32_t key[2];
  uint32_t expected[4];
};

// Known-answer vectors of the Random123 distribution, file examples/kat_vectors (lines
// "philox4x32 10 ..." and "philox4x32 7 ..."; copy read from github.com/girving/random123-manual,
// the same lines D. E. Shaw Research quote in fs123 core123/ut/ut_philox.cpp). Each row:
// counter words 0..3, key words 0..1, expected output words 0..3.
const Kat kKat10[] = {
    {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    {{1, 0, 0, 0}, {1, 0}, {0xac08141b, 0xdfc5ccbe, 0x79c07a47, 0xa7f66093}},
    {{0, 0, 0, 0x80000000}, {0, 0x80000000}, {0xf7a0b371, 0xe51dc93d, 0x56ce135d, 0x1d4b5580}},
    {{0x452821e6, 0x38d01377, 0xbe5466cf, 0x34e90c6c},
     {0, 0xffffffff},
     {0x72ce44b3, 0xb44f9b78, 0x49af0267, 0x726813ac}},
    {{0, 0xffffffff, 0, 0}, {0, 1}, {0x00e94a67, 0x3524f44e, 0x22995230, 0xbb54df1e}},
    {{0, 0, 1, 0}, {1, 0}, {0x07071c12, 0x428264b6, 0x3909104b, 0x6da2bda2}},
};
const Kat kKat7[] = {
    {{0, 0, 0, 0}, {0, 0}, {0x5f6fb709, 0x0d893f64, 0x4f121f81, 0x4f730a48}},
    {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x5207ddc2, 0x45165e59, 0x4d8ee751, 0x8c52f662}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0x4dfccaba, 0x190a87f0, 0xc47362ba, 0xb6b5242a}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {1, 0},
     {0x64803f9b, 0xacd38b4b, 0x5ea00643, 0x770c3921}},
};

template <int R>
void check_kat(const Kat& k) {
  PhiloxBlock c{{k.ctr[0], k.ctr[1], k.ctr[2], k.ctr[3]}};
  PhiloxBlock out = Philox4x32R<R>(k.key[0], k.key[1])(c);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out.v[i], k.expected[i]) << "word " << i;
}

TEST(Philox, KnownAnswers10Rounds) {
  for (const Kat& k : kKat10) check_kat<10>(k);
}

TEST(Philox, KnownAnswers7Rounds) {
  for (const Kat& k : kKat7) check_kat<7>(k);
}

// The seed -> key and offset -> counter mapping of Note [Philox streams], checked on known
// answers whose counter words 2, 3 follow from a 64-bit offset.
TEST(Philox, SeedAndOffsetMapping) {
  // counter (0, 0xffffffff, 0, 0), key (0, 1): seed 2^32, counter 0xffffffff00000000.
  PhiloxBlock b = Philox4x32(uint64_t{1} << 32).block(0xffffffff00000000ull, 0);
  EXPECT_EQ(b.v[0], 0x00e94a67u);
  EXPECT_EQ(b.v[3], 0xbb54df1eu);
  // The 64-bit sum offset + block carries into word 2: (2^64 - 1) + 1 = counter (0, 0, 1, 0).
  b = Philox4x32(1).block(~uint64_t{0}, 1);
  EXPECT_EQ(b.v[0], 0x07071c12u);
  EXPECT_EQ(b.v[3], 0x6da2bda2u);
  // Seed 0, offset 0, block 0 is the all-zero vector.
  EXPECT_EQ(philox_word(0, 0, 2), 0xbc57ac4cu);
  EXPECT_EQ(philox_u64(0, 0, 1), 0x9b00dbd8bc57ac4cull);
}

TEST(Philox, HostMulHiLoMatchesWideProduct) {
  PhiloxCursor cur(7, 0);
  for (uint64_t j = 0; j < 2000; j += 2) {
    const uint32_t a = cur.word(j), b = cur.word(j + 1);
    uint32_t hi;
    const uint32_t lo = philox_mulhilo(a, b, &hi);
    const u128 p = static_cast<u128>(a) * b;
    EXPECT_EQ(lo, static_cast<uint32_t>(p));
    EXPECT_EQ(hi, static_cast<uint32_t>(p >> 32));
  }
}

// ---- Note [Philox streams] ----------------------------------------------------------------

// W[j] written out from the Note with 128-bit arithmetic, independent of PhiloxBlock::block.
uint32_t ref_word(uint64_t seed, uint64_t off, uint64_t j) {
  const u128 c = static_cast<u128>(off) + j / 4;
  PhiloxBlock ctr{{static_cast<uint32_t>(c), static_cast<uint32_t>(c >> 32),
                   static_cast<uint32_t>(c >> 64), static_cast<uint32_t>(c >> 96)}};
  return Philox4x32(static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32))(ctr).v[j % 4];
}

TEST(PhiloxStream, WordAccessorsAgreeWithTheNote) {
  for (uint64_t off : {uint64_t{0}, uint64_t{12345}, ~uint64_t{0} - 3}) {
    PhiloxCursor cur(0x123456789abcdefull, off);
    for (uint64_t j = 0; j < 64; ++j) {
      const uint32_t w = ref_word(0x123456789abcdefull, off, j);
      EXPECT_EQ(philox_word(0x123456789abcdefull, off, j), w);
      EXPECT_EQ(cur.word(j), w);
    }
    for (uint64_t d = 0; d < 32; ++d) {
      const uint64_t x = static_cast<uint64_t>(ref_word(0x123456789abcdefull, off, 2 * d)) |
                         static_cast<uint64_t>(ref_word(0x123456789abcdefull, off, 2 * d + 1))
                             << 32;
      EXPECT_EQ(philox_u64(0x123456789abcdefull, off, d), x);
      EXPECT_EQ(cur.u64(d), x);
    }
  }
}

TEST(PhiloxStream, CountersNeeded) {
  EXPECT_EQ(philox_counters(0, 1), 0u);
  EXPECT_EQ(philox_counters(1, 1), 1u);
  EXPECT_EQ(philox_counters(4, 1), 1u);
  EXPECT_EQ(philox_counters(5, 1), 2u);
  EXPECT_EQ(philox_counters(3, 2), 2u);
  EXPECT_EQ(philox_counters(7, 4), 7u);
}

// Element i of a float normal call, computed alone from the Note's words.
float normal_float_alone(uint64_t seed, uint64_t off, uint64_t i) {
  const uint64_t p = i / 2;
  return rng_normal_float(ref_word(seed, off, 2 * p), ref_word(seed, off, 2 * p + 1), i);
}
double normal_double_alone(uint64_t seed, uint64_t off, uint64_t i) {
  const uint64_t p = i / 2;
  auto x = [&](uint64_t d) {
    return rng_make_u64(ref_word(seed, off, 2 * d), ref_word(seed, off, 2 * d + 1));
  };
  return rng_normal_double(x(2 * p), x(2 * p + 1), i);
}

// A CPU loop over chunks with arbitrary boundaries (as a thread pool would split the work), and
// a GPU-style loop with one "thread" per counter run in reverse order, give the values each
// element computes alone.
TEST(PhiloxStream, ChunkingAndThreadsDoNotChangeValues) {
  const uint64_t seed = 42, off = 1000;
  const uint64_t n = 1001;  // odd: the last normal pair is half outside the output
  std::vector<float> alone_u(n), alone_z(n);
  std::vector<double> alone_zd(n);
  for (uint64_t i = 0; i < n; ++i) {
    alone_u[i] = rng_uniform_float(ref_word(seed, off, i));
    alone_z[i] = normal_float_alone(seed, off, i);
    alone_zd[i] = normal_double_alone(seed, off, i);
  }
  // Chunked CPU loop: chunk sizes 1, 2, 3, ... restart mid-counter and mid-pair.
  std::vector<float> u(n), z(n);
  std::vector<double> zd(n);
  uint64_t start = 0;
  for (uint64_t len = 1; start < n; ++len) {
    const uint64_t end = std::min(n, start + len);
    PhiloxCursor cur(seed, off);
    for (uint64_t i = start; i < end; ++i) {
      u[i] = rng_uniform_float(cur.word(i));
      const uint64_t p = i / 2;
      z[i] = rng_normal_float(cur.word(2 * p), cur.word(2 * p + 1), i);
      zd[i] = rng_normal_double(cur.u64(2 * p), cur.u64(2 * p + 1), i);
    }
    start = end;
  }
  EXPECT_EQ(u, alone_u);
  EXPECT_EQ(z, alone_z);
  EXPECT_EQ(zd, alone_zd);
  // One thread per counter: k = 1 -> 4 elements (two normal pairs), k = 2 -> 2 elements.
  std::vector<float> gu(n), gz(n);
  std::vector<double> gzd(n);
  for (uint64_t t = philox_counters(n, 1); t-- > 0;) {
    const PhiloxBlock b = Philox4x32(seed).block(off, t);
    const RngPair<float> z0 = rng_normal_pair_float(b.v[0], b.v[1]);
    const RngPair<float> z1 = rng_normal_pair_float(b.v[2], b.v[3]);
    const float zs[4] = {z0.first, z0.second, z1.first, z1.second};
    for (uint64_t e = 0; e < 4 && 4 * t + e < n; ++e) {
      gu[4 * t + e] = rng_uniform_float(b.v[e]);
      gz[4 * t + e] = zs[e];
    }
  }
  for (uint64_t t = philox_counters(n, 2); t-- > 0;) {
    const PhiloxBlock b = Philox4x32(seed).block(off, t);
    const RngPair<double> p =
        rng_normal_pair_double(rng_make_u64(b.v[0], b.v[1]), rng_make_u64(b.v[2], b.v[3]));
    if (2 * t < n) gzd[2 * t] = p.first;
    if (2 * t + 1 < n) gzd[2 * t + 1] = p.second;
  }
  EXPECT_EQ(gu, alone_u);
  EXPECT_EQ(gz, alone_z);
  EXPECT_EQ(gzd, alone_zd);
  // The words the last (unpaired) element reads lie inside the reserved counters.
  EXPECT_LT((2 * ((n - 1) / 2) + 1) / 4, philox_counters(n, 1));
  EXPECT_LT((2 * (2 * ((n - 1) / 2) + 1) + 1) / 4, philox_counters(n, 2));
}

// ---- statistics helpers -------------------------------------------------------------------

// Upper critical value of chi-square with df degrees of freedom at z standard deviations
// (Wilson-Hilferty); z = 5 is a false-alarm rate near 3e-7.
double chi2_critical(double df, double z = 5.0) {
  const double a = 2.0 / (9.0 * df);
  return df * std::pow(1.0 - a + z * std::sqrt(a), 3.0);
}

double chi2(const std::vector<double>& observed, const std::vector<double>& expected) {
  double s = 0;
  for (size_t i = 0; i < observed.size(); ++i) {
    const double d = observed[i] - expected[i];
    s += d * d / expected[i];
  }
  return s;
}

// Kolmogorov-Smirnov statistic sqrt(n) * D of the samples against the CDF F. The limit law
// gives P(sqrt(n) D > 2.7) ~ 2 exp(-2 * 2.7^2) ~ 9e-7.
template <class F>
double ks_statistic(std::vector<double> x, F cdf) {
  std::sort(x.begin(), x.end());
  const double n = static_cast<double>(x.size());
  double d = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double f = cdf(x[i]);
    d = std::max({d, f - i / n, (i + 1) / n - f});
  }
  return std::sqrt(n) * d;
}
constexpr double kKsCritical = 2.7;

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

struct Moments {
  double mean, var, skew, kurt;
};
Moments moments(const std::vector<double>& x) {
  const double n = static_cast<double>(x.size());
  double m = 0;
  for (double v : x) m += v;
  m /= n;
  double m2 = 0, m3 = 0, m4 = 0;
  for (double v : x) {
    const double d = v - m, d2 = d * d;
    m2 += d2;
    m3 += d2 * d;
    m4 += d2 * d2;
  }
  m2 /= n;
  m3 /= n;
  m4 /= n;
  return {m, m2, m3 / std::pow(m2, 1.5), m4 / (m2 * m2)};
}

constexpr uint64_t kN = 1000000;

std::vector<uint32_t> stream_words(uint64_t seed, uint64_t n) {
  std::vector<uint32_t> w(n);
  PhiloxCursor cur(seed, 0);
  for (uint64_t j = 0; j < n; ++j) w[j] = cur.word(j);
  return w;
}
std::vector<uint64_t> stream_u64(uint64_t seed, uint64_t n) {
  std::vector<uint64_t> x(n);
  PhiloxCursor cur(seed, 0);
  for (uint64_t d = 0; d < n; ++d) x[d] = cur.u64(d);
  return x;
}

// ---- uniform ------------------------------------------------------------------------------

TEST(Distributions, UniformIsExactlyTheTopBits) {
  for (uint32_t w : stream_words(1, 1000)) {
    EXPECT_EQ(std::ldexp(static_cast<double>(rng_uniform_float(w)), 24), w >> 8);
    EXPECT_EQ(std::ldexp(static_cast<double>(rng_uniform_float_open0(w)), 24), (w >> 8) + 1.0);
  }
  for (uint64_t x : stream_u64(2, 1000)) {
    EXPECT_EQ(std::ldexp(rng_uniform_double(x), 53), static_cast<double>(x >> 11));
    EXPECT_EQ(std::ldexp(rng_uniform_double_open0(x), 53), static_cast<double>((x >> 11) + 1));
  }
}

TEST(Distributions, UniformBounds) {
  const uint32_t wmax = 0xffffffffu;
  const uint64_t xmax = ~uint64_t{0};
  EXPECT_EQ(rng_uniform_float(0), 0.0f);
  EXPECT_EQ(rng_uniform_float(wmax), 1.0f - std::ldexp(1.0f, -24));
  EXPECT_EQ(rng_uniform_float_open0(0), std::ldexp(1.0f, -24));
  EXPECT_EQ(rng_uniform_float_open0(wmax), 1.0f);
  EXPECT_EQ(rng_uniform_double(0), 0.0);
  EXPECT_EQ(rng_uniform_double(xmax), 1.0 - std::ldexp(1.0, -53));
  EXPECT_EQ(rng_uniform_double_open0(0), std::ldexp(1.0, -53));
  EXPECT_EQ(rng_uniform_double_open0(xmax), 1.0);
}

TEST(Distributions, UniformRealNeverReachesUpperBound) {
  // A case where a + u * (b - a) rounds to b: 1e8f has float spacing 8.
  const float a = 1e8f, b = 1e8f + 8.0f, umax = rng_uniform_float(0xffffffffu);
  ASSERT_EQ(umax * (b - a) + a, b);  // the unclamped formula hits b here
  EXPECT_EQ(rng_uniform_real(umax, a, b), a);
  const double ad = 9007199254740992.0, bd = ad + 2.0, udmax = rng_uniform_double(~uint64_t{0});
  ASSERT_EQ(udmax * (bd - ad) + ad, bd);
  EXPECT_EQ(rng_uniform_real(udmax, ad, bd), ad);
  // Many intervals, the largest u and random u: always a <= x < b; a == b gives a.
  std::vector<uint32_t> w = stream_words(3, 40000);
  for (size_t i = 0; i + 3 < w.size(); i += 4) {
    const float mag = std::ldexp(1.0f, static_cast<int>(w[i] % 200) - 100);
    float lo = (rng_uniform_float(w[i + 1]) - 0.5f) * mag;
    float hi = lo + rng_uniform_float(w[i + 2]) * mag;
    if (w[i + 3] % 4 == 0) hi = std::nextafter(lo, 1.0f);  // adjacent floats
    if (w[i + 3] % 4 == 1) {
      hi = 0.0f;
      lo = std::min(lo, -std::ldexp(1.0f, -149));
    }
    if (!(lo < hi)) continue;
    for (float u : {umax, rng_uniform_float(w[i + 3]), 0.0f}) {
      const float x = rng_uniform_real(u, lo, hi);
      EXPECT_GE(x, lo);
      EXPECT_LT(x, hi) << lo << " " << hi << " " << u;
    }
    const double dlo = lo, dhi = std::nextafter(static_cast<double>(hi), 1e300);
    const double xd = rng_uniform_real(udmax, dlo, dhi);
    EXPECT_GE(xd, dlo);
    EXPECT_LT(xd, dhi);
  }
  EXPECT_EQ(rng_uniform_real(umax, 2.5f, 2.5f), 2.5f);
  EXPECT_EQ(rng_uniform_real(udmax, -1.0, -1.0), -1.0);
}

TEST(Distributions, UniformMomentsAndChiSquare) {
  std::vector<uint32_t> w = stream_words(11, kN);
  std::vector<double> u(kN);
  std::vector<double> bins(64, 0.0);
  for (uint64_t i = 0; i < kN; ++i) {
    u[i] = rng_uniform_float(w[i]);
    bins[static_cast<size_t>(u[i] * 64)] += 1;
  }
  const Moments m = moments(u);
  const double n = kN;
  EXPECT_NEAR(m.mean, 0.5, 5 * std::sqrt(1.0 / 12 / n));
  EXPECT_NEAR(m.var, 1.0 / 12, 5 * std::sqrt((1.0 / 80 - 1.0 / 144) / n));
  EXPECT_LT(chi2(bins, std::vector<double>(64, n / 64)), chi2_critical(63));

  // Double uniforms from 64-bit draws; the 64 bins here use bits 47..52 of the mantissa grid,
  // so they also test the low half of the draw.
  std::vector<uint64_t> x = stream_u64(12, kN);
  std::vector<double> ud(kN), low_bins(64, 0.0);
  for (uint64_t i = 0; i < kN; ++i) {
    ud[i] = rng_uniform_double(x[i]);
    low_bins[static_cast<size_t>(std::fmod(ud[i] * std::ldexp(1.0, 53), 64.0))] += 1;
  }
  const Moments md = moments(ud);
  EXPECT_NEAR(md.mean, 0.5, 5 * std::sqrt(1.0 / 12 / n));
  EXPECT_NEAR(md.var, 1.0 / 12, 5 * std::sqrt((1.0 / 80 - 1.0 / 144) / n));
  EXPECT_LT(chi2(low_bins, std::vector<double>(64, n / 64)), chi2_critical(63));
}

// ---- normal and its relatives -------------------------------------------------------------

void check_standard_normal(const std::vector<double>& z) {
  const double n = static_cast<double>(z.size());
  const Moments m = moments(z);
  EXPECT_NEAR(m.mean, 0.0, 5 / std::sqrt(n));
  EXPECT_NEAR(m.var, 1.0, 5 * std::sqrt(2 / n));
  EXPECT_NEAR(m.skew, 0.0, 5 * std::sqrt(6 / n));
  EXPECT_NEAR(m.kurt, 3.0, 5 * std::sqrt(24 / n));
  EXPECT_LT(ks_statistic(z, normal_cdf), kKsCritical);
}

TEST(Distributions, NormalFloat) {
  std::vector<uint32_t> w = stream_words(21, kN);
  std::vector<double> z(kN);
  for (uint64_t i = 0; i < kN; ++i) z[i] = rng_normal_float(w[i & ~1ull], w[i | 1ull], i);
  check_standard_normal(z);
  // Extreme words: finite, and the radius is largest for word 0.
  for (uint32_t a : {0u, 1u, 0xffffffffu})
    for (uint32_t b : {0u, 0x40000000u, 0xffffffffu}) {
      const RngPair<float> p = rng_normal_pair_float(a, b);
      EXPECT_TRUE(std::isfinite(p.first) && std::isfinite(p.second));
    }
  EXPECT_NEAR(rng_normal_pair_float(0, 0).first, std::sqrt(-2 * std::log(std::ldexp(1.0, -33))),
              1e-5);
  EXPECT_EQ(rng_normal(2.0f, 1.0f, 3.0f), 7.0f);
}

TEST(Distributions, NormalDouble) {
  std::vector<uint64_t> x = stream_u64(22, kN);
  std::vector<double> z(kN);
  for (uint64_t i = 0; i < kN; ++i) z[i] = rng_normal_double(x[i & ~1ull], x[i | 1ull], i);
  check_standard_normal(z);
  const RngPair<double> p = rng_normal_pair_double(0, 0);
  EXPECT_TRUE(std::isfinite(p.first));
  EXPECT_DOUBLE_EQ(p.first, std::sqrt(-2 * std::log(std::ldexp(1.0, -53))));
  EXPECT_EQ(rng_normal_pair_double(~uint64_t{0}, 0).first, 0.0);  // u1 = 1: radius 0
}

TEST(Distributions, LogNormal) {
  std::vector<uint32_t> w = stream_words(23, 200000);
  std::vector<double> y(w.size());
  const float mean = 0.5f, sd = 0.25f;
  for (uint64_t i = 0; i < w.size(); ++i) {
    const float v = rng_log_normal(rng_normal_float(w[i & ~1ull], w[i | 1ull], i), mean, sd);
    ASSERT_GT(v, 0.0f);
    y[i] = v;
  }
  EXPECT_LT(ks_statistic(y, [&](double v) { return normal_cdf((std::log(v) - mean) / sd); }),
            kKsCritical);
  EXPECT_DOUBLE_EQ(rng_log_normal(1.0, 0.5, 2.0), std::exp(2.5));
}

// ---- one-uniform transforms ---------------------------------------------------------------

TEST(Distributions, Exponential) {
  const double lambda = 2.5;
  std::vector<uint64_t> x = stream_u64(31, kN);
  std::vector<double> e(kN), ef(200000);
  for (uint64_t i = 0; i < kN; ++i) e[i] = rng_exponential_double(x[i], lambda);
  const Moments m = moments(e);
  EXPECT_NEAR(m.mean, 1 / lambda, 5 / (lambda * std::sqrt(double(kN))));
  auto cdf = [&](double v) { return 1 - std::exp(-lambda * v); };
  EXPECT_LT(ks_statistic(std::vector<double>(e.begin(), e.begin() + 200000), cdf), kKsCritical);
  std::vector<uint32_t> w = stream_words(32, ef.size());
  for (size_t i = 0; i < ef.size(); ++i)
    ef[i] = rng_exponential_float(w[i], static_cast<float>(lambda));
  EXPECT_LT(ks_statistic(ef, cdf), kKsCritical);
  // Extremes: never 0, never inf.
  for (uint32_t v : {0u, 0xffu, 0x100u, 0xffffffffu}) {
    const float f = rng_exponential_float(v, 1.0f);
    EXPECT_GT(f, 0.0f);
    EXPECT_TRUE(std::isfinite(f));
  }
  for (uint64_t v : {uint64_t{0}, uint64_t{1} << 11, ~uint64_t{0}}) {
    const double d = rng_exponential_double(v, 1.0);
    EXPECT_GT(d, 0.0);
    EXPECT_TRUE(std::isfinite(d));
  }
  EXPECT_NEAR(rng_exponential_float(0xffffffffu, 1.0f), 24 * std::log(2.0), 1e-5);
}

TEST(Distributions, Geometric) {
  const double p = 0.2;
  std::vector<uint64_t> x = stream_u64(41, kN);
  std::vector<uint32_t> w = stream_words(42, kN);
  for (int precision = 0; precision < 2; ++precision) {
    std::vector<double> obs(16, 0.0), expect(16, 0.0);
    for (uint64_t i = 0; i < kN; ++i) {
      const double g = precision ? rng_geometric_double(x[i], p)
                                 : rng_geometric_float(w[i], static_cast<float>(p));
      ASSERT_GE(g, 1.0);
      ASSERT_EQ(g, std::floor(g));
      obs[static_cast<size_t>(std::min(g, 16.0)) - 1] += 1;
    }
    for (int k = 1; k <= 16; ++k)  // P(X = k) = p (1-p)^(k-1); the last bin is P(X >= 16)
      expect[k - 1] = kN * (k < 16 ? p * std::pow(1 - p, k - 1) : std::pow(1 - p, 15));
    EXPECT_LT(chi2(obs, expect), chi2_critical(15)) << "precision " << precision;
  }
  EXPECT_EQ(rng_geometric_float(0xffffffffu, 0.3f), 1.0f);  // u = 1
  EXPECT_EQ(rng_geometric_double(0, 1.0), 1.0);             // p = 1
  EXPECT_TRUE(std::isfinite(rng_geometric_float(0, 1e-6f)));
}

TEST(Distributions, Bernoulli) {
  const double p = 0.3;
  std::vector<uint32_t> w = stream_words(51, kN);
  std::vector<uint64_t> x = stream_u64(52, kN);
  double hits = 0, hits_d = 0;
  for (uint64_t i = 0; i < kN; ++i) {
    hits += rng_bernoulli_float(w[i], static_cast<float>(p));
    hits_d += rng_bernoulli_double(x[i], p);
  }
  const double sd = std::sqrt(kN * p * (1 - p));
  EXPECT_NEAR(hits, kN * p, 5 * sd);
  EXPECT_NEAR(hits_d, kN * p, 5 * sd);
  EXPECT_FALSE(rng_bernoulli_float(0, 0.0f));
  EXPECT_TRUE(rng_bernoulli_float(0xffffffffu, 1.0f));
  EXPECT_FALSE(rng_bernoulli_double(0, 0.0));
  EXPECT_TRUE(rng_bernoulli_double(~uint64_t{0}, 1.0));
}

TEST(Distributions, Cauchy) {
  const double med = -1.0, sigma = 0.5;
  auto cdf = [&](double v) { return 0.5 + std::atan((v - med) / sigma) / M_PI; };
  std::vector<uint32_t> w = stream_words(61, 200000);
  std::vector<uint64_t> x = stream_u64(62, 200000);
  std::vector<double> c(w.size()), cd(x.size());
  for (size_t i = 0; i < w.size(); ++i) {
    c[i] = rng_cauchy_float(w[i], static_cast<float>(med), static_cast<float>(sigma));
    cd[i] = rng_cauchy_double(x[i], med, sigma);
  }
  EXPECT_LT(ks_statistic(c, cdf), kKsCritical);
  EXPECT_LT(ks_statistic(cd, cdf), kKsCritical);
  // The extreme words give finite values of the right sign, symmetric about the median.
  const float lo = rng_cauchy_float(0, 0.0f, 1.0f), hi = rng_cauchy_float(0xffffffffu, 0.0f, 1.0f);
  EXPECT_TRUE(std::isfinite(lo) && std::isfinite(hi));
  EXPECT_LT(lo, -1e6f);
  EXPECT_EQ(hi, -lo);
  const double dlo = rng_cauchy_double(0, 0.0, 1.0), dhi = rng_cauchy_double(~uint64_t{0}, 0, 1);
  EXPECT_TRUE(std::isfinite(dlo) && std::isfinite(dhi));
  EXPECT_LT(dlo, -1e14);
  EXPECT_EQ(dhi, -dlo);
}

// ---- integers -----------------------------------------------------------------------------

// Multiply-shift maps x to floor(x * r / 2^64), so outcome v is hit exactly by the inputs in
// [ceil(v 2^64 / r), ceil((v+1) 2^64 / r)). Check those boundaries directly with 128-bit
// arithmetic: every outcome then has floor or ceil of 2^64 / r inputs.
TEST(Distributions, RandomIntPartitionIsEven) {
  for (uint64_t r : {uint64_t{1}, uint64_t{3}, uint64_t{10}, uint64_t{1000000007},
                     uint64_t{0xffffffff}, uint64_t{1} << 32}) {
    auto boundary = [&](uint64_t v) {  // ceil(v 2^64 / r), as u128
      return ((static_cast<u128>(v) << 64) + r - 1) / r;
    };
    const u128 floor_count = (static_cast<u128>(1) << 64) / r;
    std::vector<uint64_t> vs = {0, 1, r / 2, r - 1};
    for (uint64_t v : vs) {
      if (v >= r) continue;
      const u128 b0 = boundary(v), b1 = boundary(v + 1);
      EXPECT_TRUE(b1 - b0 == floor_count || b1 - b0 == floor_count + 1);
      EXPECT_EQ(rng_random_from_to_64(static_cast<uint64_t>(b0), r, 0), static_cast<int64_t>(v));
      EXPECT_EQ(rng_random_from_to_64(static_cast<uint64_t>(b1 - 1), r, 0),
                static_cast<int64_t>(v));
      if (v > 0) {
        EXPECT_EQ(rng_random_from_to_64(static_cast<uint64_t>(b0 - 1), r, 0),
                  static_cast<int64_t>(v - 1));
      }
    }
  }
}

TEST(Distributions, RandomInt128MatchesWideReference) {
  std::vector<uint64_t> x = stream_u64(71, 20000);
  const uint64_t ranges[] = {0,
                             1,
                             3,
                             (uint64_t{1} << 32) + 1,
                             3 * (uint64_t{1} << 40) + 7,
                             ~uint64_t{0},
                             uint64_t{1} << 63};
  for (size_t i = 0; i + 1 < x.size(); i += 2) {
    for (uint64_t lo : {x[i], uint64_t{0}, ~uint64_t{0}})
      for (uint64_t r : ranges) {
        const uint64_t hi = x[i + 1];
        uint64_t want;
        if (r == 0) {
          want = hi;
        } else {  // floor((hi 2^64 + lo) r / 2^128) from two 128-bit partial products
          const u128 p0 = static_cast<u128>(lo) * r, p1 = static_cast<u128>(hi) * r;
          want = static_cast<uint64_t>((p1 + (p0 >> 64)) >> 64);
        }
        EXPECT_EQ(rng_random_from_to_128(lo, hi, r, 5), static_cast<int64_t>(want + 5));
      }
  }
  // Full int64 range: low + hi wraps around.
  EXPECT_EQ(rng_random_from_to_128(0, 0, 0, std::numeric_limits<int64_t>::min()),
            std::numeric_limits<int64_t>::min());
  EXPECT_EQ(rng_random_from_to_128(0, ~uint64_t{0}, 0, std::numeric_limits<int64_t>::min()),
            std::numeric_limits<int64_t>::max());
  EXPECT_EQ(rng_int_words(1), 2u);
  EXPECT_EQ(rng_int_words(uint64_t{1} << 32), 2u);
  EXPECT_EQ(rng_int_words((uint64_t{1} << 32) + 1), 4u);
  EXPECT_EQ(rng_int_words(0), 4u);
}

TEST(Distributions, RandomIntUnbiased) {
  // Range 10 (not a power of two) from 64-bit draws: chi-square over the 10 outcomes.
  std::vector<uint64_t> x = stream_u64(81, kN);
  std::vector<double> obs(10, 0.0);
  for (uint64_t v : x) {
    const int64_t r = rng_random_from_to_64(v, 10, -5);
    ASSERT_GE(r, -5);
    ASSERT_LT(r, 5);
    obs[static_cast<size_t>(r + 5)] += 1;
  }
  EXPECT_LT(chi2(obs, std::vector<double>(10, kN / 10.0)), chi2_critical(9));
  EXPECT_EQ(rng_random_from_to_64(0, 10, -5), -5);
  EXPECT_EQ(rng_random_from_to_64(~uint64_t{0}, 10, -5), 4);
  // Range 3 * 2^40 from 128-bit draws (whole counters, k = 4), in 64 equally likely bins.
  const uint64_t r = 3 * (uint64_t{1} << 40);
  std::vector<double> bins(64, 0.0);
  PhiloxCursor cur(82, 0);
  for (uint64_t i = 0; i < kN / 2; ++i) {
    const int64_t v = rng_random_from_to_128(cur.u64(2 * i), cur.u64(2 * i + 1), r, 100);
    ASSERT_GE(v, 100);
    ASSERT_LT(static_cast<uint64_t>(v - 100), r);
    bins[static_cast<size_t>((v - 100) / (r / 64))] += 1;
  }
  EXPECT_LT(chi2(bins, std::vector<double>(64, kN / 2 / 64.0)), chi2_critical(63));
}

}  // namespace
}  // namespace kiln
