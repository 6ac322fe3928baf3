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

// ---------------- unary ----------------

template <class T>
struct Abs : NoParams {
  using NoParams::NoParams;
  KILN_HD auto operator()(T x) const {
    if constexpr (detail::is_complex_v<T>) {
      return abs(x);
    } else if constexpr (std::is_same_v<T, bool>) {
      return x;
    } else if constexpr (std::is_unsigned_v<T>) {
      return x;
    } else if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(x < 0 ? -x : x);
    } else {
      using std::fabs;
      return fabs(x);
    }
  }
};

template <class T>
struct Neg : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T x) const { return static_cast<T>(-x); }
};

template <class T>
struct Exp : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T x) const {
    using std::exp;
    return exp(x);
  }
};

// ---------------- binary ----------------

// a + alpha * b (alpha from Params; 1 unless given).
template <class T>
struct Add {
  T alpha;
  KILN_HD explicit Add(const Params& p) : alpha(param_a<T>(p)) {}
  KILN_HD T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>)
      return a || (alpha && b);
    else
      return static_cast<T>(a + alpha * b);
  }
};

template <class T>
struct Sub {
  T alpha;
  KILN_HD explicit Sub(const Params& p) : alpha(param_a<T>(p)) {}
  KILN_HD T operator()(T a, T b) const { return static_cast<T>(a - alpha * b); }
};

template <class T>
struct Mul : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>)
      return a && b;
    else
      return static_cast<T>(a * b);
  }
};

// True division (floating/complex only: integer inputs are promoted before the kernel).
template <class T>
struct Div : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T a, T b) const { return a / b; }
};

}  // namespace kiln::fn
