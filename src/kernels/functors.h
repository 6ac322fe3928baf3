// The scalar math of every elementwise primitive, written once for the CPU loops, the GPU
// kernels and the compiler's generated kernels. Each functor is a template on the compute type
// T (opmath: float for 16/8-bit floats) constructed from Params (the op's scalar arguments).
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/convert.h"

namespace kiln::fn {

// Scalar arguments of an elementwise op (alpha, bounds, ...), as plain numbers so that the
// run-time compilers can take them too.
struct Params {
  double a = 0, a_imag = 0, b = 0, b_imag = 0;
  int64_t i = 0, j = 0;
};

template <class T>
KILN_HD inline T param_a(const Params& p) {
  if constexpr (detail::is_complex_v<T>)
    return T(p.a, p.a_imag);
  else if constexpr (std::is_integral_v<T>)
    return static_cast<T>(p.i);
  else
    return static_cast<T>(p.a);
}
template <class T>
KILN_HD inline T param_b(const Params& p) {
  if constexpr (detail::is_complex_v<T>)
    return T(p.b, p.b_imag);
  else if constexpr (std::is_integral_v<T>)
    return static_cast<T>(p.j);
  else
    return static_cast<T>(p.b);
}

// Functors that ignore Params derive from this.
struct NoParams {
  KILN_HD NoParams() {}
  KILN_HD explicit NoParams(const Params&) {}
};

// Type categories of a compute type.
template <class T>
inline constexpr bool is_bool_v = std::is_same_v<T, bool>;
template <class T>
inline constexpr bool is_int_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;
template <class T>
inline constexpr bool is_cplx_v = detail::is_complex_v<T>;
template <class T>
inline constexpr bool is_real_float_v = std::is_floating_point_v<T>;
// The real type of a compute type (complex<float> -> float; others unchanged).
template <class T>
struct RealOf {
  using type = T;
};
template <class T>
struct RealOf<complex<T>> {
  using type = T;
};
template <class T>
using real_of_t = typename RealOf<T>::type;

// Note [Functor math]
// Real math goes through fn::m, whose float/double overloads call the C functions (::expf,
// ::exp, ...) that the host library, CUDA/HIP device code and the run-time compilers all
// declare; its complex overloads call kiln's complex math (kiln/complex.h). Functors therefore
// write m::exp(x) for every floating compute type and never std:: (whose overload set differs
// between compilers) nor unqualified calls (which inside namespace kiln find kiln::exp(Tensor)).
namespace m {
#define KILN_FN_M1(name)                                      \
  KILN_HD inline float name(float x) { return ::name##f(x); } \
  KILN_HD inline double name(double x) { return ::name(x); }
#define KILN_FN_M2(name)                                                  \
  KILN_HD inline float name(float x, float y) { return ::name##f(x, y); } \
  KILN_HD inline double name(double x, double y) { return ::name(x, y); }
#define KILN_FN_MC(name)                                \
  template <class T>                                    \
  KILN_HD inline complex<T> name(const complex<T>& z) { \
    return ::kiln::name(z);                             \
  }
KILN_FN_M1(exp)
KILN_FN_M1(exp2)
KILN_FN_M1(expm1)
KILN_FN_M1(log)
KILN_FN_M1(log2)
KILN_FN_M1(log10)
KILN_FN_M1(log1p)
KILN_FN_M1(sqrt)
KILN_FN_M1(sin)
KILN_FN_M1(cos)
KILN_FN_M1(tan)
KILN_FN_M1(asin)
KILN_FN_M1(acos)
KILN_FN_M1(atan)
KILN_FN_M1(sinh)
KILN_FN_M1(cosh)
KILN_FN_M1(tanh)
KILN_FN_M1(asinh)
KILN_FN_M1(acosh)
KILN_FN_M1(atanh)
KILN_FN_M1(erf)
KILN_FN_M1(erfc)
KILN_FN_M1(lgamma)
KILN_FN_M1(floor)
KILN_FN_M1(ceil)
KILN_FN_M1(trunc)
KILN_FN_M1(nearbyint)
KILN_FN_M1(fabs)
KILN_FN_M2(fmod)
KILN_FN_M2(atan2)
KILN_FN_M2(hypot)
KILN_FN_M2(copysign)
KILN_FN_M2(pow)
KILN_FN_M2(fmax)
KILN_FN_M2(fmin)
KILN_FN_MC(exp)
KILN_FN_MC(log)
KILN_FN_MC(log2)
KILN_FN_MC(log10)
KILN_FN_MC(sqrt)
KILN_FN_MC(sin)
KILN_FN_MC(cos)
KILN_FN_MC(tan)
KILN_FN_MC(asin)
KILN_FN_MC(acos)
KILN_FN_MC(atan)
KILN_FN_MC(sinh)
KILN_FN_MC(cosh)
KILN_FN_MC(tanh)
KILN_FN_MC(asinh)
KILN_FN_MC(acosh)
KILN_FN_MC(atanh)
#undef KILN_FN_M1
#undef KILN_FN_M2
#undef KILN_FN_MC
template <class T>
KILN_HD inline complex<T> pow(const complex<T>& a, const complex<T>& b) {
  return ::kiln::pow(a, b);
}
template <class T>
KILN_HD inline T abs(const complex<T>& z) {
  return ::kiln::abs(z);
}

// NaN / infinity tests for every compute type (bit tests: immune to fast-math).
template <class T>
KILN_HD inline bool isnan(T x) {
  if constexpr (is_cplx_v<T> || is_real_float_v<T>)
    return ::kiln::detail::isnan(x);
  else
    return false;
}
template <class T>
KILN_HD inline bool isinf(T x) {
  if constexpr (is_cplx_v<T> || is_real_float_v<T>)
    return ::kiln::detail::isinf(x);
  else
    return false;
}

template <class T>
KILN_HD inline T quiet_nan() {
  if constexpr (std::is_same_v<T, float>)
    return ::kiln::detail::bits_to_float(0x7FC00000u);
  else
    return ::kiln::detail::bits_to_double(0x7FF8000000000000ull);
}
template <class T>
KILN_HD inline T infinity() {
  if constexpr (std::is_same_v<T, float>)
    return ::kiln::detail::bits_to_float(0x7F800000u);
  else
    return ::kiln::detail::bits_to_double(0x7FF0000000000000ull);
}
template <class T>
inline constexpr T kPi = static_cast<T>(3.14159265358979323846264338327950288);
}  // namespace m

// Truth value of any compute type (complex: either part nonzero), as C's `x != 0`.
template <class T>
KILN_HD inline bool truthy(T x) {
  if constexpr (is_cplx_v<T>)
    return x.real() != 0 || x.imag() != 0;
  else
    return x != T(0);
}

}  // namespace kiln::fn

#include "kernels/functors_binary.h"
#include "kernels/functors_special.h"
#include "kernels/functors_unary.h"
