// Tests for kiln::Half and kiln::BFloat16 (include/kiln/half.h): decoding of every bit pattern,
// rounding against GCC's _Float16 and a brute-force nearest-even search, overflow, NaN,
// arithmetic, OpMath, isnan/isinf and numeric_limits.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <type_traits>
#include <vector>

#include "kiln/half.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define KILN_TEST_X86 1
#else
#define KILN_TEST_X86 0
#endif

namespace {

using kiln::BFloat16;
using kiln::Half;

uint32_t fbits(float f) { return std::bit_cast<uint32_t>(f); }
float bits_f(uint32_t u) { return std::bit_cast<float>(u); }

// binary16 value from its fields, by the textbook formula, in double.
double half_formula(uint16_t b) {
  const int s = b >> 15, e = (b >> 10) & 31, m = b & 1023;
  double v;
  if (e == 31) {
    v = m == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (e == 0) {
    v = std::ldexp(double(m), -24);
  } else {
    v = std::ldexp(1.0 + m / 1024.0, e - 15);
  }
  return s ? -v : v;
}

// Random floats: raw bit patterns (every exponent) and log-uniform values in [2^lo, 2^hi].
std::vector<float> random_floats(size_t n, int lo, int hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> ex(lo, hi);
  std::vector<float> out;
  for (size_t i = 0; i < n; ++i) {
    out.push_back(bits_f(rng()));
    const float v = float(std::exp2(ex(rng)));
    out.push_back((rng() & 1) ? -v : v);
  }
  return out;
}

// Midpoints between consecutive values of a sorted list of positive values, and the floats just
// below and above each, with both signs.
std::vector<float> midpoints_and_neighbours(const std::vector<double>& sorted) {
  std::vector<float> out;
  for (size_t i = 0; i + 1 < sorted.size(); ++i) {
    const double mid = 0.5 * (sorted[i] + sorted[i + 1]);
    const float f = float(mid);
    EXPECT_EQ(double(f), mid) << "midpoint not representable in float";
    for (float g : {f, std::nextafter(f, 0.0f), std::nextafter(f, INFINITY)}) {
      out.push_back(g);
      out.push_back(-g);
    }
  }
  return out;
}

// ---- Half --------------------------------------------------------------------------------------

TEST(Half, Layout) {
  static_assert(sizeof(Half) == 2 && alignof(Half) == 2);
  static_assert(std::is_trivially_copyable_v<Half>);
  static_assert(std::is_trivially_default_constructible_v<Half>);
  static_assert(std::is_standard_layout_v<Half>);
  static_assert(std::is_same_v<decltype(Half::x), uint16_t>);
  constexpr Half h = Half::from_bits(0x3C00);
  static_assert(h.x == 0x3C00);
  EXPECT_EQ(float(h), 1.0f);
}

TEST(Half, DecodesEveryPattern) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const uint16_t h = uint16_t(b);
    const double ref = half_formula(h);
    for (float got : {float(Half::from_bits(h)), kiln::detail::float_from_half_bits_portable(h)}) {
      if (std::isnan(ref)) {
        // Quiet NaN, sign kept, payload shifted into the top of the float mantissa.
        const uint32_t want =
            (uint32_t(h & 0x8000) << 16) | 0x7FC00000u | (uint32_t(h & 0x3FF) << 13);
        EXPECT_EQ(fbits(got), want) << std::hex << b;
      } else {
        EXPECT_EQ(fbits(got), fbits(float(ref))) << std::hex << b;  // exact, sign of zero included
      }
    }
  }
}

#if defined(__FLT16_MAX__)
uint16_t gcc_half(float f) { return std::bit_cast<uint16_t>(static_cast<_Float16>(f)); }

::testing::AssertionResult matches_gcc(float f) {
  const uint16_t want = gcc_half(f), got = Half(f).x;
  const uint16_t portable = kiln::detail::half_bits_from_float_portable(f);
  if (got == want && portable == want) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << std::hexfloat << f << std::hex << ": got " << got
                                       << ", portable " << portable << ", _Float16 " << want;
}

TEST(Half, EncodeMatchesGccFloat16) {
  // Every float exponent and sign and every kept 10-bit mantissa, with the dropped 13 bits just
  // below, at and above the halfway point, and at the extremes: all ties of the normal range.
  for (uint32_t hi = 0; hi < (1u << 19); ++hi) {
    for (uint32_t lo : {0x0u, 0x1u, 0xFFFu, 0x1000u, 0x1001u, 0x1FFFu}) {
      ASSERT_TRUE(matches_gcc(bits_f((hi << 13) | lo)));
    }
  }
  for (float f : random_floats(200000, -30, 17, 1)) ASSERT_TRUE(matches_gcc(f));
  // Ties and near-ties between all adjacent finite halves, subnormals included, and between
  // the largest finite half and 2^16 (the overflow threshold).
  std::vector<double> vals;
  for (uint32_t b = 0; b <= 0x7BFF; ++b) vals.push_back(half_formula(uint16_t(b)));
  vals.push_back(65536.0);
  for (float f : midpoints_and_neighbours(vals)) ASSERT_TRUE(matches_gcc(f));
  // Below half the smallest subnormal.
  for (float f : {0x1p-25f, 0x1.000002p-25f, 0x1.fffffep-26f, 0x1p-40f, 0x1p-149f, -0x1p-149f}) {
    EXPECT_TRUE(matches_gcc(f));
  }
}
#endif

TEST(Half, OverflowAndSpecials) {
  const uint16_t inf = 0x7C00, max = 0x7BFF;
  EXPECT_EQ(half_formula(max), 65504.0);
  EXPECT_EQ(Half(65520.0f).x, inf);  // the tie between 65504 and 2^16 rounds to even: inf
  EXPECT_EQ(Half(-65520.0f).x, 0x8000 | inf);
  EXPECT_EQ(Half(std::nextafter(65520.0f, 0.0f)).x, max);  // 65519.996 -> 65504
  EXPECT_EQ(Half(65504.0f).x, max);
  EXPECT_EQ(Half(1e30f).x, inf);
  EXPECT_EQ(Half(INFINITY).x, inf);
  EXPECT_EQ(Half(-INFINITY).x, 0x8000 | inf);
  EXPECT_EQ(Half(-0.0f).x, 0x8000);
  EXPECT_EQ(Half(0x1p-25f).x, 0);        // tie with 0 and the smallest subnormal: even (0)
  EXPECT_EQ(Half(0x1.8p-25f).x, 1);      // above the tie
  EXPECT_EQ(Half(-0x1p-26f).x, 0x8000);  // underflow keeps the sign
  for (uint32_t payload : {0x1u, 0x2000u, 0x400000u, 0x7FFFFFu, 0x12345u}) {
    for (uint32_t sign : {0u, 0x80000000u}) {
      const float nan = bits_f(sign | 0x7F800000u | payload);
      const Half h(nan);
      EXPECT_TRUE(kiln::detail::isnan(h));
      EXPECT_EQ(h.x & 0x8000, sign >> 16);
      EXPECT_EQ(h.x & 0x7FFF, 0x7E00 | ((payload >> 13) & 0x3FF));
    }
  }
}

TEST(Half, RoundTripIsIdentity) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const Half h = Half::from_bits(uint16_t(b));
    if (std::isnan(half_formula(uint16_t(b)))) continue;
    EXPECT_EQ(Half(float(h)).x, b);
    EXPECT_EQ(kiln::detail::half_bits_from_float_portable(float(h)), b);
  }
}

#if KILN_TEST_X86
__attribute__((target("f16c"))) uint16_t f16c_encode(float f) {
  return uint16_t(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}
__attribute__((target("f16c"))) float f16c_decode(uint16_t h) { return _cvtsh_ss(h); }

// The portable path must agree bit for bit with the F16C instructions that kiln uses when it is
// compiled with -mf16c.
TEST(Half, PortablePathMatchesF16C) {
  if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "CPU without F16C";
  for (uint32_t b = 0; b < 65536; ++b) {
    EXPECT_EQ(fbits(kiln::detail::float_from_half_bits_portable(uint16_t(b))),
              fbits(f16c_decode(uint16_t(b))));
  }
  for (float f : random_floats(300000, -30, 17, 2)) {
    ASSERT_EQ(kiln::detail::half_bits_from_float_portable(f), f16c_encode(f)) << std::hexfloat << f;
  }
}
#endif

TEST(Half, DoubleAndIntegerConstructorsGoThroughFloat) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 200000; ++i) {
    const double d = std::bit_cast<double>(rng());
    if (std::isnan(d)) continue;
    EXPECT_EQ(Half(d).x, Half(float(d)).x) << d;
  }
  // Documented double rounding, as c10: 1 + 2^-11 + 2^-40 becomes the float 1 + 2^-11, a tie
  // that rounds to even (1.0); rounding the double directly would give 1 + 2^-10.
  EXPECT_EQ(Half(1.0 + 0x1p-11 + 0x1p-40).x, Half(1.0f).x);
  for (int i = -70000; i <= 70000; ++i) EXPECT_EQ(Half(i).x, Half(float(i)).x);
  EXPECT_EQ(Half(int64_t(1) << 40).x, 0x7C00);
  EXPECT_EQ(Half(uint8_t(200)).x, Half(200.0f).x);
  EXPECT_EQ(Half(true).x, Half(1.0f).x);
}

template <class T>
void check_arithmetic_types() {
  T a(1.5f);
  static_assert(std::is_same_v<decltype(a + a), T>);
  static_assert(std::is_same_v<decltype(a * 2.0f), float>);
  static_assert(std::is_same_v<decltype(2.0f / a), float>);
  static_assert(std::is_same_v<decltype(a - 2.0), double>);
  static_assert(std::is_same_v<decltype(a + 2), T>);
  static_assert(std::is_same_v<decltype(3L * a), T>);
  static_assert(std::is_same_v<decltype(-a), T>);
  static_assert(std::is_same_v<decltype(a += a), T&>);
  static_assert(std::is_same_v<decltype(a < a), bool>);
  static_assert(std::is_same_v<typename kiln::OpMath<T>::type, float>);
  static_assert(std::is_same_v<kiln::OpMathType<T>, float>);
}

TEST(Half, ArithmeticIsFloatRoundedOnce) {
  check_arithmetic_types<Half>();
  check_arithmetic_types<BFloat16>();
  static_assert(std::is_same_v<decltype(Half(1.0f) + BFloat16(1.0f)), float>);
  static_assert(std::is_same_v<kiln::OpMathType<double>, double>);
  static_assert(std::is_same_v<kiln::OpMathType<int>, int>);
  std::mt19937 rng(4);
  for (int i = 0; i < 100000; ++i) {
    const Half a = Half::from_bits(uint16_t(rng())), b = Half::from_bits(uint16_t(rng()));
    const float fa = half_formula(a.x), fb = half_formula(b.x);
    const auto same = [](Half got, float want) {
      const Half w(want);
      return std::isnan(want) ? kiln::detail::isnan(got) : got.x == w.x;
    };
    ASSERT_TRUE(same(a + b, fa + fb));
    ASSERT_TRUE(same(a - b, fa - fb));
    ASSERT_TRUE(same(a * b, fa * fb));
    ASSERT_TRUE(same(a / b, fa / fb));
    ASSERT_TRUE(same(-a, -fa));
    Half c = a;
    c += b;
    ASSERT_TRUE(same(c, fa + fb));
    c = a;
    c *= 3.0f;
    ASSERT_TRUE(same(c, fa * 3.0f));
    EXPECT_EQ(a < b, fa < fb);
    EXPECT_EQ(a <= b, fa <= fb);
    EXPECT_EQ(a == b, fa == fb);  // NaN != NaN, -0 == +0
    EXPECT_EQ(a != b, fa != fb);
    EXPECT_EQ(a > b, fa > fb);
    EXPECT_EQ(a >= b, fa >= fb);
    const float mixed = a + 0.25f;
    const double mixed_d = a * 0.1;
    EXPECT_TRUE(mixed == fa + 0.25f || (std::isnan(mixed) && std::isnan(fa)));
    EXPECT_TRUE(mixed_d == double(fa) * 0.1 || (std::isnan(mixed_d) && std::isnan(fa)));
  }
  // Integer operands are converted to Half first, as c10 does: 2049 -> 2048.
  EXPECT_EQ((Half(0.5f) + 2049).x, Half(2048.0f).x);
  Half h(0.5f);
  h -= 2049;
  EXPECT_EQ(h.x, Half(-2048.0f).x);
}

TEST(Half, IsNanIsInf) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const Half h = Half::from_bits(uint16_t(b));
    const BFloat16 g = BFloat16::from_bits(uint16_t(b));
    const double v = half_formula(uint16_t(b));
    const float w = bits_f(b << 16);
    EXPECT_EQ(kiln::detail::isnan(h), std::isnan(v));
    EXPECT_EQ(kiln::detail::isinf(h), std::isinf(v));
    EXPECT_EQ(kiln::detail::isfinite(h), std::isfinite(v));
    EXPECT_EQ(kiln::detail::isnan(g), std::isnan(w));
    EXPECT_EQ(kiln::detail::isinf(g), std::isinf(w));
    EXPECT_EQ(kiln::detail::isfinite(g), std::isfinite(w));
  }
  for (float f : {0.0f, -1.0f, INFINITY, -INFINITY, NAN, -NAN, 0x1p-149f, FLT_MAX}) {
    EXPECT_EQ(kiln::detail::isnan(f), std::isnan(f));
    EXPECT_EQ(kiln::detail::isinf(f), std::isinf(f));
    EXPECT_EQ(kiln::detail::isfinite(f), std::isfinite(f));
    EXPECT_EQ(kiln::detail::isnan(double(f)), std::isnan(f));
    EXPECT_EQ(kiln::detail::isinf(double(f)), std::isinf(f));
    EXPECT_EQ(kiln::detail::isfinite(double(f)), std::isfinite(f));
  }
  EXPECT_FALSE(kiln::detail::isnan(7));
  EXPECT_FALSE(kiln::detail::isinf(int64_t(-1)));
  EXPECT_TRUE(kiln::detail::isfinite(uint8_t(3)));
  EXPECT_FALSE(kiln::detail::isnan(true));
}

// numeric_limits members checked against values derived from the decoded value table.
template <class T>
void check_limits(const std::vector<double>& finite_positive, double expected_inf) {
  using L = std::numeric_limits<T>;
  const double max = finite_positive.back();
  double min_normal = 0, denorm_min = 0, after_one = 0;
  for (double v : finite_positive) {
    if (denorm_min == 0 && v > 0) denorm_min = v;
    if (after_one == 0 && v > 1) after_one = v;
  }
  // The smallest normal is the first value v whose successor is v * (1 + eps); subnormals are
  // spaced by denorm_min < v * eps.
  const double eps = after_one - 1;
  for (size_t i = 1; i + 1 < finite_positive.size(); ++i) {
    if (finite_positive[i + 1] - finite_positive[i] == finite_positive[i] * eps) {
      min_normal = finite_positive[i];
      break;
    }
  }
  const int digits = 1 - std::ilogb(eps);
  EXPECT_TRUE(L::is_specialized);
  EXPECT_EQ(double(float(L::max())), max);
  EXPECT_EQ(double(float(L::lowest())), -max);
  EXPECT_EQ(double(float(L::min())), min_normal);
  EXPECT_EQ(double(float(L::denorm_min())), denorm_min);
  EXPECT_EQ(double(float(L::epsilon())), eps);
  EXPECT_EQ(double(float(L::round_error())), 0.5);
  EXPECT_TRUE(std::isnan(float(L::quiet_NaN())));
  EXPECT_EQ(L::has_infinity, std::isinf(expected_inf));
  if (L::has_infinity) {
    EXPECT_EQ(double(float(L::infinity())), expected_inf);
  }
  EXPECT_EQ(L::digits, digits);
  EXPECT_EQ(L::digits10, int(std::floor((digits - 1) * std::log10(2.0))));
  EXPECT_EQ(L::max_digits10, int(std::ceil(1 + digits * std::log10(2.0))));
  EXPECT_EQ(L::min_exponent, std::ilogb(min_normal) + 1);
  EXPECT_EQ(L::max_exponent, std::ilogb(max) + 1);
  EXPECT_EQ(L::min_exponent10, int(std::ceil(std::log10(min_normal))));
  EXPECT_EQ(L::max_exponent10, int(std::floor(std::log10(max))));
  EXPECT_EQ(L::radix, 2);
  EXPECT_TRUE(L::is_signed);
  EXPECT_FALSE(L::is_integer);
  EXPECT_FALSE(L::is_exact);
  EXPECT_TRUE(L::has_quiet_NaN);
  EXPECT_EQ(L::has_denorm, std::denorm_present);
  EXPECT_EQ(L::round_style, std::round_to_nearest);
}

TEST(Half, NumericLimits) {
  std::vector<double> vals;
  for (uint32_t b = 0; b <= 0x7BFF; ++b) vals.push_back(half_formula(uint16_t(b)));
  check_limits<Half>(vals, INFINITY);
  EXPECT_TRUE(std::numeric_limits<Half>::is_iec559);
  EXPECT_TRUE(kiln::detail::isnan(std::numeric_limits<Half>::signaling_NaN()));
  EXPECT_EQ(std::numeric_limits<Half>::signaling_NaN().x & 0x200, 0);  // quiet bit clear
}

TEST(Half, Prints) {
  std::ostringstream os;
  os << Half(1.5f) << ' ' << BFloat16(-2.0f);
  EXPECT_EQ(os.str(), "1.5 -2");
}

// ---- BFloat16 ----------------------------------------------------------------------------------

TEST(BFloat16, Layout) {
  static_assert(sizeof(BFloat16) == 2 && alignof(BFloat16) == 2);
  static_assert(std::is_trivially_copyable_v<BFloat16>);
  static_assert(std::is_trivially_default_constructible_v<BFloat16>);
  static_assert(std::is_same_v<decltype(BFloat16::x), uint16_t>);
  constexpr BFloat16 b = BFloat16::from_bits(0x4000);
  static_assert(b.x == 0x4000);
  EXPECT_EQ(float(b), 2.0f);
}

TEST(BFloat16, DecodesEveryPatternExactly) {
  for (uint32_t b = 0; b < 65536; ++b) {
    EXPECT_EQ(fbits(float(BFloat16::from_bits(uint16_t(b)))), b << 16);
  }
}

// Brute-force reference: the nearest of all finite positive bfloat16 values (binary search over
// the sorted table), ties to the even code; past the largest finite value the next candidate is
// 2^128, which stands for infinity.
uint16_t bf16_reference(float f, const std::vector<double>& table) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::fabs(double(f));
  if (std::isinf(a)) return sign | 0x7F80;
  const size_t hi = std::lower_bound(table.begin(), table.end(), a) - table.begin();
  if (hi == 0) return sign;
  const size_t lo = hi - 1;
  const double dlo = a - table[lo], dhi = table[hi] - a;
  size_t code = dlo < dhi ? lo : dhi < dlo ? hi : (lo % 2 == 0 ? lo : hi);
  if (table[hi] == a) code = hi;
  return uint16_t(sign | (code >= 0x7F80 ? 0x7F80 : code));
}

TEST(BFloat16, EncodeMatchesBruteForceNearestEven) {
  std::vector<double> table;
  for (uint32_t b = 0; b <= 0x7F7F; ++b) table.push_back(double(bits_f(b << 16)));
  table.push_back(std::ldexp(1.0, 128));
  auto check = [&](float f) -> ::testing::AssertionResult {
    const uint16_t want = bf16_reference(f, table), got = BFloat16(f).x;
    const uint16_t portable = kiln::detail::bf16_bits_from_float_portable(f);
    if (got == want && portable == want) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << std::hexfloat << f << std::hex << ": got " << got
                                         << ", portable " << portable << ", reference " << want;
  };
  for (float f : random_floats(300000, -140, 128, 5)) {
    if (std::isnan(f)) continue;
    ASSERT_TRUE(check(f));
  }
  for (float f : midpoints_and_neighbours(table)) ASSERT_TRUE(check(f));
  for (float f : {0.0f, -0.0f, INFINITY, -INFINITY, FLT_MAX, -FLT_MAX, 0x1p-149f, -0x1p-149f}) {
    EXPECT_TRUE(check(f));
  }
  EXPECT_EQ(BFloat16(FLT_MAX).x, 0x7F80);  // FLT_MAX rounds up past the largest bfloat16
}

TEST(BFloat16, NanStaysNan) {
  std::mt19937 rng(6);
  for (int i = 0; i < 100000; ++i) {
    const float nan = bits_f((rng() & 0x807FFFFFu) | 0x7F800001u);
    ASSERT_TRUE(std::isnan(nan));
    // c10's rule: every NaN becomes the positive quiet NaN 0x7FC0.
    EXPECT_EQ(BFloat16(nan).x, 0x7FC0);
  }
}

TEST(BFloat16, ArithmeticAndConversions) {
  std::mt19937 rng(7);
  for (int i = 0; i < 100000; ++i) {
    const BFloat16 a = BFloat16::from_bits(uint16_t(rng())),
                   b = BFloat16::from_bits(uint16_t(rng()));
    const float fa = bits_f(uint32_t(a.x) << 16), fb = bits_f(uint32_t(b.x) << 16);
    const auto same = [](BFloat16 got, float want) {
      return std::isnan(want) ? kiln::detail::isnan(got) : got.x == BFloat16(want).x;
    };
    ASSERT_TRUE(same(a + b, fa + fb));
    ASSERT_TRUE(same(a - b, fa - fb));
    ASSERT_TRUE(same(a * b, fa * fb));
    ASSERT_TRUE(same(a / b, fa / fb));
    EXPECT_EQ(a < b, fa < fb);
    EXPECT_EQ(a == b, fa == fb);
  }
  EXPECT_EQ(BFloat16(1.0 + 0x1p-8 + 0x1p-40).x, BFloat16(1.0f).x);  // through float, as c10
  EXPECT_EQ(BFloat16(257).x, BFloat16(256.0f).x);                   // tie to even
  EXPECT_EQ(BFloat16(259).x, BFloat16(260.0f).x);
}

TEST(BFloat16, NumericLimits) {
  std::vector<double> vals;
  for (uint32_t b = 0; b <= 0x7F7F; ++b) vals.push_back(double(bits_f(b << 16)));
  check_limits<BFloat16>(vals, INFINITY);
  EXPECT_FALSE(std::numeric_limits<BFloat16>::is_iec559);
}

}  // namespace
