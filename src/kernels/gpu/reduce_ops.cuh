// The math of each GPU reduction for the engine (reduce.cuh): accumulator, identity, step,
// combine and write. Accumulation types follow the CPU's Note [Reduction accumulation types],
// so GPU and CPU results agree to rounding.
#pragma once

#include <cstdint>
#include <limits>
#include <type_traits>

#include "kernels/convert.h"
#include "kernels/functors.h"

namespace kiln::gpu::red {

template <class T>
using real_t = fn::real_of_t<T>;

template <class T>
__host__ __device__ inline bool is_nan(const T& v) {
  return fn::m::isnan(v);
}

// ---- sum, mean, nansum, nanmean, prod ----

// Integers and bool are reduced as int64 (the kernels cast them first): the sum wraps in
// uint64 as on the CPU.
template <class T>
struct SumAcc {
  using type = std::conditional_t<std::is_integral_v<T>, uint64_t, detail::opmath_t<T>>;
};

template <class T, bool kNan, bool kMean>
struct SumOp {
  using In = T;
  using Acc = typename SumAcc<T>::type;
  using Out = std::conditional_t<std::is_integral_v<T>, int64_t, T>;
  Out* out;
  int64_t count;
  __device__ Acc identity() const { return Acc(0); }
  __device__ Acc step(Acc a, T x, int64_t) const {
    Acc v;
    if constexpr (std::is_same_v<Acc, uint64_t>)
      v = static_cast<uint64_t>(static_cast<int64_t>(x));
    else
      v = detail::convert<Acc>(x);
    if constexpr (kNan) v = is_nan(v) ? Acc(0) : v;
    return a + v;
  }
  __device__ Acc combine(Acc a, Acc b) const { return a + b; }
  __device__ void write(Acc a, int64_t o) const {
    if constexpr (kMean)
      out[o] = detail::convert<Out>(a / static_cast<real_t<Acc>>(count));
    else
      out[o] = detail::convert<Out>(a);
  }
};

template <class T>
struct NanMeanOp {
  using In = T;
  using C = detail::opmath_t<T>;
  struct Acc {
    C s;
    int64_t n;
  };
  T* out;
  __device__ Acc identity() const { return {C(0), 0}; }
  __device__ Acc step(Acc a, T x, int64_t) const {
    C v = detail::convert<C>(x);
    bool nan = v != v;
    return {a.s + (nan ? C(0) : v), a.n + (nan ? 0 : 1)};
  }
  __device__ Acc combine(Acc a, Acc b) const { return {a.s + b.s, a.n + b.n}; }
  __device__ void write(Acc a, int64_t o) const {
    out[o] = detail::convert<T>(a.s / static_cast<C>(a.n));
  }
};

template <class T>
struct ProdOp {
  using In = T;
  using Acc =
      std::conditional_t<std::is_integral_v<T>, uint64_t,
                         std::conditional_t<detail::is_complex_v<T>, complex<double>, double>>;
  using Out = std::conditional_t<std::is_integral_v<T>, int64_t, T>;
  Out* out;
  __device__ Acc identity() const { return Acc(1); }
  __device__ Acc step(Acc a, T x, int64_t) const {
    if constexpr (std::is_same_v<Acc, uint64_t>)
      return a * static_cast<uint64_t>(static_cast<int64_t>(x));
    else
      return a * detail::convert<Acc>(x);
  }
  __device__ Acc combine(Acc a, Acc b) const { return a * b; }
  __device__ void write(Acc a, int64_t o) const { out[o] = detail::convert<Out>(a); }
};

// ---- amax/amin, max/min with indices, argmax/argmin (NaN is the extreme of both) ----

template <class C, bool kMax>
__host__ __device__ constexpr C extreme_identity() {
  if constexpr (std::is_same_v<C, bool>)
    return !kMax;
  else if constexpr (std::numeric_limits<C>::has_infinity)
    return kMax ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity();
  else
    return kMax ? std::numeric_limits<C>::lowest() : std::numeric_limits<C>::max();
}

template <class C, bool kMax>
__device__ inline bool better(const C& v, const C& cur) {
  if constexpr (kMax)
    return v > cur || (is_nan(v) && !is_nan(cur));
  else
    return v < cur || (is_nan(v) && !is_nan(cur));
}

template <class T, bool kMax>
struct ExtremeOp {
  using In = T;
  using Acc = detail::opmath_t<T>;
  T* out;
  __device__ Acc identity() const { return extreme_identity<Acc, kMax>(); }
  __device__ Acc step(Acc a, T x, int64_t) const {
    Acc v = detail::convert<Acc>(x);
    return better<Acc, kMax>(v, a) ? v : a;
  }
  __device__ Acc combine(Acc a, Acc b) const { return better<Acc, kMax>(b, a) ? b : a; }
  __device__ void write(Acc a, int64_t o) const { out[o] = detail::convert<T>(a); }
};

// Ties (and repeated NaNs) give the first index, whatever order the accumulators meet in.
template <class T, bool kMax>
struct ArgOp {
  using In = T;
  using C = detail::opmath_t<T>;
  struct Acc {
    C v;
    int64_t i;
  };
  T* values;  // null for argmax/argmin
  int64_t* indices;
  __device__ Acc identity() const { return {extreme_identity<C, kMax>(), INT64_MAX}; }
  __device__ Acc combine(Acc a, Acc b) const {
    if (better<C, kMax>(b.v, a.v)) return b;
    if (better<C, kMax>(a.v, b.v)) return a;
    return b.i < a.i ? b : a;  // equal, or both NaN
  }
  __device__ Acc step(Acc a, T x, int64_t r) const {
    return combine(a, Acc{detail::convert<C>(x), r});
  }
  __device__ void write(Acc a, int64_t o) const {
    if (values) values[o] = detail::convert<T>(a.v);
    indices[o] = a.i == INT64_MAX ? 0 : a.i;
  }
};

// ---- var/std with mean (Welford/Chan in double, as the CPU) ----

template <class T>
struct WelfordOp {
  using In = T;
  using V = std::conditional_t<detail::is_complex_v<T>, complex<double>, double>;
  // The mean is written as sum / n (a plain sum beside Welford's running mean), so infinite
  // inputs give an infinite mean, as on the CPU, where Welford's update gives NaN.
  struct Acc {
    double n;
    V mean;
    double m2;
    V sum;
  };
  using Out0 = real_t<T>;
  Out0* var;
  T* mean;
  double correction;
  bool take_sqrt;
  __device__ static double abs2(const V& d) {
    if constexpr (detail::is_complex_v<V>)
      return d.real() * d.real() + d.imag() * d.imag();
    else
      return d * d;
  }
  __device__ Acc identity() const { return {0, V(0), 0, V(0)}; }
  __device__ Acc combine(const Acc& a, const Acc& b) const {
    if (a.n == 0) return b;
    if (b.n == 0) return a;
    const double n = a.n + b.n;
    const V d = b.mean - a.mean;
    return {n, a.mean + d * (b.n / n), a.m2 + b.m2 + abs2(d) * (a.n * (b.n / n)), a.sum + b.sum};
  }
  __device__ Acc step(const Acc& a, T x, int64_t) const {
    const V v = detail::convert<V>(x);
    const double n = a.n + 1;
    const V d = v - a.mean;
    const V mean = a.mean + d / n;
    if constexpr (detail::is_complex_v<V>) {
      const V d2 = v - mean;
      return {n, mean, a.m2 + d.real() * d2.real() + d.imag() * d2.imag(), a.sum + v};
    } else {
      return {n, mean, a.m2 + d * (v - mean), a.sum + v};
    }
  }
  __device__ void write(const Acc& a, int64_t o) const {
    const double div = a.n > correction ? a.n - correction : 0.0;
    double v = a.m2 / div;
    if (take_sqrt) v = ::sqrt(v);
    var[o] = detail::convert<Out0>(v);
    mean[o] = detail::convert<T>(a.n == 0 ? a.mean * fn::m::quiet_nan<double>() : a.sum / a.n);
  }
};

// ---- vector norms: kind 0 (count of nonzeros), 1, 2, +inf, -inf, general p ----

enum NormKind : int { kNormZero, kNormOne, kNormTwo, kNormInf, kNormNegInf, kNormGeneral };

template <class T>
struct NormOp {
  using In = T;
  using Acc = double;
  using Out = real_t<T>;
  Out* out;
  double p;
  int kind;
  __device__ Acc identity() const {
    return kind == kNormInf ? 0.0 : (kind == kNormNegInf ? fn::m::infinity<double>() : 0.0);
  }
  __device__ Acc combine(Acc a, Acc b) const {
    if (kind == kNormInf) return (b > a || b != b) && a == a ? b : a;
    if (kind == kNormNegInf) return (b < a || b != b) && a == a ? b : a;
    return a + b;
  }
  __device__ Acc step(Acc a, T x, int64_t) const {
    double v;
    if constexpr (detail::is_complex_v<T>) {
      auto z = detail::convert<complex<double>>(x);
      v = ::hypot(z.real(), z.imag());
    } else {
      v = ::fabs(detail::convert<double>(x));
    }
    switch (kind) {
      case kNormZero:
        return a + (v != 0 ? 1.0 : 0.0);
      case kNormOne:
        return a + v;
      case kNormTwo:
        return a + v * v;
      case kNormInf:
      case kNormNegInf:
        return combine(a, v);
      default:
        return a + ::pow(v, p);
    }
  }
  __device__ void write(Acc a, int64_t o) const {
    double r = a;
    if (kind == kNormTwo)
      r = ::sqrt(a);
    else if (kind == kNormGeneral)
      r = ::pow(a, 1.0 / p);
    out[o] = detail::convert<Out>(r);
  }
};

// ---- logsumexp: a running (max, scaled sum) pair ----

template <class T>
struct LseOp {
  using In = T;
  using C = detail::opmath_t<T>;
  struct Acc {
    C m;
    C s;  // sum of exp(x - m); 0 for no elements
  };
  T* out;
  __device__ Acc identity() const { return {-fn::m::infinity<C>(), C(0)}; }
  __device__ Acc combine(Acc a, Acc b) const {
    if (a.s == C(0)) return b;
    if (b.s == C(0)) return a;
    if (a.m != a.m || b.m != b.m) return {fn::m::quiet_nan<C>(), C(1)};
    const C mx = a.m > b.m ? a.m : b.m;
    if (fn::m::isinf(mx)) return {mx, a.s + b.s};  // all -inf, or some +inf
    return {mx, a.s * fn::m::exp(a.m - mx) + b.s * fn::m::exp(b.m - mx)};
  }
  __device__ Acc step(Acc a, T x, int64_t) const {
    return combine(a, Acc{detail::convert<C>(x), C(1)});
  }
  __device__ void write(Acc a, int64_t o) const {
    C r = a.s == C(0) ? -fn::m::infinity<C>()
                      : (fn::m::isinf(a.m) || a.m != a.m ? a.m : a.m + fn::m::log(a.s));
    out[o] = detail::convert<T>(r);
  }
};

// ---- any / all (output bool, or uint8 for uint8 inputs) ----

template <class T, bool kAll>
struct AnyAllOp {
  using In = T;
  using Acc = bool;
  void* out;
  bool out_u8;
  __device__ Acc identity() const { return kAll; }
  __device__ Acc combine(Acc a, Acc b) const { return kAll ? (a && b) : (a || b); }
  __device__ Acc step(Acc a, T x, int64_t) const {
    return combine(a, fn::truthy(detail::convert<detail::opmath_t<T>>(x)));
  }
  __device__ void write(Acc a, int64_t o) const {
    if (out_u8)
      static_cast<uint8_t*>(out)[o] = a ? 1 : 0;
    else
      static_cast<bool*>(out)[o] = a;
  }
};

}  // namespace kiln::gpu::red
