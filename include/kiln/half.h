// kiln's reduced-precision scalars: Half (IEEE binary16) and BFloat16, the helpers they share
// (bit casts, the float rounding core, OpMath, detail::isnan/isinf), and, via detail/float8.h,
// Float8_e4m3fn and Float8_e5m2. Host, device and run-time-compiler (NVRTC/hiprtc) safe.
#pragma once

#include "kiln/macros.h"

// True under the run-time compilers, where no standard header exists.
#ifndef KILN_RTC
#if defined(__CUDACC_RTC__) || defined(__HIPCC_RTC__)
#define KILN_RTC 1
#else
#define KILN_RTC 0
#endif
#endif

#if !KILN_RTC
#include <cstdint>
#include <iosfwd>
#include <limits>
#endif

// Under hipcc the device intrinsics used below (__float_as_uint, ...) come from hip_runtime.h,
// which the HIP build force-includes (cmake/gpu_lang.cmake, scripts/test's HIP check).

// F16C turns float <-> half into one instruction; only for plain host compilation.
#if !KILN_DEVICE_COMPILER && defined(__F16C__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#define KILN_HALF_F16C 1
#else
#define KILN_HALF_F16C 0
#endif

// Note [Reduced-precision conversions]
// All conversions follow PyTorch's c10 types value for value:
// - float -> Half / BFloat16 / Float8: round to nearest, ties to even, subnormals kept.
// - Half and Float8_e5m2 overflow to +-inf; Float8_e4m3fn has no inf, so anything that rounds
//   past its largest finite value 448 (|x| > 464), inf and NaN become NaN (0x7F/0xFF).
// - BFloat16(NaN) is 0x7FC0 (sign dropped), as c10's round_to_nearest_even.
// - Half(NaN) keeps the sign and the top payload bits and sets the quiet bit, as F16C and
//   GCC's _Float16 do (c10's portable path returns 0x7E00|sign; both are NaN). Float8 NaNs keep
//   the sign. Decoding a NaN gives a quiet float NaN with the payload bits shifted up.
// - double and integer inputs go through float first, exactly as c10 (so Half(double) may round
//   twice; Half(1 + 2^-11 + 2^-40) is 1, not 1 + 2^-10). This keeps kiln's tensor casts equal to
//   PyTorch's.
// - On NVIDIA devices, Half and BFloat16 (sm_80+) use the hardware cvt instructions; they give
//   the same values, but a NaN produced there is the canonical 0x7FFF (as in PyTorch on CUDA).
// The portable encoders use integers only, so they do not depend on the FP rounding mode,
// flush-to-zero or fast-math.

namespace kiln {
namespace detail {

#if KILN_RTC
using u8 = unsigned char;
using u16 = unsigned short;
using u32 = unsigned int;
using u64 = unsigned long long;
#else
using u8 = std::uint8_t;
using u16 = std::uint16_t;
using u32 = std::uint32_t;
using u64 = std::uint64_t;
#endif

// Minimal traits: <type_traits> is not available under the run-time compilers.
template <bool B, class T = void>
struct EnableIf {};
template <class T>
struct EnableIf<true, T> {
  using type = T;
};
template <class A, class B>
struct IsSame {
  static constexpr bool value = false;
};
template <class A>
struct IsSame<A, A> {
  static constexpr bool value = true;
};
template <class T>
struct IsIntegral {
  static constexpr bool value = false;
};
#define KILN_DETAIL_INTEGRAL(T)         \
  template <>                           \
  struct IsIntegral<T> {                \
    static constexpr bool value = true; \
  }
KILN_DETAIL_INTEGRAL(bool);
KILN_DETAIL_INTEGRAL(char);
KILN_DETAIL_INTEGRAL(signed char);
KILN_DETAIL_INTEGRAL(unsigned char);
KILN_DETAIL_INTEGRAL(wchar_t);
KILN_DETAIL_INTEGRAL(char16_t);
KILN_DETAIL_INTEGRAL(char32_t);
KILN_DETAIL_INTEGRAL(short);
KILN_DETAIL_INTEGRAL(unsigned short);
KILN_DETAIL_INTEGRAL(int);
KILN_DETAIL_INTEGRAL(unsigned int);
KILN_DETAIL_INTEGRAL(long);
KILN_DETAIL_INTEGRAL(unsigned long);
KILN_DETAIL_INTEGRAL(long long);
KILN_DETAIL_INTEGRAL(unsigned long long);
#undef KILN_DETAIL_INTEGRAL
template <class T>
using EnableIfIntegral = typename EnableIf<IsIntegral<T>::value, int>::type;

// Bit casts between float/double and their integer images, usable in every compilation mode.
KILN_HD inline u32 float_to_bits(float f) {
#if KILN_DEVICE_CODE
  return __float_as_uint(f);
#else
  return __builtin_bit_cast(u32, f);
#endif
}
KILN_HD inline float bits_to_float(u32 u) {
#if KILN_DEVICE_CODE
  return __uint_as_float(u);
#else
  return __builtin_bit_cast(float, u);
#endif
}
KILN_HD inline u64 double_to_bits(double d) {
#if KILN_DEVICE_CODE
  return static_cast<u64>(__double_as_longlong(d));
#else
  return __builtin_bit_cast(u64, d);
#endif
}
KILN_HD inline double bits_to_double(u64 u) {
#if KILN_DEVICE_CODE
  return __longlong_as_double(static_cast<long long>(u));
#else
  return __builtin_bit_cast(double, u);
#endif
}
// Generic bit cast between trivially copyable types of equal size.
template <class To, class From>
KILN_HD inline To bit_cast(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast: sizes differ");
  To to;
  __builtin_memcpy(&to, &from, sizeof(To));
  return to;
}

// Rounds a non-negative float, given as its bits `a` (finite or +inf, never NaN), to the code
// (biased exponent << M | mantissa) of a binary format with M mantissa bits and exponent bias B,
// round to nearest even, subnormals included. The exponent range is unbounded above: codes past
// the format's largest finite value are returned as they are and the caller applies its
// overflow rule. Integer arithmetic only.
template <int M, int B>
KILN_HD inline u32 round_float_bits(u32 a) {
  constexpr int kDrop = 23 - M;
  if (a >= (u32(128 - B) << 23)) {           // |f| >= 2^(1-B), the format's smallest normal
    const u32 r = a - (u32(127 - B) << 23);  // rebias the exponent field
    return (r + ((1u << (kDrop - 1)) - 1u) + ((r >> kDrop) & 1u)) >> kDrop;
  }
  // Subnormal result: |f| = mant * 2^(e - 150) with e >= 1; the result unit is 2^(1 - B - M).
  const u32 e = a >> 23;
  const u32 mant = (a & 0x7FFFFFu) | (e != 0 ? 0x800000u : 0u);
  const int shift = 151 - B - M - int(e != 0 ? e : 1u);
  if (shift > 24) return 0;  // |f| < half the smallest subnormal
  const u32 q = mant >> shift;
  const u32 rem = mant & ((1u << shift) - 1u);
  const u32 half = 1u << (shift - 1);
  return q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u);
}

// Decodes a finite code (no sign) of the same kind of format to float bits. Exact.
template <int M, int B>
KILN_HD inline u32 float_bits_of_code(u32 c) {
  const u32 e = c >> M;
  const u32 m = c & ((1u << M) - 1u);
  if (e != 0) return ((e + 127u - B) << 23) | (m << (23 - M));
  // Subnormal: m * 2^(1 - B - M); the product is exact and a normal float.
  return float_to_bits(static_cast<float>(static_cast<int>(m)) *
                       bits_to_float(u32(128 - B - M) << 23));
}

// ---- Half --------------------------------------------------------------------------------------

KILN_HD inline u16 half_bits_from_float_portable(float f) {
  const u32 w = float_to_bits(f);
  const u32 sign = (w >> 16) & 0x8000u;
  const u32 a = w & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return static_cast<u16>(sign | 0x7E00u | ((a >> 13) & 0x3FFu));
  const u32 c = round_float_bits<10, 15>(a);
  return static_cast<u16>(sign | (c < 0x7C00u ? c : 0x7C00u));
}

KILN_HD inline float float_from_half_bits_portable(u16 h) {
  const u32 sign = u32(h & 0x8000u) << 16;
  const u32 c = h & 0x7FFFu;
  if (c >= 0x7C00u) {  // inf or NaN (quieted)
    const u32 m = c & 0x3FFu;
    return bits_to_float(sign | 0x7F800000u | (m << 13) | (m != 0 ? 0x400000u : 0u));
  }
  return bits_to_float(sign | float_bits_of_code<10, 15>(c));
}

KILN_HD inline u16 half_bits_from_float(float f) {
#if KILN_DEVICE_CODE && defined(__CUDA_ARCH__)
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
#elif KILN_HALF_F16C
  return static_cast<u16>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
#else
  return half_bits_from_float_portable(f);
#endif
}

KILN_HD inline float float_from_half_bits(u16 h) {
#if KILN_DEVICE_CODE && defined(__CUDA_ARCH__)
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
#elif KILN_HALF_F16C
  return _cvtsh_ss(h);
#else
  return float_from_half_bits_portable(h);
#endif
}

// ---- BFloat16 ----------------------------------------------------------------------------------

KILN_HD inline u16 bf16_bits_from_float_portable(float f) {
  const u32 w = float_to_bits(f);
  if ((w & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FC0u;
  // Adding 0x7FFF (+1 when the kept part is odd) carries into bit 16 exactly when the dropped
  // half-word is above the halfway point (or at it with an odd kept part).
  return static_cast<u16>((w + 0x7FFFu + ((w >> 16) & 1u)) >> 16);
}

KILN_HD inline u16 bf16_bits_from_float(float f) {
#if KILN_DEVICE_CODE && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  unsigned short h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
#else
  return bf16_bits_from_float_portable(f);
#endif
}

KILN_HD inline float float_from_bf16_bits(u16 b) { return bits_to_float(u32(b) << 16); }

struct FromBitsTag {};

}  // namespace detail

// IEEE 754 binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits. Arithmetic is done in
// float and rounded back (Note [Reduced-precision conversions]).
struct alignas(2) Half {
  detail::u16 x;

  Half() = default;
  KILN_HD static constexpr Half from_bits(detail::u16 bits) {
    return Half(bits, detail::FromBitsTag{});
  }
  KILN_HD Half(float v) : x(detail::half_bits_from_float(v)) {}
  KILN_HD Half(double v) : Half(static_cast<float>(v)) {}
  template <class I, detail::EnableIfIntegral<I> = 0>
  KILN_HD Half(I v) : Half(static_cast<float>(v)) {}
  KILN_HD operator float() const { return detail::float_from_half_bits(x); }

 private:
  KILN_HD constexpr Half(detail::u16 bits, detail::FromBitsTag) : x(bits) {}
};

// bfloat16: the top half of a float (1 sign, 8 exponent, 7 mantissa bits).
struct alignas(2) BFloat16 {
  detail::u16 x;

  BFloat16() = default;
  KILN_HD static constexpr BFloat16 from_bits(detail::u16 bits) {
    return BFloat16(bits, detail::FromBitsTag{});
  }
  KILN_HD BFloat16(float v) : x(detail::bf16_bits_from_float(v)) {}
  KILN_HD BFloat16(double v) : BFloat16(static_cast<float>(v)) {}
  template <class I, detail::EnableIfIntegral<I> = 0>
  KILN_HD BFloat16(I v) : BFloat16(static_cast<float>(v)) {}
  KILN_HD operator float() const { return detail::float_from_bf16_bits(x); }

 private:
  KILN_HD constexpr BFloat16(detail::u16 bits, detail::FromBitsTag) : x(bits) {}
};

namespace detail {
// True for kiln's reduced-precision float structs; detail/float8.h adds the Float8 types.
template <class T>
struct IsReducedFloat {
  static constexpr bool value = false;
};
template <>
struct IsReducedFloat<Half> {
  static constexpr bool value = true;
};
template <>
struct IsReducedFloat<BFloat16> {
  static constexpr bool value = true;
};
template <class T>
using EnableIfReduced = typename EnableIf<IsReducedFloat<T>::value, int>::type;
template <class T, class I>
using EnableIfReducedInt =
    typename EnableIf<IsReducedFloat<T>::value && IsIntegral<I>::value, int>::type;
template <class A, class B>
using EnableIfReducedMix =
    typename EnableIf<IsReducedFloat<A>::value && IsReducedFloat<B>::value && !IsSame<A, B>::value,
                      int>::type;
}  // namespace detail

// ---- Arithmetic, shared by all reduced types --------------------------------------------------
// T op T -> T (computed in float, rounded once); T op float -> float; T op double -> double;
// T op integer -> T with the integer converted to T first (c10's rule); two different reduced
// types -> float. Comparisons between reduced values compare their float values.

#define KILN_DETAIL_REDUCED_BINARY(op)                              \
  template <class T, detail::EnableIfReduced<T> = 0>                \
  KILN_HD inline T operator op(T a, T b) {                          \
    return T(static_cast<float>(a) op static_cast<float>(b));       \
  }                                                                 \
  template <class T, detail::EnableIfReduced<T> = 0>                \
  KILN_HD inline float operator op(T a, float b) {                  \
    return static_cast<float>(a) op b;                              \
  }                                                                 \
  template <class T, detail::EnableIfReduced<T> = 0>                \
  KILN_HD inline float operator op(float a, T b) {                  \
    return a op static_cast<float>(b);                              \
  }                                                                 \
  template <class T, detail::EnableIfReduced<T> = 0>                \
  KILN_HD inline double operator op(T a, double b) {                \
    return static_cast<double>(static_cast<float>(a)) op b;         \
  }                                                                 \
  template <class T, detail::EnableIfReduced<T> = 0>                \
  KILN_HD inline double operator op(double a, T b) {                \
    return a op static_cast<double>(static_cast<float>(b));         \
  }                                                                 \
  template <class T, class I, detail::EnableIfReducedInt<T, I> = 0> \
  KILN_HD inline T operator op(T a, I b) {                          \
    return a op T(b);                                               \
  }                                                                 \
  template <class T, class I, detail::EnableIfReducedInt<T, I> = 0> \
  KILN_HD inline T operator op(I a, T b) {                          \
    return T(a) op b;                                               \
  }                                                                 \
  template <class A, class B, detail::EnableIfReducedMix<A, B> = 0> \
  KILN_HD inline float operator op(A a, B b) {                      \
    return static_cast<float>(a) op static_cast<float>(b);          \
  }                                                                 \
  template <class T, detail::EnableIfReduced<T> = 0>                \
  KILN_HD inline T& operator op##=(T& a, T b) {                     \
    return a = a op b;                                              \
  }                                                                 \
  template <class T, detail::EnableIfReduced<T> = 0>                \
  KILN_HD inline T& operator op##=(T& a, float b) {                 \
    return a = T(static_cast<float>(a) op b);                       \
  }                                                                 \
  template <class T, class I, detail::EnableIfReducedInt<T, I> = 0> \
  KILN_HD inline T& operator op##=(T& a, I b) {                     \
    return a = a op T(b);                                           \
  }

KILN_DETAIL_REDUCED_BINARY(+)
KILN_DETAIL_REDUCED_BINARY(-)
KILN_DETAIL_REDUCED_BINARY(*)
KILN_DETAIL_REDUCED_BINARY(/)
#undef KILN_DETAIL_REDUCED_BINARY

template <class T, detail::EnableIfReduced<T> = 0>
KILN_HD inline T operator-(T a) {
  return T(-static_cast<float>(a));
}
template <class T, detail::EnableIfReduced<T> = 0>
KILN_HD inline T operator+(T a) {
  return a;
}

#define KILN_DETAIL_REDUCED_COMPARE(op)                    \
  template <class T, detail::EnableIfReduced<T> = 0>       \
  KILN_HD inline bool operator op(T a, T b) {              \
    return static_cast<float>(a) op static_cast<float>(b); \
  }
KILN_DETAIL_REDUCED_COMPARE(==)
KILN_DETAIL_REDUCED_COMPARE(!=)
KILN_DETAIL_REDUCED_COMPARE(<)
KILN_DETAIL_REDUCED_COMPARE(<=)
KILN_DETAIL_REDUCED_COMPARE(>)
KILN_DETAIL_REDUCED_COMPARE(>=)
#undef KILN_DETAIL_REDUCED_COMPARE

// The type kernels compute in: float for the reduced types, T itself otherwise.
template <class T>
struct OpMath {
  using type = T;
};
template <>
struct OpMath<Half> {
  using type = float;
};
template <>
struct OpMath<BFloat16> {
  using type = float;
};
template <class T>
using OpMathType = typename OpMath<T>::type;

// ---- isnan / isinf / isfinite for every scalar type (bit tests: immune to fast-math) ----------
namespace detail {
KILN_HD inline bool isnan(float v) { return (float_to_bits(v) & 0x7FFFFFFFu) > 0x7F800000u; }
KILN_HD inline bool isinf(float v) { return (float_to_bits(v) & 0x7FFFFFFFu) == 0x7F800000u; }
KILN_HD inline bool isfinite(float v) { return (float_to_bits(v) & 0x7F800000u) != 0x7F800000u; }
KILN_HD inline bool isnan(double v) {
  return (double_to_bits(v) & 0x7FFFFFFFFFFFFFFFull) > 0x7FF0000000000000ull;
}
KILN_HD inline bool isinf(double v) {
  return (double_to_bits(v) & 0x7FFFFFFFFFFFFFFFull) == 0x7FF0000000000000ull;
}
KILN_HD inline bool isfinite(double v) {
  return (double_to_bits(v) & 0x7FF0000000000000ull) != 0x7FF0000000000000ull;
}
#if !KILN_DEVICE_COMPILER
inline bool isnan(long double v) { return __builtin_isnan(v); }
inline bool isinf(long double v) { return __builtin_isinf(v); }
inline bool isfinite(long double v) { return __builtin_isfinite(v); }
#endif
template <class I, EnableIfIntegral<I> = 0>
KILN_HD constexpr bool isnan(I) {
  return false;
}
template <class I, EnableIfIntegral<I> = 0>
KILN_HD constexpr bool isinf(I) {
  return false;
}
template <class I, EnableIfIntegral<I> = 0>
KILN_HD constexpr bool isfinite(I) {
  return true;
}
KILN_HD constexpr bool isnan(Half h) { return (h.x & 0x7FFFu) > 0x7C00u; }
KILN_HD constexpr bool isinf(Half h) { return (h.x & 0x7FFFu) == 0x7C00u; }
KILN_HD constexpr bool isfinite(Half h) { return (h.x & 0x7C00u) != 0x7C00u; }
KILN_HD constexpr bool isnan(BFloat16 b) { return (b.x & 0x7FFFu) > 0x7F80u; }
KILN_HD constexpr bool isinf(BFloat16 b) { return (b.x & 0x7FFFu) == 0x7F80u; }
KILN_HD constexpr bool isfinite(BFloat16 b) { return (b.x & 0x7F80u) != 0x7F80u; }
}  // namespace detail

// ---- Printing (host only; needs <ostream> at the point of use) --------------------------------
#if !KILN_RTC
template <class C, class Tr, class T, detail::EnableIfReduced<T> = 0>
std::basic_ostream<C, Tr>& operator<<(std::basic_ostream<C, Tr>& os, T v) {
  return os << static_cast<float>(v);
}
#endif

}  // namespace kiln

// ---- std::numeric_limits ------------------------------------------------------------------------
#if !KILN_RTC
namespace kiln::detail {
// Members common to every reduced float type.
struct ReducedFloatLimitsBase {
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool is_exact = false;
  static constexpr bool has_quiet_NaN = true;
  static constexpr std::float_denorm_style has_denorm = std::denorm_present;
  static constexpr bool has_denorm_loss = false;
  static constexpr std::float_round_style round_style = std::round_to_nearest;
  static constexpr bool is_bounded = true;
  static constexpr bool is_modulo = false;
  static constexpr int radix = 2;
  static constexpr bool traps = false;
  static constexpr bool tinyness_before = false;
};
}  // namespace kiln::detail

namespace std {
template <>
class numeric_limits<kiln::Half> : public kiln::detail::ReducedFloatLimitsBase {
 public:
  static constexpr bool has_infinity = true;
  static constexpr bool has_signaling_NaN = true;
  static constexpr bool is_iec559 = true;
  static constexpr int digits = 11;
  static constexpr int digits10 = 3;
  static constexpr int max_digits10 = 5;
  static constexpr int min_exponent = -13;
  static constexpr int min_exponent10 = -4;
  static constexpr int max_exponent = 16;
  static constexpr int max_exponent10 = 4;
  KILN_HD static constexpr kiln::Half min() noexcept { return kiln::Half::from_bits(0x0400); }
  KILN_HD static constexpr kiln::Half lowest() noexcept { return kiln::Half::from_bits(0xFBFF); }
  KILN_HD static constexpr kiln::Half max() noexcept { return kiln::Half::from_bits(0x7BFF); }
  KILN_HD static constexpr kiln::Half epsilon() noexcept { return kiln::Half::from_bits(0x1400); }
  KILN_HD static constexpr kiln::Half round_error() noexcept {
    return kiln::Half::from_bits(0x3800);
  }
  KILN_HD static constexpr kiln::Half infinity() noexcept { return kiln::Half::from_bits(0x7C00); }
  KILN_HD static constexpr kiln::Half quiet_NaN() noexcept { return kiln::Half::from_bits(0x7E00); }
  KILN_HD static constexpr kiln::Half signaling_NaN() noexcept {
    return kiln::Half::from_bits(0x7D00);
  }
  KILN_HD static constexpr kiln::Half denorm_min() noexcept {
    return kiln::Half::from_bits(0x0001);
  }
};

template <>
class numeric_limits<kiln::BFloat16> : public kiln::detail::ReducedFloatLimitsBase {
 public:
  static constexpr bool has_infinity = true;
  static constexpr bool has_signaling_NaN = true;
  static constexpr bool is_iec559 = false;
  static constexpr int digits = 8;
  static constexpr int digits10 = 2;
  static constexpr int max_digits10 = 4;
  static constexpr int min_exponent = -125;
  static constexpr int min_exponent10 = -37;
  static constexpr int max_exponent = 128;
  static constexpr int max_exponent10 = 38;
  KILN_HD static constexpr kiln::BFloat16 min() noexcept {
    return kiln::BFloat16::from_bits(0x0080);
  }
  KILN_HD static constexpr kiln::BFloat16 lowest() noexcept {
    return kiln::BFloat16::from_bits(0xFF7F);
  }
  KILN_HD static constexpr kiln::BFloat16 max() noexcept {
    return kiln::BFloat16::from_bits(0x7F7F);
  }
  KILN_HD static constexpr kiln::BFloat16 epsilon() noexcept {
    return kiln::BFloat16::from_bits(0x3C00);
  }
  KILN_HD static constexpr kiln::BFloat16 round_error() noexcept {
    return kiln::BFloat16::from_bits(0x3F00);
  }
  KILN_HD static constexpr kiln::BFloat16 infinity() noexcept {
    return kiln::BFloat16::from_bits(0x7F80);
  }
  KILN_HD static constexpr kiln::BFloat16 quiet_NaN() noexcept {
    return kiln::BFloat16::from_bits(0x7FC0);
  }
  KILN_HD static constexpr kiln::BFloat16 signaling_NaN() noexcept {
    return kiln::BFloat16::from_bits(0x7FA0);
  }
  KILN_HD static constexpr kiln::BFloat16 denorm_min() noexcept {
    return kiln::BFloat16::from_bits(0x0001);
  }
};
}  // namespace std
#endif  // !KILN_RTC

#include "kiln/detail/float8.h"
