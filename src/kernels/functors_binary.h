// Binary and ternary elementwise functors (add, div, pow, comparisons, where, clamp, lerp, ...).
// Included by kernels/functors.h. Integer division by zero is rejected before the kernel runs
// (functors cannot throw), so the integer paths here assume a nonzero divisor.
#pragma once

namespace kiln::fn {

// ---------------- arithmetic ----------------

// a + alpha * b (alpha from Params). Complex: alpha == 1 adds without the product, whose
// textbook form would turn an infinite b into inf + NaN i (alpha == 1 is the common case).
template <class T>
struct Add {
  T alpha;
  bool unit;
  KILN_HD explicit Add(const Params& p) : alpha(param_a<T>(p)), unit(alpha == T(1)) {}
  KILN_HD T operator()(T a, T b) const {
    if constexpr (is_bool_v<T>)
      return a || (alpha && b);
    else if constexpr (is_cplx_v<T>)
      return unit ? a + b : a + alpha * b;
    else
      return static_cast<T>(a + alpha * b);
  }
};

template <class T>
struct Sub {
  T alpha;
  bool unit;
  KILN_HD explicit Sub(const Params& p) : alpha(param_a<T>(p)), unit(alpha == T(1)) {}
  KILN_HD T operator()(T a, T b) const {
    if constexpr (is_cplx_v<T>)
      return unit ? a - b : a - alpha * b;
    else
      return static_cast<T>(a - alpha * b);
  }
};

template <class T>
struct Mul : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T a, T b) const {
    if constexpr (is_bool_v<T>)
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

// Integer a / -1 and a % -1 are done without the division, which traps for the minimum value.
template <class T>
struct DivTrunc : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T a, T b) const {
    if constexpr (is_int_v<T>) {
      if constexpr (std::is_signed_v<T>)
        if (b == T(-1)) return static_cast<T>(T(0) - a);
      return static_cast<T>(a / b);
    } else {
      return m::trunc(a / b);
    }
  }
};

// Note [Floor division]
// Python's a // b. Floats: q = (a - fmod(a, b)) / b is exact up to one rounding; it is moved
// down by one when the remainder's sign differs from b's, rounded to the nearest integer, and
// given the sign of a / b when it is zero. b == 0 gives a / b (inf or NaN), as PyTorch.
template <class T>
struct DivFloor : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T a, T b) const {
    if constexpr (is_int_v<T>) {
      if constexpr (std::is_signed_v<T>) {
        if (b == T(-1)) return static_cast<T>(T(0) - a);
        const T q = static_cast<T>(a / b);
        const T r = static_cast<T>(a % b);
        return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<T>(q - 1) : q;
      } else {
        return static_cast<T>(a / b);
      }
    } else {
      if (b == T(0)) return a / b;
      const T mod = m::fmod(a, b);
      T div = (a - mod) / b;
      if (mod != T(0) && ((b < T(0)) != (mod < T(0)))) div -= T(1);
      if (div == T(0)) return m::copysign(T(0), a / b);
      T fl = m::floor(div);
      if (div - fl > T(0.5)) fl += T(1);
      return fl;
    }
  }
};

// Python's a % b: the result has the sign of b.
template <class T>
struct Remainder : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T a, T b) const {
    if constexpr (is_int_v<T>) {
      if constexpr (std::is_signed_v<T>) {
        if (b == T(-1)) return T(0);
        T r = static_cast<T>(a % b);
        if (r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
        return r;
      } else {
        return static_cast<T>(a % b);
      }
    } else {
      T r = m::fmod(a, b);
      if (r != T(0) && ((b < T(0)) != (r < T(0)))) r += b;
      return r;
    }
  }
};

// C's fmod / %: the result has the sign of a.
template <class T>
struct Fmod : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T a, T b) const {
    if constexpr (is_int_v<T>) {
      if constexpr (std::is_signed_v<T>)
        if (b == T(-1)) return T(0);
      return static_cast<T>(a % b);
    } else {
      return m::fmod(a, b);
    }
  }
};

// Integers: exact power by squaring (wrapping); a negative exponent gives 1 for a == 1,
// +-1 for a == -1 and 0 otherwise, as PyTorch (the front end rejects negative scalar exponents).
template <class T>
struct Pow : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T a, T b) const {
    if constexpr (is_int_v<T>) {
      if constexpr (std::is_signed_v<T>) {
        if (b < 0) {
          if (a == 1) return T(1);
          if (a == -1) return (b % 2) != 0 ? T(-1) : T(1);
          return T(0);
        }
      }
      using U = std::make_unsigned_t<T>;
      U base = static_cast<U>(a), result = 1;
      for (T e = b; e != 0; e = static_cast<T>(e >> 1)) {
        if (e & 1) result = static_cast<U>(result * base);
        base = static_cast<U>(base * base);
      }
      return static_cast<T>(result);
    } else {
      return m::pow(a, b);
    }
  }
};

template <class T>
struct Atan2 : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T a, T b) const { return m::atan2(a, b); }
};
template <class T>
struct Hypot : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T a, T b) const { return m::hypot(a, b); }
};
template <class T>
struct Copysign : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T a, T b) const { return m::copysign(a, b); }
};

// ---------------- min / max ----------------

// NaN-propagating (maximum, minimum, clamp): any NaN operand gives NaN.
template <class T>
KILN_HD inline T max_propagate(T a, T b) {
  if constexpr (is_real_float_v<T>) {
    if (m::isnan(a) || m::isnan(b)) return m::quiet_nan<T>();
  }
  return a < b ? b : a;
}
template <class T>
KILN_HD inline T min_propagate(T a, T b) {
  if constexpr (is_real_float_v<T>) {
    if (m::isnan(a) || m::isnan(b)) return m::quiet_nan<T>();
  }
  return b < a ? b : a;
}

template <class T>
struct Maximum : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T a, T b) const { return max_propagate(a, b); }
};
template <class T>
struct Minimum : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T a, T b) const { return min_propagate(a, b); }
};
// NaN-ignoring: a NaN operand gives the other one.
template <class T>
struct Fmax : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T a, T b) const {
    if constexpr (is_real_float_v<T>)
      return m::fmax(a, b);
    else
      return a < b ? b : a;
  }
};
template <class T>
struct Fmin : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T a, T b) const {
    if constexpr (is_real_float_v<T>)
      return m::fmin(a, b);
    else
      return b < a ? b : a;
  }
};

// ---------------- comparisons and logic (bool results) ----------------
#define KILN_FN_COMPARE(Name, op)                              \
  template <class T>                                           \
  struct Name : NoParams {                                     \
    using NoParams::NoParams;                                  \
    KILN_HD bool operator()(T a, T b) const { return a op b; } \
  };
KILN_FN_COMPARE(Eq, ==)
KILN_FN_COMPARE(Ne, !=)
KILN_FN_COMPARE(Lt, <)
KILN_FN_COMPARE(Le, <=)
KILN_FN_COMPARE(Gt, >)
KILN_FN_COMPARE(Ge, >=)
#undef KILN_FN_COMPARE

template <class T>
struct LogicalAnd : NoParams {
  using NoParams::NoParams;
  KILN_HD bool operator()(T a, T b) const { return truthy(a) && truthy(b); }
};
template <class T>
struct LogicalOr : NoParams {
  using NoParams::NoParams;
  KILN_HD bool operator()(T a, T b) const { return truthy(a) || truthy(b); }
};
template <class T>
struct LogicalXor : NoParams {
  using NoParams::NoParams;
  KILN_HD bool operator()(T a, T b) const { return truthy(a) != truthy(b); }
};

// ---------------- bitwise (integers and bool) ----------------
template <class T>
struct BitwiseAnd : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T a, T b) const { return static_cast<T>(a & b); }
};
template <class T>
struct BitwiseOr : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T a, T b) const { return static_cast<T>(a | b); }
};
template <class T>
struct BitwiseXor : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T a, T b) const { return static_cast<T>(a ^ b); }
};

// Shift counts outside [0, bits) give 0 (left shift) or the sign fill (right shift), as PyTorch,
// instead of C++'s undefined behaviour. Left shifts of negative values shift the bit pattern.
template <class T>
struct BitwiseLeftShift : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T a, T b) const {
    using U = std::make_unsigned_t<T>;
    using S = std::make_signed_t<T>;
    constexpr int kBits = static_cast<int>(sizeof(T) * 8);
    if (static_cast<S>(b) < 0 || static_cast<int64_t>(b) >= kBits) return T(0);
    return static_cast<T>(static_cast<U>(static_cast<U>(a) << b));
  }
};
template <class T>
struct BitwiseRightShift : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T a, T b) const {
    using S = std::make_signed_t<T>;
    constexpr int kMax = static_cast<int>(sizeof(T) * 8) - (std::is_signed_v<T> ? 1 : 0);
    if (static_cast<S>(b) < 0 || static_cast<int64_t>(b) >= kMax) return static_cast<T>(a >> kMax);
    return static_cast<T>(a >> b);
  }
};

// ---------------- clamp family ----------------
// clamp_min(x, lo) / clamp_max(x, hi) with tensor or scalar bounds: NaN-propagating.
template <class T>
struct ClampMin : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T x, T lo) const { return max_propagate(x, lo); }
};
template <class T>
struct ClampMax : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T x, T hi) const { return min_propagate(x, hi); }
};
// min(max(x, lo), hi): lo > hi gives hi everywhere, NaN in any operand gives NaN.
template <class T>
struct Clamp : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T x, T lo, T hi) const { return min_propagate(max_propagate(x, lo), hi); }
};

// ---------------- ternary ----------------
template <class T>
struct Where : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(bool c, T a, T b) const { return c ? a : b; }
};

// start + w (end - start), evaluated from the nearer end for accuracy (exact at w = 0 and 1).
template <class T>
struct Lerp : NoParams {
  using NoParams::NoParams;
  KILN_HD T operator()(T start, T end, T w) const {
    const T diff = end - start;
    bool low;
    if constexpr (is_cplx_v<T>)
      low = m::abs(w) < real_of_t<T>(0.5);
    else
      low = w < T(0.5);
    return low ? start + w * diff : end - diff * (T(1) - w);
  }
};

// self + value * t1 * t2 (Params.a = value).
template <class T>
struct Addcmul {
  T value;
  KILN_HD explicit Addcmul(const Params& p) : value(param_a<T>(p)) {}
  KILN_HD T operator()(T self, T t1, T t2) const { return static_cast<T>(self + value * t1 * t2); }
};

// self + value * t1 / t2, evaluated left to right as PyTorch (floating and complex only).
template <class T>
struct Addcdiv {
  T value;
  KILN_HD explicit Addcdiv(const Params& p) : value(param_a<T>(p)) {}
  KILN_HD T operator()(T self, T t1, T t2) const { return self + value * t1 / t2; }
};

}  // namespace kiln::fn
