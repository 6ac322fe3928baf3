// Unary elementwise functors (abs, exp, sin, gelu, isnan, ...). Included by kernels/functors.h.
// Compute types: bool, integers, float, double, complex<float|double> (see each op's dtypes in
// kernels/cpu/elementwise_unary_kernels.cpp).
#pragma once

namespace kiln::fn {

// y = m::fn(x) for real and complex floating compute types.
#define KILN_FN_UNARY_MATH(Name, fn)                     \
  template <class T>                                     \
  struct Name : NoParams {                               \
    using NoParams::NoParams;                            \
    KILN_HD T operator()(T x) const { return m::fn(x); } \
  };
KILN_FN_UNARY_MATH(Exp, exp)
KILN_FN_UNARY_MATH(Log, log)
KILN_FN_UNARY_MATH(Log2, log2)
KILN_FN_UNARY_MATH(Log10, log10)
KILN_FN_UNARY_MATH(Sqrt, sqrt)
KILN_FN_UNARY_MATH(Sin, sin)
KILN_FN_UNARY_MATH(Cos, cos)
KILN_FN_UNARY_MATH(Tan, tan)
KILN_FN_UNARY_MATH(Asin, asin)
KILN_FN_UNARY_MATH(Acos, acos)
KILN_FN_UNARY_MATH(Atan, atan)
KILN_FN_UNARY_MATH(Sinh, sinh)
KILN_FN_UNARY_MATH(Cosh, cosh)
KILN_FN_UNARY_MATH(Tanh, tanh)
KILN_FN_UNARY_MATH(Asinh, asinh)
KILN_FN_UNARY_MATH(Acosh, acosh)
KILN_FN_UNARY_MATH(Atanh, atanh)
KILN_FN_UNARY_MATH(Erf, erf)
KILN_FN_UNARY_MATH(Erfc, erfc)
KILN_FN_UNARY_MATH(Lgamma, lgamma)
#undef KILN_FN_UNARY_MATH

template <class T>
struct Abs : NoParams {
  using NoParams::NoParams;
  KILN_HD auto operator()(T x) const {
    if constexpr (is_cplx_v<T>)
      return m::abs(x);  // the real magnitude: the output dtype is real
    else if constexpr (is_bool_v<T> || std::is_unsigned_v<T>)
      return x;
    else if constexpr (is_int_v<T>)
      return static_cast<T>(x < 0 ? -x : x);
    else
      return m::fabs(x);
  }
};

template <class T>
struct Neg : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T x) const { return static_cast<T>(-x); }
};

// -1, 0 or 1; sign(NaN) is 0 and sign(-0.0) is +0.0, as PyTorch's (0 < x) - (x < 0).
template <class T>
struct Sign : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T x) const {
    if constexpr (is_bool_v<T>)
      return x;
    else if constexpr (std::is_unsigned_v<T>)
      return static_cast<T>(x != T(0));
    else
      return static_cast<T>((T(0) < x) - (x < T(0)));
  }
};

// Complex: z / |z| (0 at 0); real: sign.
template <class T>
struct Sgn : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T x) const {
    if constexpr (is_cplx_v<T>) {
      if (x.real() == 0 && x.imag() == 0) return T(0);
      return x / m::abs(x);
    } else {
      return Sign<T>()(x);
    }
  }
};

template <class T>
struct Exp2 : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T x) const {
    if constexpr (is_cplx_v<T>) {
      using R = decltype(x.real());
      return m::exp(x * R(0.693147180559945309417232121458176568));
    } else {
      return m::exp2(x);
    }
  }
};

template <class T>
struct Expm1 : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T x) const {
    if constexpr (is_cplx_v<T>)
      return special::expm1(x);
    else
      return m::expm1(x);
  }
};

template <class T>
struct Log1p : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T x) const {
    if constexpr (is_cplx_v<T>)
      return special::log1p(x);
    else
      return m::log1p(x);
  }
};

template <class T>
struct Rsqrt : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T x) const { return T(1) / m::sqrt(x); }
};

template <class T>
struct Square : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T x) const { return static_cast<T>(x * x); }
};

template <class T>
struct Reciprocal : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T x) const { return T(1) / x; }
};

template <class T>
struct Sigmoid : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T x) const { return T(1) / (T(1) + m::exp(-x)); }
};

// log(z / (1 - z)) with z = x clamped to [eps, 1 - eps]; eps < 0 (the front end's "None")
// means no clamp. The bounds are set once so the loop has no branch on eps; NaN passes through.
template <class T>
struct Logit {
  T lo, hi;
  KILN_HD explicit Logit(const Params& p) {
    const T eps = static_cast<T>(p.a);
    lo = eps < T(0) ? -m::infinity<T>() : eps;
    hi = eps < T(0) ? m::infinity<T>() : T(1) - eps;
  }
  KILN_HD T operator()(T x) const {
    const T z = x < lo ? lo : (x > hi ? hi : x);
    return m::log(z / (T(1) - z));
  }
};

template <class T>
struct Erfinv : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T x) const { return special::erfinv(x); }
};

template <class T>
struct Digamma : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T x) const { return special::digamma(x); }
};

// Rounding: identity on integers (PyTorch returns a copy).
#define KILN_FN_ROUNDING(Name, fn)    \
  template <class T>                  \
  struct Name : NoParams {            \
    using NoParams::NoParams;         \
    KILN_HD T operator()(T x) const { \
      if constexpr (is_int_v<T>)      \
        return x;                     \
      else                            \
        return m::fn(x);              \
    }                                 \
  };
KILN_FN_ROUNDING(Floor, floor)
KILN_FN_ROUNDING(Ceil, ceil)
KILN_FN_ROUNDING(Trunc, trunc)
KILN_FN_ROUNDING(Round, nearbyint)  // half to even (the default rounding mode)
#undef KILN_FN_ROUNDING

// round(x, decimals) (PyTorch's definition): decimals >= 0: nearbyint(x * 10^d) / 10^d;
// decimals < 0: nearbyint(x / 10^-d) * 10^-d. Params.i = decimals.
template <class T>
struct RoundDecimals {
  T scale;
  bool neg;
  KILN_HD explicit RoundDecimals(const Params& p) : neg(p.i < 0) {
    const int64_t d = p.i < 0 ? -p.i : p.i;
    scale = static_cast<T>(m::pow(10.0, static_cast<double>(d)));
  }
  KILN_HD T operator()(T x) const {
    return neg ? m::nearbyint(x / scale) * scale : m::nearbyint(x * scale) / scale;
  }
};

template <class T>
struct Frac : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T x) const { return x - m::trunc(x); }
};

// max(x, 0) with NaN propagated (as PyTorch's clamp_min(x, 0)).
template <class T>
struct Relu : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T x) const {
    if constexpr (std::is_unsigned_v<T>)
      return x;
    else
      return x < T(0) ? T(0) : x;
  }
};

// x * Phi(x), Phi the normal CDF.
template <class T>
struct Gelu : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T x) const {
    return T(0.5) * x * (T(1) + m::erf(x * T(0.707106781186547524400844362104849039)));
  }
};

// The tanh approximation: x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
template <class T>
struct GeluTanh : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T x) const {
    const T inner = T(0.797884560802865355879892119868763737) * (x + T(0.044715) * x * x * x);
    return T(0.5) * x * (T(1) + m::tanh(inner));
  }
};

template <class T>
struct Silu : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T x) const { return x / (T(1) + m::exp(-x)); }
};

// log(1 + exp(beta x)) / beta, or x where beta x > threshold. Params: a = beta, b = threshold.
template <class T>
struct Softplus {
  T beta, threshold;
  KILN_HD explicit Softplus(const Params& p)
      : beta(static_cast<T>(p.a)), threshold(static_cast<T>(p.b)) {}
  KILN_HD T operator()(T x) const {
    const T bx = x * beta;
    return bx > threshold ? x : m::log1p(m::exp(bx)) / beta;
  }
};

// ---- predicates (bool results) ----
template <class T>
struct Isnan : NoParams {
  using NoParams::NoParams;
  KILN_HD bool operator()(T x) const { return m::isnan(x); }
};
template <class T>
struct Isinf : NoParams {
  using NoParams::NoParams;
  KILN_HD bool operator()(T x) const { return m::isinf(x); }
};
template <class T>
struct Isfinite : NoParams {
  using NoParams::NoParams;
  KILN_HD bool operator()(T x) const {
    if constexpr (is_cplx_v<T> || is_real_float_v<T>)
      return ::kiln::detail::isfinite(x);
    else
      return true;
  }
};
template <class T>
struct Isposinf : NoParams {
  using NoParams::NoParams;
  KILN_HD bool operator()(T x) const {
    if constexpr (is_real_float_v<T>)
      return x == m::infinity<T>();
    else
      return false;
  }
};
template <class T>
struct Isneginf : NoParams {
  using NoParams::NoParams;
  KILN_HD bool operator()(T x) const {
    if constexpr (is_real_float_v<T>)
      return x == -m::infinity<T>();
    else
      return false;
  }
};
template <class T>
struct LogicalNot : NoParams {
  using NoParams::NoParams;
  KILN_HD bool operator()(T x) const { return !truthy(x); }
};

// NaN -> a, +inf -> a_imag, -inf -> b (the front end packs the three replacement values so and
// fills the dtype's finite extremes for the ones not given). Complex: each part separately.
template <class T>
struct NanToNum {
  using R = real_of_t<T>;
  R nan, posinf, neginf;
  KILN_HD explicit NanToNum(const Params& p)
      : nan(static_cast<R>(p.a)), posinf(static_cast<R>(p.a_imag)), neginf(static_cast<R>(p.b)) {}
  KILN_HD R fix(R x) const {
    if constexpr (is_real_float_v<R>)
      return m::isnan(x) ? nan
                         : (x == m::infinity<R>() ? posinf : (x == -m::infinity<R>() ? neginf : x));
    else
      return x;
  }
  KILN_HD T operator()(T x) const {
    if constexpr (is_cplx_v<T>)
      return T(fix(x.real()), fix(x.imag()));
    else
      return fix(x);
  }
};

template <class T>
struct BitwiseNot : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T x) const {
    if constexpr (is_bool_v<T>)
      return !x;
    else
      return static_cast<T>(~x);
  }
};

template <class T>
struct Conj : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T x) const {
    if constexpr (is_cplx_v<T>)
      return T(x.real(), -x.imag());
    else
      return x;
  }
};

// Complex: arg(z) (real result); real: pi for x < 0, 0 otherwise, NaN kept.
template <class T>
struct Angle : NoParams {
  using NoParams::NoParams;
  KILN_HD auto operator()(T x) const {
    if constexpr (is_cplx_v<T>) {
      return m::atan2(x.imag(), x.real());
    } else {
      if (m::isnan(x)) return x;
      return x < T(0) ? m::kPi<T> : T(0);
    }
  }
};

}  // namespace kiln::fn
