// Per-element transforms from Philox words (src/kernels/philox.h) to distributions: uniform,
// normal (Box-Muller), exponential, geometric, bernoulli, integers, cauchy, log-normal.
// Host, nvcc/hipcc device code and NVRTC/hiprtc; no std headers under the run-time compilers.
#pragma once

#include "kernels/philox.h"
#include "kiln/macros.h"

#if !KILN_DEVICE_COMPILER
#include <cmath>
#endif

// Every function here is a pure function of the words an element owns (Note [Philox streams])
// and its parameters. Preconditions (finite parameters, a <= b, b - a finite, 0 <= p <= 1,
// lambda > 0, sigma > 0) are checked by the ops, not here. Results that are rounded to a
// narrower type afterwards (half, bfloat16) need their own bound handling in the op.

namespace kiln {

template <class T>
struct RngPair {
  T first, second;
};

// ---- small portable helpers ---------------------------------------------------------------

KILN_HD inline uint32_t rng_float_bits(float x) {
#if KILN_DEVICE_CODE
  return __float_as_uint(x);
#else
  return __builtin_bit_cast(uint32_t, x);
#endif
}
KILN_HD inline float rng_bits_float(uint32_t b) {
#if KILN_DEVICE_CODE
  return __uint_as_float(b);
#else
  return __builtin_bit_cast(float, b);
#endif
}
KILN_HD inline uint64_t rng_double_bits(double x) {
#if KILN_DEVICE_CODE
  return static_cast<uint64_t>(__double_as_longlong(x));
#else
  return __builtin_bit_cast(uint64_t, x);
#endif
}
KILN_HD inline double rng_bits_double(uint64_t b) {
#if KILN_DEVICE_CODE
  return __longlong_as_double(static_cast<long long>(b));
#else
  return __builtin_bit_cast(double, b);
#endif
}

// The largest value below x (x finite). Used to keep uniform(a, b) below b.
KILN_HD inline float rng_next_below(float x) {
  if (x == 0.0f) return -rng_bits_float(1u);  // -denorm_min
  const uint32_t b = rng_float_bits(x);
  return rng_bits_float(x > 0.0f ? b - 1u : b + 1u);
}
KILN_HD inline double rng_next_below(double x) {
  if (x == 0.0) return -rng_bits_double(1u);
  const uint64_t b = rng_double_bits(x);
  return rng_bits_double(x > 0.0 ? b - 1u : b + 1u);
}

// a * b + c rounded twice (never fused), so host and device agree bit for bit.
KILN_HD inline float rng_mul_add(float a, float b, float c) {
#if KILN_DEVICE_CODE
  return __fadd_rn(__fmul_rn(a, b), c);
#else
  return a * b + c;
#endif
}
KILN_HD inline double rng_mul_add(double a, double b, double c) {
#if KILN_DEVICE_CODE
  return __dadd_rn(__dmul_rn(a, b), c);
#else
  return a * b + c;
#endif
}

// High 64 bits of a * b.
KILN_HD inline uint64_t rng_mulhi64(uint64_t a, uint64_t b) {
#if KILN_DEVICE_CODE
  return static_cast<uint64_t>(
      __umul64hi(static_cast<unsigned long long>(a), static_cast<unsigned long long>(b)));
#else
  return static_cast<uint64_t>((static_cast<unsigned __int128>(a) * b) >> 64);
#endif
}

// Math shims: the device compilers provide the C names, the host uses <cmath>.
#if KILN_DEVICE_COMPILER
#define KILN_RNG_MATH1(name, fname, dname)                        \
  KILN_HD inline float rng_##name(float x) { return ::fname(x); } \
  KILN_HD inline double rng_##name(double x) { return ::dname(x); }
#else
#define KILN_RNG_MATH1(name, fname, dname)                           \
  KILN_HD inline float rng_##name(float x) { return std::dname(x); } \
  KILN_HD inline double rng_##name(double x) { return std::dname(x); }
#endif
KILN_RNG_MATH1(log, logf, log)
KILN_RNG_MATH1(log1p, log1pf, log1p)
KILN_RNG_MATH1(exp, expf, exp)
KILN_RNG_MATH1(sqrt, sqrtf, sqrt)
KILN_RNG_MATH1(sin, sinf, sin)
KILN_RNG_MATH1(cos, cosf, cos)
KILN_RNG_MATH1(tan, tanf, tan)
KILN_RNG_MATH1(ceil, ceilf, ceil)
#undef KILN_RNG_MATH1

// ---- uniform ------------------------------------------------------------------------------

// The 64-bit draw made of two words, lo first.
KILN_HD inline uint64_t rng_make_u64(uint32_t lo, uint32_t hi) {
  return static_cast<uint64_t>(lo) | (static_cast<uint64_t>(hi) << 32);
}

// [0, 1) from the top 24 bits: k * 2^-24, k in [0, 2^24).
KILN_HD inline float rng_uniform_float(uint32_t w) {
  return static_cast<float>(w >> 8) * 5.9604644775390625e-8f;
}
// (0, 1] from the top 24 bits: (k + 1) * 2^-24.
KILN_HD inline float rng_uniform_float_open0(uint32_t w) {
  return static_cast<float>((w >> 8) + 1u) * 5.9604644775390625e-8f;
}
// [0, 1) from the top 53 bits: k * 2^-53.
KILN_HD inline double rng_uniform_double(uint64_t x) {
  return static_cast<double>(x >> 11) * 1.1102230246251565404e-16;
}
// (0, 1] from the top 53 bits: (k + 1) * 2^-53.
KILN_HD inline double rng_uniform_double_open0(uint64_t x) {
  return static_cast<double>((x >> 11) + 1u) * 1.1102230246251565404e-16;
}

// Uniform on [a, b) from u in [0, 1) (PyTorch's uniform_: the result never equals b; for
// a == b it is a). a + u * (b - a) can round up to b; such results become the float below b.
KILN_HD inline float rng_uniform_real(float u, float a, float b) {
  const float x = rng_mul_add(u, b - a, a);
  if (x < b) return x;
  return a < b ? rng_next_below(b) : a;
}
KILN_HD inline double rng_uniform_real(double u, double a, double b) {
  const double x = rng_mul_add(u, b - a, a);
  if (x < b) return x;
  return a < b ? rng_next_below(b) : a;
}

// ---- normal (Box-Muller) ------------------------------------------------------------------

// Two independent standard normals from two words (k = 1). The radius uses (w0 + 1/2) * 2^-32
// in (0, 1] so log() is finite and the tails reach 6.8 sigma; the angle uses 24 bits.
KILN_HD inline RngPair<float> rng_normal_pair_float(uint32_t w0, uint32_t w1) {
  const float u1 = static_cast<float>(w0) * 2.3283064365386963e-10f + 1.1641532182693481e-10f;
  const float u2 = rng_uniform_float(w1);
  const float r = rng_sqrt(-2.0f * rng_log(u1));
  const float theta = 6.28318530717958647692f * u2;
  return {r * rng_cos(theta), r * rng_sin(theta)};
}
// Two independent standard normals from two 64-bit draws (k = 2); 53-bit uniforms.
KILN_HD inline RngPair<double> rng_normal_pair_double(uint64_t x0, uint64_t x1) {
  const double u1 = rng_uniform_double_open0(x0);
  const double u2 = rng_uniform_double(x1);
  const double r = rng_sqrt(-2.0 * rng_log(u1));
  const double theta = 6.28318530717958647692 * u2;
  return {r * rng_cos(theta), r * rng_sin(theta)};
}
// Element i's standard normal given its pair's draws: cosine branch for even i, sine for odd.
KILN_HD inline float rng_normal_float(uint32_t w0, uint32_t w1, uint64_t i) {
  const RngPair<float> z = rng_normal_pair_float(w0, w1);
  return (i & 1u) ? z.second : z.first;
}
KILN_HD inline double rng_normal_double(uint64_t x0, uint64_t x1, uint64_t i) {
  const RngPair<double> z = rng_normal_pair_double(x0, x1);
  return (i & 1u) ? z.second : z.first;
}

// ---- transforms of one uniform ------------------------------------------------------------

// Exponential(lambda): -log(1 - u) / lambda with u in [0, 1); 1 - u is exact, so the log is
// finite. u = 0 would give 0, which the distribution never takes: it maps to half the grid step
// (2^-25 for float, 2^-54 for double) instead, as PyTorch also avoids 0.
KILN_HD inline float rng_exponential_float(uint32_t w, float lambda) {
  const float u = rng_uniform_float(w);
  const float e = u == 0.0f ? 2.98023223876953125e-8f : -rng_log(1.0f - u);
  return e / lambda;
}
KILN_HD inline double rng_exponential_double(uint64_t x, double lambda) {
  const double u = rng_uniform_double(x);
  const double e = u == 0.0 ? 5.5511151231257827021e-17 : -rng_log(1.0 - u);
  return e / lambda;
}

// Geometric(p) on {1, 2, ...}: the number of Bernoulli(p) trials up to the first success,
// ceil(log(u) / log1p(-p)) with u in (0, 1], at least 1 (p = 1 gives 1).
KILN_HD inline float rng_geometric_float(uint32_t w, float p) {
  const float u = rng_uniform_float_open0(w);
  const float g = rng_ceil(rng_log(u) / rng_log1p(-p));
  return g < 1.0f ? 1.0f : g;
}
KILN_HD inline double rng_geometric_double(uint64_t x, double p) {
  const double u = rng_uniform_double_open0(x);
  const double g = rng_ceil(rng_log(u) / rng_log1p(-p));
  return g < 1.0 ? 1.0 : g;
}

// Bernoulli(p): u < p with u in [0, 1); p = 0 never, p = 1 always.
KILN_HD inline bool rng_bernoulli_float(uint32_t w, float p) { return rng_uniform_float(w) < p; }
KILN_HD inline bool rng_bernoulli_double(uint64_t x, double p) { return rng_uniform_double(x) < p; }

// Cauchy(median, sigma): median + sigma * tan(pi * (u - 1/2)) with u = (k + 1/2) * 2^-24 (float)
// or (k + 1/2) * 2^-53 (double), so pi * (u - 1/2) lies strictly inside (-pi/2, pi/2): results
// are finite and the two extreme words give values of opposite sign and equal size.
KILN_HD inline float rng_cauchy_float(uint32_t w, float median, float sigma) {
  const int m = static_cast<int>(w >> 8) - (1 << 23);  // exact in float, as is t
  const float t = static_cast<float>(m) * 5.9604644775390625e-8f + 2.98023223876953125e-8f;
  return median + sigma * rng_tan(3.14159265358979323846f * t);
}
KILN_HD inline double rng_cauchy_double(uint64_t x, double median, double sigma) {
  const int64_t m = static_cast<int64_t>(x >> 11) - (static_cast<int64_t>(1) << 52);
  const double t = static_cast<double>(m) * 1.1102230246251565404e-16 + 5.5511151231257827021e-17;
  return median + sigma * rng_tan(3.14159265358979323846 * t);
}

// Normal(mean, std) and LogNormal(mean, std) from a standard normal z.
KILN_HD inline float rng_normal(float z, float mean, float std) { return mean + std * z; }
KILN_HD inline double rng_normal(double z, double mean, double std) { return mean + std * z; }
KILN_HD inline float rng_log_normal(float z, float mean, float std) {
  return rng_exp(mean + std * z);
}
KILN_HD inline double rng_log_normal(double z, double mean, double std) {
  return rng_exp(mean + std * z);
}

// ---- integers -----------------------------------------------------------------------------

// Random integers in [low, low + range), range = high - low as an unsigned 64-bit number
// (range = 0 stands for 2^64, the full int64/uint64 range). Multiply-shift without rejection
// (a fixed number of words per element, so no retry loop breaks Note [Philox streams]):
// outcome v gets floor or ceil of 2^B / range of the 2^B inputs, so each probability is within
// a relative range / 2^B of 1 / range. With B = 64 for range <= 2^32 (one 64-bit draw, k = 2)
// and B = 128 above (k = 4), that is at most 2^-32, far below what any test can detect, unlike
// the modulo of a 32-bit draw.
KILN_HD constexpr uint32_t rng_int_words(uint64_t range) {
  return (range != 0u && range <= 0x100000000ull) ? 2u : 4u;
}
// range in [1, 2^32]; x is the element's 64-bit draw.
KILN_HD inline int64_t rng_random_from_to_64(uint64_t x, uint64_t range, int64_t low) {
  return static_cast<int64_t>(static_cast<uint64_t>(low) + rng_mulhi64(x, range));
}
// Any range (0 = 2^64); lo, hi are the element's 128-bit draw (the words of counter off + i).
// Returns low + floor((hi * 2^64 + lo) * range / 2^128).
KILN_HD inline int64_t rng_random_from_to_128(uint64_t lo, uint64_t hi, uint64_t range,
                                              int64_t low) {
  uint64_t v;
  if (range == 0u) {
    v = hi;
  } else {
    const uint64_t a_lo = hi * range;  // low half of hi * range
    const uint64_t a_hi = rng_mulhi64(hi, range);
    const uint64_t b_hi = rng_mulhi64(lo, range);
    const uint64_t mid = a_lo + b_hi;
    v = a_hi + (mid < a_lo ? 1u : 0u);
  }
  return static_cast<int64_t>(static_cast<uint64_t>(low) + v);
}

}  // namespace kiln
