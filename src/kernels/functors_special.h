// Special functions used by the functors, host + device: erfinv, digamma, and complex expm1,
// log1p. Included by kernels/functors.h (which defines fn::m); not meant to be included alone.
#pragma once

namespace kiln::fn::special {

// Note [erfinv]
// A start value from Winitzki's closed form (relative error ~2e-3; for |x| < 0.01 the series
// sqrt(pi)/2 (x + pi x^3 / 12) instead, where the closed form cancels), then Halley steps on
// f(y) = erf(y) - |x|, each of which cubes the relative error: two steps reach float precision,
// three double precision. For |x| >= 0.5 the residual is evaluated as (1 - |x|) - erfc(y): 1 - |x|
// is exact there and erfc keeps its relative precision in the tail, so results stay accurate up
// to |x| = 1 - ulp. erfinv(+-1) = +-inf, |x| > 1 or NaN gives NaN.
template <class T>
KILN_HD T erfinv(T x) {
  const T ax = m::fabs(x);
  if (!(ax < T(1))) {
    if (ax == T(1)) return m::copysign(m::infinity<T>(), x);
    return m::quiet_nan<T>();
  }
  const T pi = m::kPi<T>;
  T y;
  if (ax < T(0.01)) {
    y = T(0.886226925452758013649) * ax * (T(1) + pi / T(12) * ax * ax);
  } else {
    const T a = T(0.147);
    const T l = m::log((T(1) - ax) * (T(1) + ax));
    const T t = T(2) / (pi * a) + T(0.5) * l;
    y = m::sqrt(m::sqrt(t * t - l / a) - t);
  }
  constexpr int kSteps = std::is_same_v<T, float> ? 2 : 3;
  const T two_over_sqrt_pi = T(1.12837916709551257390);
  for (int k = 0; k < kSteps; ++k) {
    const T f = ax < T(0.5) ? m::erf(y) - ax : (T(1) - ax) - m::erfc(y);
    const T d = two_over_sqrt_pi * m::exp(-y * y);  // f'(y); f''(y) = -2 y f'(y)
    y -= f / (d + y * f);
  }
  return m::copysign(y, x);
}

// Note [digamma]
// psi(+-0) = -+inf and psi(negative integer) = NaN (as PyTorch); other negative x use the
// reflection psi(x) = psi(1 - x) - pi / tan(pi r) with r = x - floor(x) (exact, so large |x|
// keep their precision); positive x are raised to >= 10 by psi(x) = psi(x + 1) - 1/x, then
// psi(x) = log x - 1/(2x) - sum B_2k / (2k x^2k) with the Bernoulli terms up to x^-14.
template <class T>
KILN_HD T digamma_positive(T x) {
  T acc = T(0);
  while (x < T(10)) {
    acc -= T(1) / x;
    x += T(1);
  }
  if (m::isinf(x)) return x;
  const T z = T(1) / (x * x);
  const T series =
      z *
      (T(1.0 / 12) -
       z * (T(1.0 / 120) -
            z * (T(1.0 / 252) - z * (T(1.0 / 240) - z * (T(1.0 / 132) - z * (T(691.0 / 32760) -
                                                                             z * T(1.0 / 12)))))));
  return acc + m::log(x) - T(0.5) / x - series;
}

template <class T>
KILN_HD T digamma(T x) {
  if (x == T(0)) return m::copysign(m::infinity<T>(), -x);
  if (m::isnan(x)) return x;
  if (x < T(0)) {
    const T fl = m::floor(x);
    if (x == fl) return m::quiet_nan<T>();
    const T r = x - fl;
    return digamma_positive(T(1) - x) - m::kPi<T> / m::tan(m::kPi<T> * r);
  }
  return digamma_positive(x);
}

// expm1(x + iy) = expm1(x) cos y - 2 sin^2(y/2) + i e^x sin y (no cancellation near 0).
template <class T>
KILN_HD complex<T> expm1(const complex<T>& z) {
  const T x = z.real(), y = z.imag();
  if (y == T(0)) return complex<T>(m::expm1(x), y);
  const T h = m::sin(T(0.5) * y);
  return complex<T>(m::expm1(x) * m::cos(y) - T(2) * h * h, m::exp(x) * m::sin(y));
}

// log1p(x + iy) = log|1 + z| + i arg(1 + z); near 0, log|1 + z| = log1p(2x + x^2 + y^2) / 2.
template <class T>
KILN_HD complex<T> log1p(const complex<T>& z) {
  const T x = z.real(), y = z.imag();
  T re;
  if (m::fabs(x) < T(0.5) && m::fabs(y) < T(0.5))
    re = T(0.5) * m::log1p(x * (T(2) + x) + y * y);
  else
    re = m::log(m::hypot(T(1) + x, y));
  return complex<T>(re, m::atan2(y, T(1) + x));
}

}  // namespace kiln::fn::special
