// kiln::complex<T> itself: layout, constructors, arithmetic (robust division), comparisons and
// the elementary free functions (real imag abs arg norm conj proj polar isnan isinf isfinite),
// plus detail::rmath, the real math used by the complex code on host and device.
#pragma once

#include "kiln/half.h"

#if !KILN_RTC
#include <cmath>
#include <complex>
#endif

namespace kiln {
namespace detail {

// Real math by overload, spelled so it compiles for the host, nvcc/hipcc device code and the
// run-time compilers (which declare the C math functions without any header).
namespace rmath {
#define KILN_DETAIL_RMATH1(name)                              \
  KILN_HD inline float name(float x) { return ::name##f(x); } \
  KILN_HD inline double name(double x) { return ::name(x); }
#define KILN_DETAIL_RMATH2(name)                                          \
  KILN_HD inline float name(float x, float y) { return ::name##f(x, y); } \
  KILN_HD inline double name(double x, double y) { return ::name(x, y); }
KILN_DETAIL_RMATH1(exp)
KILN_DETAIL_RMATH1(log)
KILN_DETAIL_RMATH1(log1p)
KILN_DETAIL_RMATH1(sqrt)
KILN_DETAIL_RMATH1(sin)
KILN_DETAIL_RMATH1(cos)
KILN_DETAIL_RMATH1(tan)
KILN_DETAIL_RMATH1(sinh)
KILN_DETAIL_RMATH1(cosh)
KILN_DETAIL_RMATH1(tanh)
KILN_DETAIL_RMATH1(asin)
KILN_DETAIL_RMATH1(acos)
KILN_DETAIL_RMATH1(atan)
KILN_DETAIL_RMATH1(fabs)
KILN_DETAIL_RMATH2(atan2)
KILN_DETAIL_RMATH2(hypot)
KILN_DETAIL_RMATH2(copysign)
KILN_DETAIL_RMATH2(pow)
KILN_DETAIL_RMATH2(fmax)
#undef KILN_DETAIL_RMATH1
#undef KILN_DETAIL_RMATH2
KILN_HD inline float fma(float x, float y, float z) { return ::fmaf(x, y, z); }
KILN_HD inline double fma(double x, double y, double z) { return ::fma(x, y, z); }
KILN_HD inline float scalbn(float x, int n) { return ::scalbnf(x, n); }
KILN_HD inline double scalbn(double x, int n) { return ::scalbn(x, n); }
KILN_HD inline int ilogb(float x) { return ::ilogbf(x); }
KILN_HD inline int ilogb(double x) { return ::ilogb(x); }
KILN_HD inline bool signbit(float x) { return (float_to_bits(x) >> 31) != 0; }
KILN_HD inline bool signbit(double x) { return (double_to_bits(x) >> 63) != 0; }
}  // namespace rmath

// Constants of float and double needed by the complex algorithms.
template <class T>
struct FloatConsts;
template <>
struct FloatConsts<float> {
  KILN_HD static float inf() { return bits_to_float(0x7F800000u); }
  static constexpr float kMax = 0x1.fffffep127f;
  static constexpr float kPi = 3.14159265358979323846f;
  static constexpr float kLn2 = 0.693147180559945309417f;
  static constexpr float kLn10 = 2.30258509299404568402f;
  // exp(x) is finite below this.
  static constexpr float kExpMax = 88.0f;
  // Division: fast path when both magnitudes lie in [kDivLo, kDivHi].
  static constexpr float kDivLo = 0x1p-50f;
  static constexpr float kDivHi = 0x1p50f;
  // asin/acos/atanh: |z| below kTiny behaves like z; above kHuge like its asymptote.
  static constexpr float kTiny = 0x1p-13f;
  static constexpr float kHuge = 0x1p13f;
  // tanh(x) is 1 to working precision above this.
  static constexpr float kTanhOne = 9.0f;
  // Squares of magnitudes below this may underflow (well above sqrt of the smallest normal).
  static constexpr float kSqrtMin = 0x1p-60f;
};
template <>
struct FloatConsts<double> {
  KILN_HD static double inf() { return bits_to_double(0x7FF0000000000000ull); }
  static constexpr double kMax = 0x1.fffffffffffffp1023;
  static constexpr double kPi = 3.14159265358979323846;
  static constexpr double kLn2 = 0.693147180559945309417;
  static constexpr double kLn10 = 2.30258509299404568402;
  static constexpr double kExpMax = 709.0;
  static constexpr double kDivLo = 0x1p-450;
  static constexpr double kDivHi = 0x1p450;
  static constexpr double kTiny = 0x1p-27;
  static constexpr double kHuge = 0x1p28;
  static constexpr double kTanhOne = 22.0;
  static constexpr double kSqrtMin = 0x1p-500;
};

}  // namespace detail

template <class T>
struct complex;

namespace detail {
template <class T>
KILN_HD complex<T> complex_div(T a, T b, T c, T d);
}

// complex64 / complex128 element. Same member layout as std::complex<T> and cuComplex, and
// aligned to its full size like c10::complex and cuDoubleComplex (buffers can be reinterpreted).
// Arithmetic follows c10::complex: the product is the textbook formula (no C99 Annex G inf
// recovery); division is scaled so it never overflows or underflows in intermediate results (Note
// [Complex division]).
template <class T>
struct alignas(2 * sizeof(T)) complex {
  static_assert(detail::IsSame<T, float>::value || detail::IsSame<T, double>::value,
                "kiln::complex<T> supports T = float and double");
  using value_type = T;

  T real_;
  T imag_;

  KILN_HD constexpr complex(T re = T(), T im = T()) : real_(re), imag_(im) {}
  template <class U>
  KILN_HD explicit constexpr complex(const complex<U>& z)
      : real_(static_cast<T>(z.real_)), imag_(static_cast<T>(z.imag_)) {}
#if !KILN_RTC
  explicit constexpr complex(const std::complex<T>& z) : real_(z.real()), imag_(z.imag()) {}
  explicit operator std::complex<T>() const { return std::complex<T>(real_, imag_); }
#endif

  KILN_HD constexpr T real() const { return real_; }
  KILN_HD constexpr T imag() const { return imag_; }
  KILN_HD constexpr void real(T v) { real_ = v; }
  KILN_HD constexpr void imag(T v) { imag_ = v; }

  KILN_HD constexpr complex& operator=(const T& v) {
    real_ = v;
    imag_ = T(0);
    return *this;
  }
  KILN_HD constexpr complex& operator+=(const complex& z) {
    real_ += z.real_;
    imag_ += z.imag_;
    return *this;
  }
  KILN_HD constexpr complex& operator-=(const complex& z) {
    real_ -= z.real_;
    imag_ -= z.imag_;
    return *this;
  }
  KILN_HD constexpr complex& operator*=(const complex& z) {
    const T re = real_ * z.real_ - imag_ * z.imag_;
    imag_ = real_ * z.imag_ + imag_ * z.real_;
    real_ = re;
    return *this;
  }
  KILN_HD complex& operator/=(const complex& z) {
    return *this = detail::complex_div(real_, imag_, z.real_, z.imag_);
  }
  KILN_HD constexpr complex& operator+=(const T& v) {
    real_ += v;
    return *this;
  }
  KILN_HD constexpr complex& operator-=(const T& v) {
    real_ -= v;
    return *this;
  }
  KILN_HD constexpr complex& operator*=(const T& v) {
    real_ *= v;
    imag_ *= v;
    return *this;
  }
  KILN_HD constexpr complex& operator/=(const T& v) {
    real_ /= v;
    imag_ /= v;
    return *this;
  }
};

namespace detail {
// The real operand of mixed complex/real operators is not deduced, so `z * 2` works.
template <class T>
struct NonDeduced {
  using type = T;
};
template <class T>
using NonDeducedT = typename NonDeduced<T>::type;

// Note [Complex division]
// (a+ib)/(c+id) = ((ac+bd) + i(bc-ad)) / (c^2+d^2). When all magnitudes lie in
// [kDivLo, kDivHi] this formula cannot overflow or lose bits to underflow, and it is used as is.
// Otherwise numerator and denominator are first scaled by powers of two (exact) to magnitude
// ~1, the quotient is formed, and the scale is applied once at the end, so e.g.
// (1e308+1e308i)/(1e308+1e308i) is 1 (Smith's algorithm, used by c10, gives NaN there). When
// the result is NaN+iNaN, the infinities and zeros are recovered as in C99 Annex G (G.5.1).
template <class T>
KILN_HD complex<T> complex_div_scaled(T a, T b, T c, T d) {
  using C = FloatConsts<T>;
  const T num = rmath::fmax(rmath::fabs(a), rmath::fabs(b));
  const T den = rmath::fmax(rmath::fabs(c), rmath::fabs(d));
  int sd = 0, sn = 0;
  if (isfinite(den) && den != T(0)) {
    sd = rmath::ilogb(den);
    c = rmath::scalbn(c, -sd);
    d = rmath::scalbn(d, -sd);
  }
  if (isfinite(num) && num != T(0)) {
    sn = rmath::ilogb(num);
    a = rmath::scalbn(a, -sn);
    b = rmath::scalbn(b, -sn);
  }
  const T q = c * c + d * d;
  T x = rmath::scalbn((a * c + b * d) / q, sn - sd);
  T y = rmath::scalbn((b * c - a * d) / q, sn - sd);
  if (isnan(x) && isnan(y)) {
    if (q == T(0) && (!isnan(a) || !isnan(b))) {
      x = rmath::copysign(C::inf(), c) * a;
      y = rmath::copysign(C::inf(), c) * b;
    } else if ((isinf(a) || isinf(b)) && isfinite(c) && isfinite(d)) {
      a = rmath::copysign(isinf(a) ? T(1) : T(0), a);
      b = rmath::copysign(isinf(b) ? T(1) : T(0), b);
      x = C::inf() * (a * c + b * d);
      y = C::inf() * (b * c - a * d);
    } else if (isinf(den) && isfinite(a) && isfinite(b)) {
      c = rmath::copysign(isinf(c) ? T(1) : T(0), c);
      d = rmath::copysign(isinf(d) ? T(1) : T(0), d);
      x = T(0) * (a * c + b * d);
      y = T(0) * (b * c - a * d);
    }
  }
  return complex<T>(x, y);
}

template <class T>
KILN_HD complex<T> complex_div(T a, T b, T c, T d) {
  using C = FloatConsts<T>;
  const T num = rmath::fmax(rmath::fabs(a), rmath::fabs(b));
  const T den = rmath::fmax(rmath::fabs(c), rmath::fabs(d));
  // NaN fails every comparison and takes the careful path.
  if (den >= C::kDivLo && den <= C::kDivHi && num <= C::kDivHi &&
      (num >= C::kDivLo || num == T(0))) {
    const T q = c * c + d * d;
    return complex<T>((a * c + b * d) / q, (b * c - a * d) / q);
  }
  return complex_div_scaled(a, b, c, d);
}
}  // namespace detail

// ---- Arithmetic operators ----------------------------------------------------------------------
template <class T>
KILN_HD constexpr complex<T> operator+(const complex<T>& z) {
  return z;
}
template <class T>
KILN_HD constexpr complex<T> operator-(const complex<T>& z) {
  return complex<T>(-z.real_, -z.imag_);
}
template <class T>
KILN_HD constexpr complex<T> operator+(const complex<T>& a, const complex<T>& b) {
  return complex<T>(a.real_ + b.real_, a.imag_ + b.imag_);
}
template <class T>
KILN_HD constexpr complex<T> operator-(const complex<T>& a, const complex<T>& b) {
  return complex<T>(a.real_ - b.real_, a.imag_ - b.imag_);
}
template <class T>
KILN_HD constexpr complex<T> operator*(const complex<T>& a, const complex<T>& b) {
  return complex<T>(a.real_ * b.real_ - a.imag_ * b.imag_, a.real_ * b.imag_ + a.imag_ * b.real_);
}
template <class T>
KILN_HD complex<T> operator/(const complex<T>& a, const complex<T>& b) {
  return detail::complex_div(a.real_, a.imag_, b.real_, b.imag_);
}
template <class T>
KILN_HD constexpr complex<T> operator+(const complex<T>& a, const detail::NonDeducedT<T>& b) {
  return complex<T>(a.real_ + b, a.imag_);
}
template <class T>
KILN_HD constexpr complex<T> operator+(const detail::NonDeducedT<T>& a, const complex<T>& b) {
  return complex<T>(a + b.real_, b.imag_);
}
template <class T>
KILN_HD constexpr complex<T> operator-(const complex<T>& a, const detail::NonDeducedT<T>& b) {
  return complex<T>(a.real_ - b, a.imag_);
}
template <class T>
KILN_HD constexpr complex<T> operator-(const detail::NonDeducedT<T>& a, const complex<T>& b) {
  return complex<T>(a - b.real_, -b.imag_);
}
template <class T>
KILN_HD constexpr complex<T> operator*(const complex<T>& a, const detail::NonDeducedT<T>& b) {
  return complex<T>(a.real_ * b, a.imag_ * b);
}
template <class T>
KILN_HD constexpr complex<T> operator*(const detail::NonDeducedT<T>& a, const complex<T>& b) {
  return complex<T>(a * b.real_, a * b.imag_);
}
template <class T>
KILN_HD constexpr complex<T> operator/(const complex<T>& a, const detail::NonDeducedT<T>& b) {
  return complex<T>(a.real_ / b, a.imag_ / b);
}
template <class T>
KILN_HD complex<T> operator/(const detail::NonDeducedT<T>& a, const complex<T>& b) {
  return detail::complex_div(a, T(0), b.real_, b.imag_);
}

template <class T>
KILN_HD constexpr bool operator==(const complex<T>& a, const complex<T>& b) {
  return a.real_ == b.real_ && a.imag_ == b.imag_;
}
template <class T>
KILN_HD constexpr bool operator==(const complex<T>& a, const detail::NonDeducedT<T>& b) {
  return a.real_ == b && a.imag_ == T(0);
}
template <class T>
KILN_HD constexpr bool operator==(const detail::NonDeducedT<T>& a, const complex<T>& b) {
  return b == a;
}
template <class T>
KILN_HD constexpr bool operator!=(const complex<T>& a, const complex<T>& b) {
  return !(a == b);
}
template <class T>
KILN_HD constexpr bool operator!=(const complex<T>& a, const detail::NonDeducedT<T>& b) {
  return !(a == b);
}
template <class T>
KILN_HD constexpr bool operator!=(const detail::NonDeducedT<T>& a, const complex<T>& b) {
  return !(b == a);
}

// ---- Elementary functions (one definition for host and device) --------------------------------
template <class T>
KILN_HD constexpr T real(const complex<T>& z) {
  return z.real_;
}
template <class T>
KILN_HD constexpr T imag(const complex<T>& z) {
  return z.imag_;
}
template <class T>
KILN_HD inline T abs(const complex<T>& z) {
  return detail::rmath::hypot(z.real_, z.imag_);
}
template <class T>
KILN_HD inline T arg(const complex<T>& z) {
  return detail::rmath::atan2(z.imag_, z.real_);
}
// |z|^2 as x*x + y*y (std::norm in libstdc++ squares abs(z) instead; values agree to rounding).
template <class T>
KILN_HD constexpr T norm(const complex<T>& z) {
  return z.real_ * z.real_ + z.imag_ * z.imag_;
}
template <class T>
KILN_HD constexpr complex<T> conj(const complex<T>& z) {
  return complex<T>(z.real_, -z.imag_);
}
// Projection onto the Riemann sphere: every infinity maps to (+inf, +-0).
template <class T>
KILN_HD inline complex<T> proj(const complex<T>& z) {
  if (detail::isinf(z.real_) || detail::isinf(z.imag_))
    return complex<T>(detail::FloatConsts<T>::inf(), detail::rmath::copysign(T(0), z.imag_));
  return z;
}
template <class T>
KILN_HD inline complex<T> polar(const T& r, const T& theta = T()) {
  return complex<T>(r * detail::rmath::cos(theta), r * detail::rmath::sin(theta));
}
template <class T>
KILN_HD inline bool isnan(const complex<T>& z) {
  return detail::isnan(z.real_) || detail::isnan(z.imag_);
}
template <class T>
KILN_HD inline bool isinf(const complex<T>& z) {
  return detail::isinf(z.real_) || detail::isinf(z.imag_);
}
template <class T>
KILN_HD inline bool isfinite(const complex<T>& z) {
  return detail::isfinite(z.real_) && detail::isfinite(z.imag_);
}

namespace detail {
template <class T>
KILN_HD inline bool isnan(const complex<T>& z) {
  return kiln::isnan(z);
}
template <class T>
KILN_HD inline bool isinf(const complex<T>& z) {
  return kiln::isinf(z);
}
template <class T>
KILN_HD inline bool isfinite(const complex<T>& z) {
  return kiln::isfinite(z);
}
}  // namespace detail

}  // namespace kiln
