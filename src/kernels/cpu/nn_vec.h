// 16-lane float vectors (GCC vector extensions) and a vectorized exp for the nn row kernels,
// compiled per ISA (AVX-512, AVX2+FMA, baseline) and picked at run time (Note [nn ISA dispatch]).
#pragma once

#include <cstdint>
#include <cstring>

#pragma GCC diagnostic ignored "-Wpsabi"

namespace kiln::cpu::nnvec {

// Note [nn ISA dispatch]: kiln builds for baseline x86-64, but the softmax/norm kernels are
// memory- and exp-bound, so their row loops are written once as always_inline templates over
// these vector types and instantiated inside three wrappers with target("avx512f..."),
// target("avx2,fma") and no attribute; select_isa() picks one with __builtin_cpu_supports.
typedef float VF __attribute__((vector_size(64)));
typedef int32_t VI __attribute__((vector_size(64)));
constexpr int kLanes = 16;

#define KILN_NN_INLINE inline __attribute__((always_inline))

KILN_NN_INLINE VF load(const float* p) {
  VF v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
KILN_NN_INLINE void store(float* p, VF v) { std::memcpy(p, &v, sizeof(v)); }
KILN_NN_INLINE VF splat(float x) { return VF{} + x; }
KILN_NN_INLINE VF vmax(VF a, VF b) { return a > b ? a : b; }
KILN_NN_INLINE float hsum(VF v) {
  // Pairwise, in a fixed order (results do not depend on the ISA picked).
  float s8[8], s4[4];
  for (int i = 0; i < 8; ++i) s8[i] = v[i] + v[i + 8];
  for (int i = 0; i < 4; ++i) s4[i] = s8[i] + s8[i + 4];
  return (s4[0] + s4[2]) + (s4[1] + s4[3]);
}
KILN_NN_INLINE float hmax(VF v) {
  float m = v[0];
  for (int i = 1; i < kLanes; ++i) m = v[i] > m ? v[i] : m;
  return m;
}

// exp(x) for float lanes: Cody-Waite range reduction x = n ln2 + r, a degree-6 polynomial for
// exp(r) on |r| <= ln2/2 (relative error about 2 ulp), scaled by 2^n through the exponent bits.
// exp(x) = 0 below -87.3 (the smallest normal's log; denormals are flushed), +inf above 88.7,
// NaN stays NaN.
KILN_NN_INLINE VF vexp(VF x) {
  const VF lo = splat(-87.33654f), hi = splat(88.72283f);
  const VF xc = x < lo ? lo : (x > hi ? hi : x);
  const VF t = xc * 1.44269504088896341f + 0.5f;
  VI ti = __builtin_convertvector(t, VI);
  VF n = __builtin_convertvector(ti, VF);
  n = n > t ? n - 1.0f : n;  // floor
  VF r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  VF p = splat(1.9875691500e-4f);
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  // 2^n in two halves so that n = 128 (x near the top) does not overflow the exponent field.
  const VI ni = __builtin_convertvector(n, VI);
  const VI h1 = ni >> 1, h2 = ni - (ni >> 1);
  VI b1 = (h1 + 127) << 23, b2 = (h2 + 127) << 23;
  VF s1, s2;
  std::memcpy(&s1, &b1, sizeof(s1));
  std::memcpy(&s2, &b2, sizeof(s2));
  VF y = p * s1 * s2;
  y = x < lo ? splat(0.0f) : y;
  y = x > hi ? splat(__builtin_inff()) : y;
  y = x != x ? x : y;
  return y;
}

enum class Isa { Avx512, Avx2, Base };
#if defined(__x86_64__) || defined(__i386__)
inline Isa select_isa() {
  static const Isa isa = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw"))
      return Isa::Avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::Avx2;
    return Isa::Base;
  }();
  return isa;
}
#define KILN_NN_TARGET_AVX512 __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw,avx2,fma")))
#define KILN_NN_TARGET_AVX2 __attribute__((target("avx2,fma")))
#else  // other architectures: the baseline build of the same loops
inline Isa select_isa() { return Isa::Base; }
#define KILN_NN_TARGET_AVX512
#define KILN_NN_TARGET_AVX2
#endif

}  // namespace kiln::cpu::nnvec
