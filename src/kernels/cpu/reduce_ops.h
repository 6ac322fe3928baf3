// The math of each CPU reduction as an Op for the engine (reduce_engine.h): accumulator type,
// leaf (several accumulators, or two passes), combine, and write. Accumulation types follow
// Note [Reduction accumulation types].
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/convert.h"
#include "kernels/cpu/reduce_engine.h"

namespace kiln::cpu::red {

// Note [Reduction accumulation types]
// sum/prod of bool and integers accumulate in 64 bits (unsigned, so overflow wraps as in
// PyTorch without undefined behaviour) and return int64; float16/bfloat16 accumulate in float;
// float32 sums accumulate in float with the pairwise tree of Note [CPU reduction order]; prod,
// norm and var/std of float32 accumulate in double (no overflow of squares, no cancellation);
// complex follows its real type.

template <class T>
inline constexpr bool is_int_like_v = std::is_integral_v<T>;  // bool and the integers

template <class T>
struct RealT {
  using type = T;
};
template <class T>
struct RealT<complex<T>> {
  using type = T;
};
template <class T>
using real_t = typename RealT<T>::type;

template <class T>
struct SumTypes {
  using acc = std::conditional_t<is_int_like_v<T>, uint64_t, detail::opmath_t<T>>;
  using out = std::conditional_t<is_int_like_v<T>, int64_t, T>;
};

template <class T>
struct ProdAcc {
  using type =
      std::conditional_t<is_int_like_v<T>, uint64_t,
                         std::conditional_t<detail::is_complex_v<T>, complex<double>, double>>;
};

template <class A, class T>
KILN_INLINE A to_acc(const T& x) {
  if constexpr (std::is_same_v<A, uint64_t>)
    return static_cast<uint64_t>(static_cast<int64_t>(x));
  else
    return detail::convert<A>(x);
}

template <class C>
KILN_INLINE bool is_nan(const C& v) {
  if constexpr (detail::is_complex_v<C>)
    return v.real() != v.real() || v.imag() != v.imag();
  else if constexpr (std::is_floating_point_v<C>)
    return v != v;
  else
    return false;
}

// float16 -> float for n values at p (stride s, in elements): exact, so the same values as
// detail::convert<float>; F16C where the CPU has it (kiln is built for baseline x86-64, which
// has no F16C). Defined in reduce_sum_kernels.cpp.
void half_to_float_n(const Half* p, int64_t s, int64_t n, float* out);

// Default leaf and lane leaf from a per-element step (D::step(acc, x, index)), with K
// independent accumulators folded pairwise at the end of the leaf.
template <class D, class T, class A, int K = 16>
struct StepLeaf {
  using In = T;
  using Acc = A;
  static constexpr int64_t kLeaf = 512;
  static constexpr bool kOrdered = false;

  template <class E>
  Acc leaf(const E& each) const {
    const D& d = static_cast<const D&>(*this);
    Acc a[K];
    for (int k = 0; k < K; ++k) a[k] = d.identity();
    if constexpr (std::is_same_v<T, Half> && requires { D::kStepConverted; }) {
      // Convert blocks of float16 first (D::step_converted(acc, float) == D::step(acc, half));
      // blocks are multiples of K, so the accumulators see the same values in the same order.
      each([&](const T* p, int64_t s, int64_t n, int64_t i0) {
        constexpr int64_t kBlock = 32 * K;
        float buf[kBlock];
        for (int64_t c0 = 0; c0 < n; c0 += kBlock) {
          const int64_t m = std::min(kBlock, n - c0);
          half_to_float_n(p + c0 * s, s, m, buf);
          int64_t i = 0;
          for (; i + K <= m; i += K)
            for (int k = 0; k < K; ++k) a[k] = d.step_converted(a[k], buf[i + k]);
          for (; i < m; ++i) a[0] = d.step_converted(a[0], buf[i]);
        }
        (void)i0;
      });
      fold<K / 2>(d, a);
      return a[0];
    }
    each([&](const T* p, int64_t s, int64_t n, int64_t i0) {
      int64_t i = 0;
      if (s == 1) {
        for (; i + K <= n; i += K)
          for (int k = 0; k < K; ++k) a[k] = d.step(a[k], p[i + k], i0 + i + k);
      } else {
        for (; i + K <= n; i += K)
          for (int k = 0; k < K; ++k) a[k] = d.step(a[k], p[(i + k) * s], i0 + i + k);
      }
      for (; i < n; ++i) a[0] = d.step(a[0], p[i * s], i0 + i);
    });
    fold<K / 2>(d, a);
    return a[0];
  }

  // a[0] = the pairwise fold of a[0..2W): unrolled at compile time, so that the accumulators
  // stay in registers (a runtime-bounded fold loop kept them on the stack: 4x slower rows of 16).
  template <int W>
  static KILN_INLINE void fold(const D& d, Acc* a) {
    if constexpr (W > 0) {
#pragma GCC unroll 64
      for (int k = 0; k < W; ++k) a[k] = d.combine(a[k], a[k + W]);
      fold<W / 2>(d, a);
    }
  }

  template <class E>
  void leaf_lanes(const E& each, int64_t W, int64_t sw, Acc* acc) const {
    const D& d = static_cast<const D&>(*this);
    for (int64_t w = 0; w < W; ++w) acc[w] = d.identity();
    each([&](const T* p, int64_t s, int64_t n, int64_t i0) {
      for (int64_t i = 0; i < n; ++i) {
        const T* r = p + i * s;
        if (sw == 1) {
          for (int64_t w = 0; w < W; ++w) acc[w] = d.step(acc[w], r[w], i0 + i);
        } else {
          for (int64_t w = 0; w < W; ++w) acc[w] = d.step(acc[w], r[w * sw], i0 + i);
        }
      }
    });
  }
};

// ---- sum, mean, nansum (kNan), prod ----

template <class T, bool kNan, bool kMean>
struct SumOp : StepLeaf<SumOp<T, kNan, kMean>, T, typename SumTypes<T>::acc> {
  using A = typename SumTypes<T>::acc;
  using Out = typename SumTypes<T>::out;
  Out* out = nullptr;
  int64_t count = 0;  // kMean: the divisor
  A identity() const { return A(0); }
  KILN_INLINE A step(A a, T x, int64_t) const { return step_converted(a, to_acc<A>(x)); }
  // float16 leaves convert blocks first (StepLeaf::leaf).
  static constexpr bool kStepConverted = true;
  KILN_INLINE A step_converted(A a, A v) const {
    if constexpr (kNan) v = is_nan(v) ? A(0) : v;
    return a + v;
  }
  KILN_INLINE A combine(A a, A b) const { return a + b; }
  void write(const A& a, int64_t o, int64_t) const {
    if constexpr (kMean) {
      out[o] = detail::convert<Out>(a / static_cast<real_t<A>>(count));
    } else {
      out[o] = detail::convert<Out>(a);
    }
  }
};

// nanmean: (sum of non-NaN, count of non-NaN); floating types only.
template <class T>
struct NanMeanAcc {
  detail::opmath_t<T> s;
  int64_t n;
};
template <class T>
struct NanMeanOp : StepLeaf<NanMeanOp<T>, T, NanMeanAcc<T>> {
  using C = detail::opmath_t<T>;
  using A = NanMeanAcc<T>;
  T* out = nullptr;
  A identity() const { return {C(0), 0}; }
  KILN_INLINE A step(A a, T x, int64_t) const {
    const C v = detail::convert<C>(x);
    const bool nan = v != v;
    return {a.s + (nan ? C(0) : v), a.n + (nan ? 0 : 1)};
  }
  KILN_INLINE A combine(A a, A b) const { return {a.s + b.s, a.n + b.n}; }
  void write(const A& a, int64_t o, int64_t) const {
    out[o] = detail::convert<T>(a.s / static_cast<C>(a.n));
  }
};

template <class T>
struct ProdOp : StepLeaf<ProdOp<T>, T, typename ProdAcc<T>::type> {
  using A = typename ProdAcc<T>::type;
  using Out = typename SumTypes<T>::out;
  Out* out = nullptr;
  A identity() const { return A(1); }
  KILN_INLINE A step(A a, T x, int64_t) const { return a * to_acc<A>(x); }
  KILN_INLINE A combine(A a, A b) const { return a * b; }
  void write(const A& a, int64_t o, int64_t) const { out[o] = detail::convert<Out>(a); }
};

// ---- amax / amin (NaN propagates) ----

template <class C, bool kMax>
KILN_INLINE bool better(const C& v, const C& cur) {  // should v replace cur?
  if constexpr (kMax)
    return v > cur || (is_nan(v) && !is_nan(cur));
  else
    return v < cur || (is_nan(v) && !is_nan(cur));
}

template <class C, bool kMax>
C extreme_identity() {
  if constexpr (std::is_same_v<C, bool>)
    return !kMax;
  else if constexpr (std::numeric_limits<C>::has_infinity)
    return kMax ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity();
  else
    return kMax ? std::numeric_limits<C>::lowest() : std::numeric_limits<C>::max();
}

// The extreme of a leaf's values, whether any is NaN, and whether the leaf has elements.
// float/double runs use GCC vector extensions: gcc does not vectorize the scalar select
// `v > m ? v : m` under the default -ftrapping-math, and a packed compare-and-select is 4x
// faster. NaN is tracked on the side (a NaN never replaces m through the compare).
template <class T, bool kMax, class E>
KILN_INLINE void leaf_extreme(const E& each, detail::opmath_t<T>& ext, bool& nan, bool& any) {
  using C = detail::opmath_t<T>;
  constexpr bool kVec = std::is_same_v<T, float> || std::is_same_v<T, double>;
  constexpr int K = 16;
  C m[K];
  unsigned char nn[K] = {};
  for (int k = 0; k < K; ++k) m[k] = extreme_identity<C, kMax>();
  auto body = [&](int k, C v) {
    if constexpr (kMax)
      m[k] = v > m[k] ? v : m[k];
    else
      m[k] = v < m[k] ? v : m[k];
    nn[k] |= static_cast<unsigned char>(v != v);
  };
  [[maybe_unused]] auto vec_run = [&](const T* p, int64_t n) -> int64_t {
    if constexpr (kVec) {
      typedef C V __attribute__((vector_size(16)));
      constexpr int L = 16 / sizeof(C), NV = 4;
      V vm[NV];
      decltype(V() != V()) vn[NV] = {};
      // Whole-vector stores (lane stores read as "maybe uninitialized" to gcc once inlined).
      for (int j = 0; j < NV; ++j) vm[j] = V{} + extreme_identity<C, kMax>();
      int64_t i = 0;
      for (; i + NV * L <= n; i += NV * L)
        for (int j = 0; j < NV; ++j) {
          V v;
          std::memcpy(&v, p + i + j * L, sizeof(V));
          if constexpr (kMax)
            vm[j] = v > vm[j] ? v : vm[j];
          else
            vm[j] = v < vm[j] ? v : vm[j];
          vn[j] |= v != v;
        }
      for (int j = 0; j < NV; ++j)
        for (int l = 0; l < L; ++l) {
          body(0, vm[j][l]);
          nn[0] |= static_cast<unsigned char>(vn[j][l] != 0);
        }
      return i;
    } else {
      return 0;
    }
  };
  each([&](const T* p, int64_t s, int64_t n, int64_t) {
    any = any || n > 0;
    int64_t i = 0;
    if (s == 1) {
      if constexpr (kVec) i = vec_run(p, n);
      for (; i + K <= n; i += K)
        for (int k = 0; k < K; ++k) body(k, detail::convert<C>(p[i + k]));
    } else {
      for (; i + K <= n; i += K)
        for (int k = 0; k < K; ++k) body(k, detail::convert<C>(p[(i + k) * s]));
    }
    for (; i < n; ++i) body(0, detail::convert<C>(p[i * s]));
  });
  ext = m[0];
  nan = nn[0] != 0;
  for (int k = 1; k < K; ++k) {
    ext = better<C, kMax>(m[k], ext) ? m[k] : ext;
    nan = nan || nn[k] != 0;
  }
}

template <class T, bool kMax>
struct ExtremeOp : StepLeaf<ExtremeOp<T, kMax>, T, detail::opmath_t<T>> {
  using C = detail::opmath_t<T>;
  T* out = nullptr;
  C identity() const { return extreme_identity<C, kMax>(); }
  KILN_INLINE C step(C a, T x, int64_t) const {
    const C v = detail::convert<C>(x);
    return better<C, kMax>(v, a) ? v : a;
  }
  KILN_INLINE C combine(C a, C b) const { return better<C, kMax>(b, a) ? b : a; }
  template <class E>
  C leaf(const E& each) const {
    C m;
    bool nan = false, any = false;
    leaf_extreme<T, kMax>(each, m, nan, any);
    if constexpr (std::numeric_limits<C>::has_quiet_NaN)
      if (nan) return std::numeric_limits<C>::quiet_NaN();
    return m;
  }
  void write(const C& a, int64_t o, int64_t) const { out[o] = detail::convert<T>(a); }
};

// ---- max/min with indices, argmax/argmin: the first extreme (the first NaN) wins ----

template <class C>
struct ArgAcc {
  C v;
  int64_t i;  // -1: no element yet
};

template <class T, bool kMax>
struct ArgOp : StepLeaf<ArgOp<T, kMax>, T, ArgAcc<detail::opmath_t<T>>> {
  using C = detail::opmath_t<T>;
  using A = ArgAcc<C>;
  static constexpr bool kOrdered = true;
  T* values = nullptr;  // null for argmax/argmin (indices are then output 0)
  int64_t* indices = nullptr;
  A identity() const { return {C(), -1}; }
  KILN_INLINE A step(A a, T x, int64_t i) const {
    const C v = detail::convert<C>(x);
    return (a.i < 0 || better<C, kMax>(v, a.v)) ? A{v, i} : a;
  }
  A combine(A a, A b) const {
    if (a.i < 0) return b;
    if (b.i < 0) return a;
    if (better<C, kMax>(b.v, a.v)) return b;
    if (better<C, kMax>(a.v, b.v)) return a;
    return a.i <= b.i ? a : b;  // equal values, or both NaN
  }
  // Two passes over the leaf (it is in cache): the extreme value, then its first index.
  template <class E>
  A leaf(const E& each) const {
    C m;
    bool nan = false, any = false;
    leaf_extreme<T, kMax>(each, m, nan, any);
    A r = identity();
    if (!any) return r;
    each([&](const T* p, int64_t s, int64_t n, int64_t i0) {
      if (r.i >= 0) return;
      for (int64_t i = 0; i < n; ++i) {
        const C v = detail::convert<C>(p[i * s]);
        if (nan ? is_nan(v) : v == m) {
          r = A{v, i0 + i};
          return;
        }
      }
    });
    return r;
  }
  void write(const A& a, int64_t o0, int64_t o1) const {
    if (values) {
      values[o0] = detail::convert<T>(a.v);
      indices[o1] = a.i;
    } else {
      indices[o0] = a.i;
    }
  }
};

// ---- any / all ----

template <class T>
KILN_INLINE bool nonzero(const T& x) {
  if constexpr (detail::is_complex_v<T>)
    return x.real() != 0 || x.imag() != 0;
  else
    return detail::convert<bool>(x);
}

template <class T, bool kAll, class Out>
struct AnyAllOp : StepLeaf<AnyAllOp<T, kAll, Out>, T, bool> {
  Out* out = nullptr;
  bool identity() const { return kAll; }
  KILN_INLINE bool step(bool a, T x, int64_t) const {
    return kAll ? (a && nonzero(x)) : (a || nonzero(x));
  }
  KILN_INLINE bool combine(bool a, bool b) const { return kAll ? (a && b) : (a || b); }
  void write(bool a, int64_t o, int64_t) const { out[o] = static_cast<Out>(a); }
};

}  // namespace kiln::cpu::red
