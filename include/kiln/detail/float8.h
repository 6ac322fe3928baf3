// Float8_e4m3fn and Float8_e5m2 (the OCP 8-bit floats PyTorch calls float8_e4m3fn/float8_e5m2),
// their saturating encoders, OpMath/isnan/numeric_limits entries. Included by kiln/half.h.
#pragma once

#include "kiln/half.h"

// Note [Float8 formats]
// e4m3fn: 1 sign, 4 exponent (bias 7), 3 mantissa bits; no infinities; S.1111.111 is NaN, so
// the largest finite value is 448 and the smallest subnormal 2^-9. e5m2: 1 sign, 5 exponent
// (bias 15), 2 mantissa bits, IEEE-like (inf, NaN), max 57344, smallest subnormal 2^-16; it is
// a binary16 with the low 8 bits dropped, so decoding goes through the Half decoder.
// The implicit constructors from float follow PyTorch (Note [Reduced-precision conversions]):
// e4m3fn turns overflow (|x| > 464, i.e. anything that rounds past 448), inf and NaN into NaN;
// e5m2 rounds overflow to inf (|x| >= 61440 with ties to even). The *_saturate encoders clamp
// to +-max finite instead (inf included) and keep NaN, for scaled-fp8 casts.

namespace kiln {
namespace detail {

KILN_HD inline u8 fp8_e4m3fn_bits_from_float(float f) {
  const u32 w = float_to_bits(f);
  const u32 sign = (w >> 24) & 0x80u;
  const u32 a = w & 0x7FFFFFFFu;
  if (a >= 0x7F800000u) return static_cast<u8>(sign | 0x7Fu);  // inf, NaN -> NaN
  const u32 c = round_float_bits<3, 7>(a);
  return static_cast<u8>(sign | (c <= 0x7Eu ? c : 0x7Fu));
}

KILN_HD inline u8 fp8_e4m3fn_bits_from_float_saturate(float f) {
  const u32 w = float_to_bits(f);
  const u32 sign = (w >> 24) & 0x80u;
  const u32 a = w & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return static_cast<u8>(sign | 0x7Fu);
  const u32 c = round_float_bits<3, 7>(a);  // +inf gives a code far above 0x7E
  return static_cast<u8>(sign | (c <= 0x7Eu ? c : 0x7Eu));
}

KILN_HD inline float float_from_fp8_e4m3fn_bits(u8 b) {
  const u32 sign = u32(b & 0x80u) << 24;
  const u32 c = b & 0x7Fu;
  if (c == 0x7Fu) return bits_to_float(sign | 0x7FF00000u);  // NaN, payload 111 (quiet)
  return bits_to_float(sign | float_bits_of_code<3, 7>(c));
}

KILN_HD inline u8 fp8_e5m2_bits_from_float(float f) {
  const u32 w = float_to_bits(f);
  const u32 sign = (w >> 24) & 0x80u;
  const u32 a = w & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return static_cast<u8>(sign | 0x7Fu);
  const u32 c = round_float_bits<2, 15>(a);
  return static_cast<u8>(sign | (c < 0x7Cu ? c : 0x7Cu));
}

KILN_HD inline u8 fp8_e5m2_bits_from_float_saturate(float f) {
  const u32 w = float_to_bits(f);
  const u32 sign = (w >> 24) & 0x80u;
  const u32 a = w & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return static_cast<u8>(sign | 0x7Fu);
  const u32 c = round_float_bits<2, 15>(a);
  return static_cast<u8>(sign | (c <= 0x7Bu ? c : 0x7Bu));
}

KILN_HD inline float float_from_fp8_e5m2_bits(u8 b) {
  return float_from_half_bits(static_cast<u16>(u32(b) << 8));
}

}  // namespace detail

struct alignas(1) Float8_e4m3fn {
  detail::u8 x;

  Float8_e4m3fn() = default;
  KILN_HD static constexpr Float8_e4m3fn from_bits(detail::u8 bits) {
    return Float8_e4m3fn(bits, detail::FromBitsTag{});
  }
  KILN_HD Float8_e4m3fn(float v) : x(detail::fp8_e4m3fn_bits_from_float(v)) {}
  KILN_HD Float8_e4m3fn(double v) : Float8_e4m3fn(static_cast<float>(v)) {}
  template <class I, detail::EnableIfIntegral<I> = 0>
  KILN_HD Float8_e4m3fn(I v) : Float8_e4m3fn(static_cast<float>(v)) {}
  KILN_HD operator float() const { return detail::float_from_fp8_e4m3fn_bits(x); }

 private:
  KILN_HD constexpr Float8_e4m3fn(detail::u8 bits, detail::FromBitsTag) : x(bits) {}
};

struct alignas(1) Float8_e5m2 {
  detail::u8 x;

  Float8_e5m2() = default;
  KILN_HD static constexpr Float8_e5m2 from_bits(detail::u8 bits) {
    return Float8_e5m2(bits, detail::FromBitsTag{});
  }
  KILN_HD Float8_e5m2(float v) : x(detail::fp8_e5m2_bits_from_float(v)) {}
  KILN_HD Float8_e5m2(double v) : Float8_e5m2(static_cast<float>(v)) {}
  template <class I, detail::EnableIfIntegral<I> = 0>
  KILN_HD Float8_e5m2(I v) : Float8_e5m2(static_cast<float>(v)) {}
  KILN_HD operator float() const { return detail::float_from_fp8_e5m2_bits(x); }

 private:
  KILN_HD constexpr Float8_e5m2(detail::u8 bits, detail::FromBitsTag) : x(bits) {}
};

// Saturating casts: round to nearest even, clamp to +-max finite (inf too), NaN stays NaN.
KILN_HD inline Float8_e4m3fn float8_e4m3fn_saturate(float v) {
  return Float8_e4m3fn::from_bits(detail::fp8_e4m3fn_bits_from_float_saturate(v));
}
KILN_HD inline Float8_e5m2 float8_e5m2_saturate(float v) {
  return Float8_e5m2::from_bits(detail::fp8_e5m2_bits_from_float_saturate(v));
}

namespace detail {
template <>
struct IsReducedFloat<Float8_e4m3fn> {
  static constexpr bool value = true;
};
template <>
struct IsReducedFloat<Float8_e5m2> {
  static constexpr bool value = true;
};

KILN_HD constexpr bool isnan(Float8_e4m3fn v) { return (v.x & 0x7Fu) == 0x7Fu; }
KILN_HD constexpr bool isinf(Float8_e4m3fn) { return false; }
KILN_HD constexpr bool isfinite(Float8_e4m3fn v) { return (v.x & 0x7Fu) != 0x7Fu; }
KILN_HD constexpr bool isnan(Float8_e5m2 v) { return (v.x & 0x7Fu) > 0x7Cu; }
KILN_HD constexpr bool isinf(Float8_e5m2 v) { return (v.x & 0x7Fu) == 0x7Cu; }
KILN_HD constexpr bool isfinite(Float8_e5m2 v) { return (v.x & 0x7Cu) != 0x7Cu; }
}  // namespace detail

template <>
struct OpMath<Float8_e4m3fn> {
  using type = float;
};
template <>
struct OpMath<Float8_e5m2> {
  using type = float;
};

}  // namespace kiln

#if !KILN_RTC
namespace std {
template <>
class numeric_limits<kiln::Float8_e4m3fn> : public kiln::detail::ReducedFloatLimitsBase {
  using T = kiln::Float8_e4m3fn;

 public:
  static constexpr bool has_infinity = false;
  static constexpr bool has_signaling_NaN = false;
  static constexpr bool is_iec559 = false;
  static constexpr int digits = 4;
  static constexpr int digits10 = 0;
  static constexpr int max_digits10 = 3;
  static constexpr int min_exponent = -5;
  static constexpr int min_exponent10 = -1;
  static constexpr int max_exponent = 9;
  static constexpr int max_exponent10 = 2;
  KILN_HD static constexpr T min() noexcept { return T::from_bits(0x08); }
  KILN_HD static constexpr T lowest() noexcept { return T::from_bits(0xFE); }
  KILN_HD static constexpr T max() noexcept { return T::from_bits(0x7E); }
  KILN_HD static constexpr T epsilon() noexcept { return T::from_bits(0x20); }
  KILN_HD static constexpr T round_error() noexcept { return T::from_bits(0x30); }
  // No infinity: like numeric_limits<int>::infinity(), a meaningless zero.
  KILN_HD static constexpr T infinity() noexcept { return T::from_bits(0x00); }
  KILN_HD static constexpr T quiet_NaN() noexcept { return T::from_bits(0x7F); }
  KILN_HD static constexpr T signaling_NaN() noexcept { return T::from_bits(0x7F); }
  KILN_HD static constexpr T denorm_min() noexcept { return T::from_bits(0x01); }
};

template <>
class numeric_limits<kiln::Float8_e5m2> : public kiln::detail::ReducedFloatLimitsBase {
  using T = kiln::Float8_e5m2;

 public:
  static constexpr bool has_infinity = true;
  static constexpr bool has_signaling_NaN = true;
  static constexpr bool is_iec559 = false;
  static constexpr int digits = 3;
  static constexpr int digits10 = 0;
  static constexpr int max_digits10 = 2;
  static constexpr int min_exponent = -13;
  static constexpr int min_exponent10 = -4;
  static constexpr int max_exponent = 16;
  static constexpr int max_exponent10 = 4;
  KILN_HD static constexpr T min() noexcept { return T::from_bits(0x04); }
  KILN_HD static constexpr T lowest() noexcept { return T::from_bits(0xFB); }
  KILN_HD static constexpr T max() noexcept { return T::from_bits(0x7B); }
  KILN_HD static constexpr T epsilon() noexcept { return T::from_bits(0x34); }
  KILN_HD static constexpr T round_error() noexcept { return T::from_bits(0x38); }
  KILN_HD static constexpr T infinity() noexcept { return T::from_bits(0x7C); }
  KILN_HD static constexpr T quiet_NaN() noexcept { return T::from_bits(0x7F); }
  KILN_HD static constexpr T signaling_NaN() noexcept { return T::from_bits(0x7D); }
  KILN_HD static constexpr T denorm_min() noexcept { return T::from_bits(0x01); }
};
}  // namespace std
#endif  // !KILN_RTC
