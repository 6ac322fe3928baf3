// kiln::complex<float|double>, the element type of complex64/complex128 tensors, and its math:
// exp log log10 log2 sqrt pow, trigonometric and hyperbolic functions and their inverses.
// Host code delegates to std::complex; device code runs detail/complex_math.h.
#pragma once

#include "kiln/detail/complex_math.h"
#include "kiln/detail/complex_type.h"

// Note [kiln::complex functions]
// The free functions live in namespace kiln and are found by ADL. On the host each
// transcendental function calls its std::complex counterpart (glibc's C99 implementations:
// exact Annex G semantics); in device code (KILN_DEVICE_CODE, which includes NVRTC/hiprtc)
// it calls detail::complex_<name> (Note [Device complex math]). Both agree to a few ulps and
// have the same branch cuts. Beware: inside namespace kiln an unqualified exp(1.0f) finds
// kiln::exp first and fails; call real math as std::exp / ::expf there.

namespace kiln {

#if KILN_DEVICE_CODE
#define KILN_DETAIL_COMPLEX_UNARY(name)                 \
  template <class T>                                    \
  KILN_HD inline complex<T> name(const complex<T>& z) { \
    return detail::complex_##name(z);                   \
  }
#else
#define KILN_DETAIL_COMPLEX_UNARY(name)                              \
  template <class T>                                                 \
  KILN_HD inline complex<T> name(const complex<T>& z) {              \
    return complex<T>(std::name(std::complex<T>(z.real_, z.imag_))); \
  }
#endif

KILN_DETAIL_COMPLEX_UNARY(exp)
KILN_DETAIL_COMPLEX_UNARY(log)
KILN_DETAIL_COMPLEX_UNARY(sqrt)
KILN_DETAIL_COMPLEX_UNARY(sin)
KILN_DETAIL_COMPLEX_UNARY(cos)
KILN_DETAIL_COMPLEX_UNARY(tan)
KILN_DETAIL_COMPLEX_UNARY(asin)
KILN_DETAIL_COMPLEX_UNARY(acos)
KILN_DETAIL_COMPLEX_UNARY(atan)
KILN_DETAIL_COMPLEX_UNARY(sinh)
KILN_DETAIL_COMPLEX_UNARY(cosh)
KILN_DETAIL_COMPLEX_UNARY(tanh)
KILN_DETAIL_COMPLEX_UNARY(asinh)
KILN_DETAIL_COMPLEX_UNARY(acosh)
KILN_DETAIL_COMPLEX_UNARY(atanh)
#undef KILN_DETAIL_COMPLEX_UNARY

template <class T>
KILN_HD inline complex<T> log10(const complex<T>& z) {
  const complex<T> l = log(z);
  return complex<T>(l.real_ / detail::FloatConsts<T>::kLn10,
                    l.imag_ / detail::FloatConsts<T>::kLn10);
}
template <class T>
KILN_HD inline complex<T> log2(const complex<T>& z) {
  const complex<T> l = log(z);
  return complex<T>(l.real_ / detail::FloatConsts<T>::kLn2, l.imag_ / detail::FloatConsts<T>::kLn2);
}

template <class T>
KILN_HD inline complex<T> pow(const complex<T>& z, const complex<T>& w) {
#if KILN_DEVICE_CODE
  return detail::complex_pow(z, w);
#else
  return complex<T>(std::pow(std::complex<T>(z.real_, z.imag_), std::complex<T>(w.real_, w.imag_)));
#endif
}
template <class T>
KILN_HD inline complex<T> pow(const complex<T>& z, const detail::NonDeducedT<T>& p) {
#if KILN_DEVICE_CODE
  return detail::complex_pow(z, static_cast<T>(p));
#else
  return complex<T>(std::pow(std::complex<T>(z.real_, z.imag_), static_cast<T>(p)));
#endif
}
template <class T>
KILN_HD inline complex<T> pow(const detail::NonDeducedT<T>& x, const complex<T>& w) {
  return pow(complex<T>(x), w);
}

// Prints (re+imj) / (re-imj) like Python. Host only; needs <ostream> where it is used.
#if !KILN_RTC
template <class C, class Tr, class T>
std::basic_ostream<C, Tr>& operator<<(std::basic_ostream<C, Tr>& os, const complex<T>& z) {
  return os << '(' << z.real_ << (std::signbit(z.imag_) ? '-' : '+') << std::fabs(z.imag_) << "j)";
}
#endif

}  // namespace kiln
