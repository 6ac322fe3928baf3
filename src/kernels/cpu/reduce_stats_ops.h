// Statistical reductions as engine Ops: var/std with the mean (two-pass leaves combined with
// Chan's formula), vector norms for every p, and logsumexp (max-shifted, two-pass leaves).
#pragma once

#include <cstring>

#include "kernels/cpu/reduce_ops.h"

namespace kiln::cpu::red {

// Adds f(x) over a run into K accumulators (vectorizable when the run is contiguous).
template <int K, class A, class T, class F>
KILN_INLINE void accum_run(A* acc, const T* p, int64_t s, int64_t n, const F& f) {
  int64_t i = 0;
  if (s == 1) {
    for (; i + K <= n; i += K)
      for (int k = 0; k < K; ++k) acc[k] += f(p[i + k]);
  } else {
    for (; i + K <= n; i += K)
      for (int k = 0; k < K; ++k) acc[k] += f(p[(i + k) * s]);
  }
  for (; i < n; ++i) acc[0] += f(p[i * s]);
}

template <int K, class A>
KILN_INLINE A fold_sum(A* acc) {
  for (int w = K / 2; w > 0; w /= 2)
    for (int k = 0; k < w; ++k) acc[k] += acc[k + w];
  return acc[0];
}

// ---- var / std and mean ----
// Each leaf is reduced in two passes (its mean, then the sum of squared deviations from it),
// which is stable for data with a large offset (1e8 + noise); leaves merge with Chan's update.

template <class V>
KILN_INLINE double abs2(const V& d) {
  if constexpr (detail::is_complex_v<V>)
    return d.real() * d.real() + d.imag() * d.imag();
  else
    return d * d;
}

template <class T>
struct WelfordOp {
  using In = T;
  using V = std::conditional_t<detail::is_complex_v<T>, complex<double>, double>;
  struct Acc {
    double n;
    V mean;
    double m2;
  };
  using Out0 = real_t<T>;
  static constexpr int64_t kLeaf = 512;
  static constexpr bool kOrdered = false;
  static constexpr int K = 8;
  Out0* var = nullptr;
  T* mean = nullptr;
  double correction = 1;
  bool take_sqrt = false;

  static KILN_INLINE V val(const T& x) { return detail::convert<V>(x); }

  template <class E>
  Acc leaf(const E& each) const {
    V s[K] = {};
    double n = 0;
    each([&](const T* p, int64_t st, int64_t cnt, int64_t) {
      n += static_cast<double>(cnt);
      accum_run<K>(s, p, st, cnt, [](const T& x) { return val(x); });
    });
    if (n == 0) return {0, V(0), 0};
    const V m = fold_sum<K>(s) / n;
    double q[K] = {};
    each([&](const T* p, int64_t st, int64_t cnt, int64_t) {
      accum_run<K>(q, p, st, cnt, [&](const T& x) { return abs2(val(x) - m); });
    });
    return {n, m, fold_sum<K>(q)};
  }

  template <class E>
  void leaf_lanes(const E& each, int64_t W, int64_t sw, Acc* acc) const {
    for (int64_t w = 0; w < W; ++w) acc[w] = {0, V(0), 0};
    double rows = 0;
    each([&](const T* p, int64_t s, int64_t n, int64_t) {
      rows += static_cast<double>(n);
      for (int64_t i = 0; i < n; ++i) {
        const T* r = p + i * s;
        for (int64_t w = 0; w < W; ++w) acc[w].mean += val(r[w * sw]);
      }
    });
    if (rows == 0) return;
    for (int64_t w = 0; w < W; ++w) {
      acc[w].n = rows;
      acc[w].mean = acc[w].mean / rows;
    }
    each([&](const T* p, int64_t s, int64_t n, int64_t) {
      for (int64_t i = 0; i < n; ++i) {
        const T* r = p + i * s;
        for (int64_t w = 0; w < W; ++w) acc[w].m2 += abs2(val(r[w * sw]) - acc[w].mean);
      }
    });
  }

  Acc combine(const Acc& a, const Acc& b) const {
    if (a.n == 0) return b;
    if (b.n == 0) return a;
    const double n = a.n + b.n;
    const V d = b.mean - a.mean;
    return {n, a.mean + d * (b.n / n), a.m2 + b.m2 + abs2(d) * (a.n * (b.n / n))};
  }

  void write(const Acc& a, int64_t o0, int64_t o1) const {
    // As PyTorch: the divisor is max(n - correction, 0), so 0/0 gives NaN and x/0 inf.
    const double div = a.n > correction ? a.n - correction : 0.0;
    double v = a.m2 / div;
    if (take_sqrt) v = std::sqrt(v);
    var[o0] = detail::convert<Out0>(v);
    // The mean of nothing is 0/0 (NaN, and NaN+NaNj for complex, as mean()).
    if (mean) mean[o1] = detail::convert<T>(a.n == 0 ? a.mean / 0.0 : a.mean);
  }
};

// ---- vector norms ----

enum class NormKind { Zero, One, Two, Inf, NegInf, General };

template <class T, NormKind Kind>
struct NormOp : StepLeaf<NormOp<T, Kind>, T, double> {
  using Out = real_t<T>;
  Out* out = nullptr;
  double p = 2;

  static KILN_INLINE double mag(const T& x) {
    if constexpr (detail::is_complex_v<T>)
      return std::hypot(static_cast<double>(x.real()), static_cast<double>(x.imag()));
    else
      return std::fabs(detail::convert<double>(x));
  }
  static KILN_INLINE double mag2(const T& x) {
    if constexpr (detail::is_complex_v<T>) {
      const double re = x.real(), im = x.imag();
      return re * re + im * im;
    } else {
      const double v = detail::convert<double>(x);
      return v * v;
    }
  }
  double identity() const {
    return Kind == NormKind::NegInf ? std::numeric_limits<double>::infinity() : 0.0;
  }
  KILN_INLINE double step(double a, T x, int64_t) const {
    if constexpr (Kind == NormKind::Zero) {
      return a + (nonzero(x) ? 1.0 : 0.0);
    } else if constexpr (Kind == NormKind::One) {
      return a + mag(x);
    } else if constexpr (Kind == NormKind::Two) {
      return a + mag2(x);
    } else if constexpr (Kind == NormKind::General) {
      return a + std::pow(mag(x), p);
    } else {
      const double v = mag(x);
      return better<double, Kind == NormKind::Inf>(v, a) ? v : a;
    }
  }
  KILN_INLINE double combine(double a, double b) const {
    if constexpr (Kind == NormKind::Inf || Kind == NormKind::NegInf)
      return better<double, Kind == NormKind::Inf>(b, a) ? b : a;
    else
      return a + b;
  }
  void write(double a, int64_t o, int64_t) const {
    if constexpr (Kind == NormKind::Two)
      a = std::sqrt(a);
    else if constexpr (Kind == NormKind::General)
      a = std::pow(a, 1.0 / p);
    out[o] = detail::convert<Out>(a);
  }
};

// ---- logsumexp ----

// e^x for x <= 0 (or -inf, or NaN), in float, written with integer masks only so that loops
// over it vectorize (the C library's expf is an opaque call per element, and under the default
// -ftrapping-math gcc does not if-convert float compares). x = n ln2 + r with |r| <= ln2/2;
// e^r by its Taylor series to r^7 (truncation error 6e-9); 2^n from the exponent bits. For
// x < -87 the result is 0 (e^-87 < 2^-125, negligible beside the term e^0 = 1 that every
// logsumexp leaf holds). Error about 1 ulp.
KILN_INLINE float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}
KILN_INLINE uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}
KILN_INLINE float exp_nonpositive(float x) {
  const float magic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const uint32_t u = float_bits(x);
  const uint32_t a = u & 0x7fffffffu;
  const uint32_t big = 0u - static_cast<uint32_t>(a > 0x42ae0000u);  // |x| > 87, inf or NaN
  const uint32_t nan = 0u - static_cast<uint32_t>(a > 0x7f800000u);
  const float xc = bits_float(u & ~big);
  const float t = xc * 1.44269504088896341f + magic;
  const float n = t - magic;
  const float r = (xc - n * 0.693145751953125f) - n * 1.42860682030941723e-6f;
  float q = 1.0f / 5040.0f;
  q = q * r + 1.0f / 720.0f;
  q = q * r + 1.0f / 120.0f;
  q = q * r + 1.0f / 24.0f;
  q = q * r + 1.0f / 6.0f;
  q = q * r + 0.5f;
  q = q * r + 1.0f;
  q = q * r + 1.0f;
  const uint32_t ni = float_bits(t) - 0x4b400000u;  // t = 1.5 * 2^23 + n: its low bits are n
  const float e = q * bits_float((ni + 127u) << 23);
  return bits_float((float_bits(e) & ~big) | (u & nan));
}

// exp(v - shift) for a leaf whose shift is its finite max (so v - shift <= 0): the fast form in
// float, std::exp in double.
template <class C>
KILN_INLINE C exp_shifted(C v, C shift) {
  if constexpr (std::is_same_v<C, float>)
    return exp_nonpositive(v - shift);
  else
    return std::exp(v - shift);
}

// A leaf finds its max m (NaN propagates), shifts by m when finite (else by 0, so +inf gives
// +inf and all -inf gives -inf), and sums exp(x - shift); (shift, s) pairs merge by rescaling.

template <class T>
struct LseOp {
  using In = T;
  using C = detail::opmath_t<T>;
  struct Acc {
    C m;  // the shift: finite
    C s;  // sum of exp(x - m)
  };
  static constexpr int64_t kLeaf = 512;
  static constexpr bool kOrdered = false;
  static constexpr int K = 8;
  T* out = nullptr;

  static KILN_INLINE C shift_of(C mx) { return std::isfinite(mx) ? mx : C(0); }
  static KILN_INLINE C rescale(C s, C d) { return std::isinf(s) ? s : s * std::exp(d); }

  // Pass 1: the leaf's max (vectorized, NaN on the side). Pass 2: exp(x - shift) of each run
  // into a buffer by a plain loop (which vectorizes when the fast exp applies), then summed with
  // independent accumulators.
  template <class E>
  Acc leaf(const E& each) const {
    C mx;
    bool nan = false, any = false;
    leaf_extreme<T, true>(each, mx, nan, any);
    if (!any) return {C(0), C(0)};
    if (nan) mx = std::numeric_limits<C>::quiet_NaN();
    const C sh = shift_of(mx);
    const bool nonpos = sh == mx;  // a finite max: every x - sh <= 0
    C s[K] = {};
    constexpr int64_t kBuf = 256;
    C buf[kBuf];
    each([&](const T* p, int64_t st, int64_t n, int64_t) {
      for (int64_t i0 = 0; i0 < n; i0 += kBuf) {
        const int64_t m = std::min(kBuf, n - i0);
        const T* q = p + i0 * st;
        if (nonpos && st == 1) {
          for (int64_t i = 0; i < m; ++i) buf[i] = exp_shifted(detail::convert<C>(q[i]), sh);
        } else if (nonpos) {
          for (int64_t i = 0; i < m; ++i) buf[i] = exp_shifted(detail::convert<C>(q[i * st]), sh);
        } else {
          for (int64_t i = 0; i < m; ++i) buf[i] = std::exp(detail::convert<C>(q[i * st]) - sh);
        }
        accum_run<K>(s, buf, 1, m, [](C v) { return v; });
      }
    });
    return {sh, fold_sum<K>(s)};
  }

  template <class E>
  void leaf_lanes(const E& each, int64_t W, int64_t sw, Acc* acc) const {
    for (int64_t w = 0; w < W; ++w) acc[w] = {-std::numeric_limits<C>::infinity(), C(0)};
    bool any = false;
    each([&](const T* p, int64_t s, int64_t n, int64_t) {
      any = any || n > 0;
      for (int64_t i = 0; i < n; ++i) {
        const T* r = p + i * s;
        for (int64_t w = 0; w < W; ++w) {
          const C v = detail::convert<C>(r[w * sw]);
          acc[w].m = better<C, true>(v, acc[w].m) ? v : acc[w].m;
        }
      }
    });
    bool nonpos = true;  // every lane's max is finite: the fast exp applies to all
    for (int64_t w = 0; w < W; ++w) {
      const C sh = any ? shift_of(acc[w].m) : C(0);
      nonpos = nonpos && sh == acc[w].m;
      acc[w].m = sh;
    }
    each([&](const T* p, int64_t s, int64_t n, int64_t) {
      for (int64_t i = 0; i < n; ++i) {
        const T* r = p + i * s;
        if (nonpos) {
          for (int64_t w = 0; w < W; ++w)
            acc[w].s += exp_shifted(detail::convert<C>(r[w * sw]), acc[w].m);
        } else {
          for (int64_t w = 0; w < W; ++w)
            acc[w].s += std::exp(detail::convert<C>(r[w * sw]) - acc[w].m);
        }
      }
    });
  }

  Acc combine(const Acc& a, const Acc& b) const {
    if (a.s == C(0)) return b;
    if (b.s == C(0)) return a;
    const C m = a.m > b.m ? a.m : b.m;
    return {m, rescale(a.s, a.m - m) + rescale(b.s, b.m - m)};
  }

  void write(const Acc& a, int64_t o, int64_t) const {
    out[o] = detail::convert<T>(std::log(a.s) + a.m);
  }
};

}  // namespace kiln::cpu::red
