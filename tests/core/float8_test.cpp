// Tests for kiln::Float8_e4m3fn and kiln::Float8_e5m2 (include/kiln/detail/float8.h): every code
// decoded against the format's formula, encoding against a brute-force search over all 256 codes
// (ties to even, PyTorch's overflow rules, the saturating variants), arithmetic and limits.
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "kiln/half.h"

namespace {

using kiln::Float8_e4m3fn;
using kiln::Float8_e5m2;

uint32_t fbits(float f) { return std::bit_cast<uint32_t>(f); }
float bits_f(uint32_t u) { return std::bit_cast<float>(u); }

// A format described by its fields, with its value table built from the textbook formula.
struct Format {
  int exp_bits, man_bits, bias;
  bool ieee_specials;  // true: all-ones exponent is inf/NaN (e5m2); false: only S.1111.111 is NaN
  std::array<double, 256> table{};
  uint8_t maxc = 0;  // code of the largest finite value

  Format(int e_bits, int m_bits, int b, bool ieee)
      : exp_bits(e_bits), man_bits(m_bits), bias(b), ieee_specials(ieee) {
    for (int c = 0; c < 256; ++c) table[c] = formula(uint8_t(c));
    for (int c = 0; c < 128; ++c) {
      if (std::isfinite(table[c]) && table[c] > table[maxc]) maxc = uint8_t(c);
    }
  }
  double formula(uint8_t b) const {
    const int s = b >> 7, e = (b >> man_bits) & ((1 << exp_bits) - 1),
              m = b & ((1 << man_bits) - 1);
    const int emax = (1 << exp_bits) - 1;
    double v;
    if (ieee_specials && e == emax) {
      v = m == 0 ? INFINITY : NAN;
    } else if (!ieee_specials && e == emax && m == (1 << man_bits) - 1) {
      v = NAN;
    } else if (e == 0) {
      v = std::ldexp(double(m), 1 - bias - man_bits);
    } else {
      v = std::ldexp(double((1 << man_bits) + m), e - bias - man_bits);
    }
    return s ? -v : v;
  }
  double value(uint8_t b) const { return table[b]; }
  uint8_t max_code() const { return maxc; }
};

const Format kE4M3(4, 3, 7, false);
const Format kE5M2(5, 2, 15, true);

enum class Overflow { kPyTorch, kSaturate };

// Brute force: scan every code with the input's sign for the nearest finite value, ties to the
// even code (= even mantissa). For the PyTorch rule the value one unit past the largest finite
// one also competes; winning with it means overflow: NaN for e4m3fn, inf for e5m2.
uint8_t reference_encode(const Format& fmt, float f, Overflow rule) {
  const uint8_t sign = std::signbit(f) ? 0x80 : 0;
  const uint8_t nan = sign | 0x7F;
  if (std::isnan(f)) return nan;
  const uint8_t maxc = fmt.max_code();
  const uint8_t overflow = fmt.ieee_specials ? uint8_t(sign | (maxc + 1)) : nan;
  if (std::isinf(f)) return rule == Overflow::kSaturate ? uint8_t(sign | maxc) : overflow;
  const double a = std::fabs(double(f));
  int best = -1;
  double best_d = INFINITY;
  const double top = fmt.value(maxc), step = top - fmt.value(maxc - 1);
  for (int c = 0; c <= maxc + 1; ++c) {
    double v;
    if (c == maxc + 1) {
      if (rule == Overflow::kSaturate) break;
      v = top + step;  // the next value of the top binade, one past the range
    } else {
      v = fmt.value(uint8_t(c));
    }
    // Candidates ascend: the last one not above `a` is the best so far, and each one above it
    // competes by distance. (Comparing distances alone fails for huge `a`: they round alike.)
    const double d = std::fabs(a - v);
    if (v <= a || d < best_d || (d == best_d && c % 2 == 0)) {
      best = c;
      best_d = d;
    }
    if (v > a) break;  // every later candidate is farther still
  }
  if (best == maxc + 1) return overflow;
  return uint8_t(sign | best);
}

std::vector<float> test_inputs(const Format& fmt, uint32_t seed) {
  std::vector<float> out;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> ex(-(fmt.bias + fmt.man_bits + 3), fmt.bias + 4);
  for (int i = 0; i < 50000; ++i) {
    const float v = float(std::exp2(ex(rng)));
    out.push_back((rng() & 1) ? -v : v);
    out.push_back(bits_f(rng()));  // any float, NaN and inf included
  }
  // Every midpoint between adjacent finite values (and past the largest), and its neighbours.
  std::vector<double> vals;
  const uint8_t maxc = fmt.max_code();
  for (int c = 0; c <= maxc; ++c) vals.push_back(fmt.value(uint8_t(c)));
  vals.push_back(2 * vals.back() - vals[vals.size() - 2]);
  for (size_t i = 0; i + 1 < vals.size(); ++i) {
    const float mid = float(0.5 * (vals[i] + vals[i + 1]));
    EXPECT_EQ(double(mid), 0.5 * (vals[i] + vals[i + 1]));
    for (float g :
         {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY), float(vals[i])}) {
      out.push_back(g);
      out.push_back(-g);
    }
  }
  for (float f : {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, FLT_MAX, -FLT_MAX, 0x1p-149f,
                  float(2 * vals.back()), 1e10f, 65536.0f, 1e-30f}) {
    out.push_back(f);
  }
  return out;
}

::testing::AssertionResult same_code(uint8_t got, uint8_t want, float f) {
  if (got == want) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << std::hexfloat << f << ": got " << int(got) << ", brute force " << int(want);
}

template <class T>
void check_layout() {
  static_assert(sizeof(T) == 1 && alignof(T) == 1);
  static_assert(std::is_trivially_copyable_v<T>);
  static_assert(std::is_trivially_default_constructible_v<T>);
  static_assert(std::is_standard_layout_v<T>);
  static_assert(std::is_same_v<decltype(T::x), uint8_t>);
  static_assert(std::is_same_v<kiln::OpMathType<T>, float>);
  static_assert(std::is_same_v<decltype(T(1.0f) + T(1.0f)), T>);
  static_assert(std::is_same_v<decltype(T(1.0f) * 2.0f), float>);
  static_assert(std::is_same_v<decltype(T(1.0f) * 2.0), double>);
  static_assert(std::is_same_v<decltype(T(1.0f) - 2), T>);
  static_assert(std::is_same_v<decltype(T(1.0f) + kiln::Half(1.0f)), float>);
  constexpr T t = T::from_bits(0x38);
  static_assert(t.x == 0x38);
}

TEST(Float8, Layout) {
  check_layout<Float8_e4m3fn>();
  check_layout<Float8_e5m2>();
}

template <class T>
void check_decode(const Format& fmt) {
  for (int b = 0; b < 256; ++b) {
    const double want = fmt.value(uint8_t(b));
    const float got = T::from_bits(uint8_t(b));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << b;
      EXPECT_EQ(std::signbit(got), (b & 0x80) != 0) << b;
    } else {
      EXPECT_EQ(fbits(got), fbits(float(want))) << b;  // exact, sign of zero included
    }
    EXPECT_EQ(kiln::detail::isnan(T::from_bits(uint8_t(b))), std::isnan(want)) << b;
    EXPECT_EQ(kiln::detail::isinf(T::from_bits(uint8_t(b))), std::isinf(want)) << b;
    EXPECT_EQ(kiln::detail::isfinite(T::from_bits(uint8_t(b))), std::isfinite(want)) << b;
  }
}

TEST(Float8, DecodesEveryCode) {
  check_decode<Float8_e4m3fn>(kE4M3);
  check_decode<Float8_e5m2>(kE5M2);
  // The formats' headline numbers, from the formula.
  EXPECT_EQ(kE4M3.value(kE4M3.max_code()), 448.0);
  EXPECT_EQ(kE5M2.value(kE5M2.max_code()), 57344.0);
  EXPECT_EQ(kE4M3.value(1), std::ldexp(1.0, -9));
  EXPECT_EQ(kE5M2.value(1), std::ldexp(1.0, -16));
}

TEST(Float8, E4M3fnEncodeMatchesBruteForce) {
  for (float f : test_inputs(kE4M3, 11)) {
    ASSERT_TRUE(same_code(Float8_e4m3fn(f).x, reference_encode(kE4M3, f, Overflow::kPyTorch), f));
    ASSERT_TRUE(same_code(kiln::float8_e4m3fn_saturate(f).x,
                          reference_encode(kE4M3, f, Overflow::kSaturate), f));
  }
}

TEST(Float8, E5M2EncodeMatchesBruteForce) {
  for (float f : test_inputs(kE5M2, 12)) {
    ASSERT_TRUE(same_code(Float8_e5m2(f).x, reference_encode(kE5M2, f, Overflow::kPyTorch), f));
    ASSERT_TRUE(same_code(kiln::float8_e5m2_saturate(f).x,
                          reference_encode(kE5M2, f, Overflow::kSaturate), f));
  }
}

TEST(Float8, OverflowRules) {
  // e4m3fn: 464 is the tie between 448 (even mantissa) and 480 (past the range): stays 448;
  // anything above becomes NaN, as do inf and NaN. The saturating cast clamps instead.
  EXPECT_EQ(float(Float8_e4m3fn(464.0f)), 448.0f);
  EXPECT_TRUE(kiln::detail::isnan(Float8_e4m3fn(std::nextafter(464.0f, 1000.0f))));
  EXPECT_TRUE(kiln::detail::isnan(Float8_e4m3fn(1e6f)));
  EXPECT_TRUE(kiln::detail::isnan(Float8_e4m3fn(INFINITY)));
  EXPECT_EQ(Float8_e4m3fn(-INFINITY).x, 0xFF);
  EXPECT_EQ(float(kiln::float8_e4m3fn_saturate(1e6f)), 448.0f);
  EXPECT_EQ(float(kiln::float8_e4m3fn_saturate(-INFINITY)), -448.0f);
  EXPECT_TRUE(kiln::detail::isnan(kiln::float8_e4m3fn_saturate(NAN)));
  // e5m2: 61440 is the tie between 57344 (odd mantissa) and 65536: rounds to inf.
  EXPECT_EQ(float(Float8_e5m2(std::nextafter(61440.0f, 0.0f))), 57344.0f);
  EXPECT_TRUE(std::isinf(float(Float8_e5m2(61440.0f))));
  EXPECT_EQ(Float8_e5m2(-1e9f).x, 0xFC);
  EXPECT_TRUE(std::isinf(float(Float8_e5m2(INFINITY))));
  EXPECT_TRUE(kiln::detail::isnan(Float8_e5m2(NAN)));
  EXPECT_EQ(float(kiln::float8_e5m2_saturate(INFINITY)), 57344.0f);
  EXPECT_EQ(float(kiln::float8_e5m2_saturate(-1e9f)), -57344.0f);
  EXPECT_TRUE(kiln::detail::isnan(kiln::float8_e5m2_saturate(-NAN)));
  EXPECT_EQ(kiln::float8_e5m2_saturate(-NAN).x, 0xFF);
  // Signed zeros and underflow keep the sign.
  EXPECT_EQ(Float8_e4m3fn(-0.0f).x, 0x80);
  EXPECT_EQ(Float8_e4m3fn(-1e-30f).x, 0x80);
  EXPECT_EQ(Float8_e5m2(-1e-30f).x, 0x80);
}

TEST(Float8, RoundTripIsIdentity) {
  for (int b = 0; b < 256; ++b) {
    const Float8_e4m3fn a = Float8_e4m3fn::from_bits(uint8_t(b));
    const Float8_e5m2 c = Float8_e5m2::from_bits(uint8_t(b));
    if (!kiln::detail::isnan(a)) {
      EXPECT_EQ(Float8_e4m3fn(float(a)).x, b);
    }
    if (!kiln::detail::isnan(c)) {
      EXPECT_EQ(Float8_e5m2(float(c)).x, b);
    }
  }
}

TEST(Float8, ConstructorsFromDoubleAndIntegers) {
  for (int i = -600; i <= 600; ++i) {
    EXPECT_EQ(Float8_e4m3fn(i).x, Float8_e4m3fn(float(i)).x);
    EXPECT_EQ(Float8_e5m2(i * 97).x, Float8_e5m2(float(i * 97)).x);
  }
  std::mt19937_64 rng(13);
  for (int i = 0; i < 100000; ++i) {
    const double d = std::bit_cast<double>(rng());
    if (std::isnan(d)) continue;
    EXPECT_EQ(Float8_e4m3fn(d).x, Float8_e4m3fn(float(d)).x);
    EXPECT_EQ(Float8_e5m2(d).x, Float8_e5m2(float(d)).x);
  }
}

// Every pair: T op T is the float result rounded once by the (independently checked) encoder.
template <class T>
void check_all_pairs(const Format& fmt) {
  for (int i = 0; i < 256; ++i) {
    for (int j = 0; j < 256; ++j) {
      const T a = T::from_bits(uint8_t(i)), b = T::from_bits(uint8_t(j));
      const float fa = float(fmt.value(uint8_t(i))), fb = float(fmt.value(uint8_t(j)));
      const auto want = [&](float r) { return reference_encode(fmt, r, Overflow::kPyTorch); };
      const auto same = [&](T got, float r) {
        return std::isnan(r) ? kiln::detail::isnan(got) : got.x == want(r);
      };
      ASSERT_TRUE(same(a + b, fa + fb)) << i << " " << j;
      ASSERT_TRUE(same(a - b, fa - fb)) << i << " " << j;
      ASSERT_TRUE(same(a * b, fa * fb)) << i << " " << j;
      ASSERT_TRUE(same(a / b, fa / fb)) << i << " " << j;
      T c = a;
      c += b;
      ASSERT_TRUE(same(c, fa + fb));
      ASSERT_EQ(a < b, fa < fb);
      ASSERT_EQ(a == b, fa == fb);
      ASSERT_EQ(a != b, fa != fb);
    }
    const T a = T::from_bits(uint8_t(i));
    const float fa = float(fmt.value(uint8_t(i)));
    ASSERT_TRUE(std::isnan(fa) ? kiln::detail::isnan(-a)
                               : (-a).x == reference_encode(fmt, -fa, Overflow::kPyTorch));
  }
}

TEST(Float8, ArithmeticAllPairs) {
  check_all_pairs<Float8_e4m3fn>(kE4M3);
  check_all_pairs<Float8_e5m2>(kE5M2);
}

template <class T>
void check_limits(const Format& fmt) {
  using L = std::numeric_limits<T>;
  std::vector<double> vals;  // finite positive values, ascending
  for (int c = 0; c <= fmt.max_code(); ++c) vals.push_back(fmt.value(uint8_t(c)));
  const double max = vals.back(), denorm_min = vals[1];
  double after_one = 0, min_normal = 0;
  for (double v : vals) {
    if (after_one == 0 && v > 1) after_one = v;
  }
  const double eps = after_one - 1;
  for (size_t i = 1; i + 1 < vals.size(); ++i) {
    if (vals[i + 1] - vals[i] == vals[i] * eps) {  // first value spaced like a normal
      min_normal = vals[i];
      break;
    }
  }
  const int digits = 1 - std::ilogb(eps);
  EXPECT_EQ(double(float(L::max())), max);
  EXPECT_EQ(double(float(L::lowest())), -max);
  EXPECT_EQ(double(float(L::min())), min_normal);
  EXPECT_EQ(double(float(L::denorm_min())), denorm_min);
  EXPECT_EQ(double(float(L::epsilon())), eps);
  EXPECT_EQ(double(float(L::round_error())), 0.5);
  EXPECT_TRUE(std::isnan(float(L::quiet_NaN())));
  EXPECT_EQ(L::has_infinity, fmt.ieee_specials);
  if (L::has_infinity) {
    EXPECT_TRUE(std::isinf(float(L::infinity())));
  }
  EXPECT_EQ(L::digits, digits);
  EXPECT_EQ(L::digits10, int(std::floor((digits - 1) * std::log10(2.0))));
  EXPECT_EQ(L::max_digits10, int(std::ceil(1 + digits * std::log10(2.0))));
  EXPECT_EQ(L::min_exponent, std::ilogb(min_normal) + 1);
  EXPECT_EQ(L::max_exponent, std::ilogb(max) + 1);
  EXPECT_EQ(L::min_exponent10, int(std::ceil(std::log10(min_normal))));
  EXPECT_EQ(L::max_exponent10, int(std::floor(std::log10(max))));
  EXPECT_TRUE(L::is_specialized);
  EXPECT_TRUE(L::is_signed);
  EXPECT_FALSE(L::is_integer);
  EXPECT_FALSE(L::is_iec559);
  EXPECT_EQ(L::has_denorm, std::denorm_present);
}

TEST(Float8, NumericLimits) {
  check_limits<Float8_e4m3fn>(kE4M3);
  check_limits<Float8_e5m2>(kE5M2);
}

}  // namespace
