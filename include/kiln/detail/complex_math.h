// Complex transcendental functions written with real math only (detail::complex_exp, ...): what
// kiln::exp(complex) etc. run on the device. Branch cuts and signed zeros follow C99 Annex G;
// the host calls std::complex instead, and the tests compare both with long double references.
#pragma once

#include "kiln/detail/complex_type.h"

// Note [Device complex math]
// Each function avoids the overflow/cancellation traps of its textbook formula:
// - exp/sinh/cosh: exp(|x|) is split as exp(|x|/2)^2 where it alone would overflow;
// - log: near |z| = 1, log|z| = log1p(x^2 + y^2 - 1)/2 with the squares made exact by fma;
// - sqrt: sqrt((|x| + |z|)/2) on the safe side only, scaled by powers of 4 at the extremes;
// - tanh: Kahan's formula, with the e^-2|x| asymptote once tanh(x) rounds to 1;
// - asin/acos (and asinh/acosh through them): Hull, Fairgrieve and Tang's algorithm (ACM TOMS
//   23(3), 1997), with the z and log(2z) asymptotes for tiny and huge |z|;
// - atanh (and atan): log1p form of the real part, atan2 form of the imaginary part.
// sin/cos/tan/asinh/atan use sin(z) = -i sinh(iz), cos(z) = cosh(iz), tan(z) = -i tanh(iz),
// asinh(z) = -i asin(iz), atan(z) = -i atanh(iz). Infinite and NaN inputs give the Annex G
// results where Annex G fixes them (signs it leaves unspecified may differ from glibc).

namespace kiln {
namespace detail {

template <class T>
KILN_HD inline complex<T> complex_times_minus_i(const complex<T>& w) {  // -i * w
  return complex<T>(w.imag_, -w.real_);
}
template <class T>
KILN_HD inline complex<T> complex_times_i(const complex<T>& z) {  // i * z
  return complex<T>(-z.imag_, z.real_);
}

template <class T>
KILN_HD complex<T> complex_exp(const complex<T>& z) {
  using C = FloatConsts<T>;
  const T x = z.real_, y = z.imag_;
  if (y == T(0)) return complex<T>(rmath::exp(x), y);
  if (isinf(x)) {
    if (x < T(0)) {
      if (!isfinite(y)) return complex<T>(T(0), T(0));
      return complex<T>(T(0) * rmath::cos(y), T(0) * rmath::sin(y));
    }
    if (!isfinite(y)) return complex<T>(x, y - y);
  }
  const T c = rmath::cos(y), s = rmath::sin(y);
  if (x <= C::kExpMax) {
    const T e = rmath::exp(x);
    return complex<T>(e * c, e * s);
  }
  const T h = rmath::exp(T(0.5) * x);
  return complex<T>((h * c) * h, (h * s) * h);
}

// x^2 + y^2 - 1 for 0.5 <= x <= 1.5, 0 <= y <= x, without cancellation: the squares are split
// into exact hi + lo parts with fma and the large terms are added error-free.
template <class T>
KILN_HD inline T sum_squares_minus_one(T x, T y) {
  const T p = x * x, pe = rmath::fma(x, x, -p);
  const T q = y * y, qe = rmath::fma(y, y, -q);
  const T s = p - T(1);
  const T sb = s - p;
  const T e1 = (p - (s - sb)) + (T(-1) - sb);
  const T t = s + q;
  const T tb = t - s;
  const T e2 = (s - (t - tb)) + (q - tb);
  return t + (((e1 + e2) + pe) + qe);
}

// log(hypot(x, y)) without overflow of hypot near the top of the range or loss of bits when
// hypot is subnormal: both are scaled by an exact power of two first.
template <class T>
KILN_HD inline T log_hypot(T x, T y) {
  using C = FloatConsts<T>;
  const T m = rmath::fmax(rmath::fabs(x), rmath::fabs(y));
  if (m > C::kMax * T(0.25)) return rmath::log(rmath::hypot(T(0.5) * x, T(0.5) * y)) + C::kLn2;
  if (m < C::kSqrtMin && m > T(0)) {
    const int k = -rmath::ilogb(C::kSqrtMin);
    return rmath::log(rmath::hypot(rmath::scalbn(x, k), rmath::scalbn(y, k))) - T(k) * C::kLn2;
  }
  return rmath::log(rmath::hypot(x, y));
}

template <class T>
KILN_HD complex<T> complex_log(const complex<T>& z) {
  const T x = z.real_, y = z.imag_;
  T big = rmath::fabs(x), small = rmath::fabs(y);
  if (big < small) {
    const T t = big;
    big = small;
    small = t;
  }
  T re;
  if (big >= T(0.5) && big <= T(1.5)) {
    re = T(0.5) * rmath::log1p(sum_squares_minus_one(big, small));
  } else {
    re = log_hypot(x, y);
  }
  return complex<T>(re, rmath::atan2(y, x));
}

template <class T>
KILN_HD complex<T> complex_sqrt(const complex<T>& z) {
  using C = FloatConsts<T>;
  T x = z.real_, y = z.imag_;
  if (x == T(0) && y == T(0)) return complex<T>(T(0), y);
  if (isinf(y)) return complex<T>(C::inf(), y);
  if (isnan(x)) return complex<T>(x, x);
  if (isinf(x)) {
    if (x > T(0)) return complex<T>(x, isnan(y) ? y : rmath::copysign(T(0), y));
    return complex<T>(isnan(y) ? y : T(0), rmath::copysign(C::inf(), y));
  }
  if (isnan(y)) return complex<T>(y, y);
  const T m = rmath::fmax(rmath::fabs(x), rmath::fabs(y));
  T scale = T(1);
  if (m > C::kMax * T(0.25)) {
    x *= T(0.25);
    y *= T(0.25);
    scale = T(2);
  } else if (m < C::kSqrtMin) {
    // Scale by an even power of two so the result scales exactly by its square root.
    const int k = -rmath::ilogb(C::kSqrtMin);
    x = rmath::scalbn(x, 2 * k);
    y = rmath::scalbn(y, 2 * k);
    scale = rmath::scalbn(T(1), -k);
  }
  const T ax = rmath::fabs(x), ay = rmath::fabs(y);
  const T t = rmath::sqrt((ax + rmath::hypot(ax, ay)) * T(0.5));
  if (x >= T(0)) return complex<T>(t * scale, (y / (T(2) * t)) * scale);
  return complex<T>((ay / (T(2) * t)) * scale, rmath::copysign(t, y) * scale);
}

template <class T>
KILN_HD complex<T> complex_sinh(const complex<T>& z) {
  using C = FloatConsts<T>;
  const T x = z.real_, y = z.imag_;
  if (y == T(0)) return complex<T>(rmath::sinh(x), y);
  if (x == T(0)) return complex<T>(isfinite(y) ? x * rmath::cos(y) : x, rmath::sin(y));
  if (isinf(x)) {
    if (!isfinite(y)) return complex<T>(x, y - y);
    return complex<T>(x * rmath::cos(y), C::inf() * rmath::sin(y));
  }
  const T c = rmath::cos(y), s = rmath::sin(y);
  if (rmath::fabs(x) <= C::kExpMax) return complex<T>(rmath::sinh(x) * c, rmath::cosh(x) * s);
  // sinh(x) and cosh(x) are +-exp(|x|)/2 to working precision here.
  const T h = rmath::exp(T(0.5) * rmath::fabs(x));
  return complex<T>(rmath::copysign(T(1), x) * ((c * h) * (T(0.5) * h)), (s * h) * (T(0.5) * h));
}

template <class T>
KILN_HD complex<T> complex_cosh(const complex<T>& z) {
  using C = FloatConsts<T>;
  const T x = z.real_, y = z.imag_;
  if (y == T(0)) return complex<T>(rmath::cosh(x), rmath::copysign(T(0), x) * y);
  if (x == T(0)) return complex<T>(rmath::cos(y), isfinite(y) ? x * rmath::sin(y) : x);
  if (isinf(x)) {
    if (!isfinite(y)) return complex<T>(C::inf(), y - y);
    return complex<T>(C::inf() * rmath::cos(y), x * rmath::sin(y));
  }
  const T c = rmath::cos(y), s = rmath::sin(y);
  if (rmath::fabs(x) <= C::kExpMax) return complex<T>(rmath::cosh(x) * c, rmath::sinh(x) * s);
  const T h = rmath::exp(T(0.5) * rmath::fabs(x));
  return complex<T>((c * h) * (T(0.5) * h), rmath::copysign(T(1), x) * ((s * h) * (T(0.5) * h)));
}

template <class T>
KILN_HD complex<T> complex_tanh(const complex<T>& z) {
  using C = FloatConsts<T>;
  const T x = z.real_, y = z.imag_;
  if (isnan(x)) return complex<T>(x, y == T(0) ? y : x);
  if (isinf(x)) {
    const T im = isfinite(y) ? rmath::sin(y) * rmath::cos(y) : y;  // sign of sin(2y)
    return complex<T>(rmath::copysign(T(1), x), rmath::copysign(T(0), im));
  }
  if (!isfinite(y)) return complex<T>(x == T(0) ? x : y - y, y - y);
  if (rmath::fabs(x) > C::kTanhOne) {
    const T e = rmath::exp(T(-2) * rmath::fabs(x));
    return complex<T>(rmath::copysign(T(1), x), T(4) * rmath::sin(y) * rmath::cos(y) * e);
  }
  // Kahan: t = tan y, b = 1 + t^2, s = sinh x, r = cosh x; tanh z = (b r s + i t)/(1 + b s^2).
  const T t = rmath::tan(y);
  const T b = T(1) + t * t;
  const T s = rmath::sinh(x);
  const T r = rmath::sqrt(T(1) + s * s);
  const T d = T(1) + b * s * s;
  return complex<T>((b * r * s) / d, t / d);
}

template <class T>
KILN_HD complex<T> complex_sin(const complex<T>& z) {
  return complex_times_minus_i(complex_sinh(complex_times_i(z)));
}
template <class T>
KILN_HD complex<T> complex_cos(const complex<T>& z) {
  return complex_cosh(complex_times_i(z));
}
template <class T>
KILN_HD complex<T> complex_tan(const complex<T>& z) {
  return complex_times_minus_i(complex_tanh(complex_times_i(z)));
}

// Hull-Fairgrieve-Tang core for finite x, y >= 0: real parts of asin and acos and the common
// magnitude of their imaginary parts.
template <class T>
KILN_HD void asin_acos_core(T x, T y, T& asin_re, T& acos_re, T& im) {
  using C = FloatConsts<T>;
  if (x < C::kTiny && y < C::kTiny) {  // asin z = z + O(z^3)
    asin_re = x;
    acos_re = T(0.5) * C::kPi - x;
    im = y;
    return;
  }
  if (x > C::kHuge || y > C::kHuge) {  // acos z = arg z - i log(2|z|) + O(1/z^2)
    asin_re = rmath::atan2(x, y);
    acos_re = rmath::atan2(y, x);
    im = log_hypot(x, y) + C::kLn2;
    return;
  }
  const T r = rmath::hypot(x + T(1), y);
  const T s = rmath::hypot(x - T(1), y);
  const T a = T(0.5) * (r + s);
  const T b = x / a;
  const T y2 = y * y;
  if (b <= T(0.6417)) {
    asin_re = rmath::asin(b);
    acos_re = rmath::acos(b);
  } else {
    T f;  // sqrt((a + x)(a - x)) evaluated without cancellation
    if (x <= T(1)) {
      f = rmath::sqrt(T(0.5) * (a + x) * (y2 / (r + (x + T(1))) + (s + (T(1) - x))));
    } else {
      f = y * rmath::sqrt(T(0.5) * ((a + x) / (r + (x + T(1))) + (a + x) / (s + (x - T(1)))));
    }
    asin_re = rmath::atan(x / f);
    acos_re = rmath::atan(f / x);
  }
  if (a <= T(1.5)) {
    T am1x2;  // 2 (a - 1) without cancellation (and without halving a subnormal to zero)
    if (x < T(1)) {
      if (y < C::kSqrtMin) {  // y^2 would underflow: im = y / sqrt(1 - x^2) to working precision
        im = y / rmath::sqrt((T(1) - x) * (T(1) + x));
        return;
      }
      am1x2 = y2 / (r + (x + T(1))) + y2 / (s + (T(1) - x));
    } else {
      am1x2 = y2 / (r + (x + T(1))) + (s + (x - T(1)));
    }
    im = rmath::log1p(T(0.5) * am1x2 + rmath::sqrt(am1x2 * (T(0.5) * (a + T(1)))));
  } else {
    im = rmath::log(a + rmath::sqrt(a * a - T(1)));
  }
}

template <class T>
KILN_HD complex<T> complex_asin(const complex<T>& z) {
  using C = FloatConsts<T>;
  const T x = z.real_, y = z.imag_;
  if (isnan(x) || isnan(y)) {
    if (isinf(x)) return complex<T>(y, C::inf());
    if (isinf(y)) return complex<T>(x, y);
    if (x == T(0)) return complex<T>(x, y);
    return complex<T>(x + y, x + y);
  }
  if (isinf(x) || isinf(y)) {
    const T re = isinf(y) ? (isinf(x) ? T(0.25) * C::kPi : T(0)) : T(0.5) * C::kPi;
    return complex<T>(rmath::copysign(re, x), rmath::copysign(C::inf(), y));
  }
  T asin_re, acos_re, im;
  asin_acos_core(rmath::fabs(x), rmath::fabs(y), asin_re, acos_re, im);
  return complex<T>(rmath::copysign(asin_re, x), rmath::copysign(im, y));
}

template <class T>
KILN_HD complex<T> complex_acos(const complex<T>& z) {
  using C = FloatConsts<T>;
  const T x = z.real_, y = z.imag_;
  if (isnan(x) || isnan(y)) {
    if (isinf(x)) return complex<T>(y, -C::inf());
    if (isinf(y)) return complex<T>(x, -y);
    if (x == T(0)) return complex<T>(T(0.5) * C::kPi, y);
    return complex<T>(x + y, x + y);
  }
  if (isinf(x) || isinf(y)) {
    T re;
    if (isinf(x)) {
      re = isinf(y) ? T(0.25) * C::kPi : T(0);
      if (x < T(0)) re = C::kPi - re;
    } else {
      re = T(0.5) * C::kPi;
    }
    return complex<T>(re, rmath::copysign(C::inf(), -y));
  }
  T asin_re, acos_re, im;
  asin_acos_core(rmath::fabs(x), rmath::fabs(y), asin_re, acos_re, im);
  return complex<T>(rmath::signbit(x) ? C::kPi - acos_re : acos_re, rmath::copysign(im, -y));
}

template <class T>
KILN_HD complex<T> complex_asinh(const complex<T>& z) {
  return complex_times_minus_i(complex_asin(complex_times_i(z)));
}

template <class T>
KILN_HD complex<T> complex_acosh(const complex<T>& z) {
  const complex<T> w = complex_acos(z);
  const T im = isnan(z.imag_) ? w.real_ : rmath::copysign(w.real_, z.imag_);
  return complex<T>(rmath::fabs(w.imag_), im);
}

template <class T>
KILN_HD complex<T> complex_atanh(const complex<T>& z) {
  using C = FloatConsts<T>;
  const T x = z.real_, y = z.imag_;
  if (isnan(x) || isnan(y)) {
    if (isinf(x)) return complex<T>(rmath::copysign(T(0), x), y);
    if (isinf(y)) return complex<T>(rmath::copysign(T(0), x), rmath::copysign(T(0.5) * C::kPi, y));
    if (x == T(0)) return complex<T>(x, y);
    return complex<T>(x + y, x + y);
  }
  const T ax = rmath::fabs(x), ay = rmath::fabs(y);
  if (ax > C::kHuge || ay > C::kHuge) {  // atanh z = 1/z + i pi/2 sign(y) + O(1/z^3)
    T re = rmath::copysign(T(0), x), im = -rmath::copysign(T(0), y);  // 1/z, overflow-free
    if (isfinite(ax) && isfinite(ay)) {
      const T sx = T(0.25) * x, sy = T(0.25) * y;  // 1/z = (1/4) / (z/4): d cannot overflow
      if (ax >= ay) {
        const T q = sy / sx, d = sx + sy * q;
        re = T(0.25) * (T(1) / d);
        im = T(0.25) * (-q / d);
      } else {
        const T q = sx / sy, d = sy + sx * q;
        re = T(0.25) * (q / d);
        im = T(0.25) * (T(-1) / d);
      }
    }
    return complex<T>(re, rmath::copysign(T(0.5) * C::kPi, y) + im);
  }
  const T one_m = T(1) - ax;
  T re;
  if (rmath::fabs(one_m) < C::kSqrtMin && ay < C::kSqrtMin) {  // the squares below underflow
    re = T(0.5) * (rmath::log(rmath::hypot(T(1) + ax, ay)) - rmath::log(rmath::hypot(one_m, ay)));
  } else {
    re = T(0.25) * rmath::log1p(T(4) * ax / (one_m * one_m + ay * ay));
  }
  const T im = T(0.5) * rmath::atan2(T(2) * y, one_m * (T(1) + ax) - ay * ay);
  return complex<T>(rmath::copysign(re, x), im);
}

template <class T>
KILN_HD complex<T> complex_atan(const complex<T>& z) {
  return complex_times_minus_i(complex_atanh(complex_times_i(z)));
}

template <class T>
KILN_HD complex<T> complex_pow(const complex<T>& z, const complex<T>& w) {
  return complex_exp(w * complex_log(z));
}

// Same rule as libstdc++'s pow(complex, real): a positive real base uses the real pow.
template <class T>
KILN_HD complex<T> complex_pow(const complex<T>& z, T p) {
  if (z.imag_ == T(0) && z.real_ > T(0)) return complex<T>(rmath::pow(z.real_, p), T(0));
  const complex<T> t = complex_log(z);
  return polar(rmath::exp(p * t.real_), p * t.imag_);
}

}  // namespace detail
}  // namespace kiln
