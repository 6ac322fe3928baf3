// Tensor-core flash-attention forward and backward (dk, dv, atomic dq) for float16/bfloat16, head
// dim 64 and 128 (CUDA, sm_80+:
// mma.sync m16n8k16, ldmatrix, cp.async, inline PTX). Under HIP (and for other cases) the
// *_supported predicates say false and the portable kernels of flash_portable.cuh run instead.
#pragma once

#include <cstdlib>
#include <type_traits>

#include "backend/gpu/vendor.h"
#include "kernels/gpu/attention/flash_params.h"
#include "kernels/gpu/warp.cuh"
#include "kiln/half.h"

namespace kiln::gpu::flash {

using detail::FlashParams;

#if KILN_CUDA

// Note [Flash mma forward]: a block of kWarps warps (4 or 8, mma_forward_warps) owns 16 kWarps
// query rows (16 per warp) of one (batch, head) and walks the key tiles of 64 keys; K/V tiles
// stream through kStages shared-memory buffers by cp.async (two tiles load while one computes). S =
// Q K^T and O += P V run on mma.m16n8k16 with fp32 accumulators; P never leaves registers (the S
// accumulator fragment is exactly the A fragment of the P V product). Softmax runs in the log2
// domain (ex2.approx). Shared tiles are [64 rows][D / 8 chunks of 16 bytes], chunk c of row r
// stored at c ^ (r & 7), so the 8 rows an ldmatrix reads fall into 8 different bank groups.
constexpr int kMmaWarps = 8;
// mma.sync/ldmatrix are NVIDIA instructions over 32-lane warps: this path fixes the width.
constexpr int kLanes = 32;
constexpr int kMmaThreads = kMmaWarps * kLanes;
// Forward: 128 query rows per block, key tiles of 64. Backward: 128 keys per block, query tiles
// of 64. Each warp owns 16 rows (queries, resp. keys).
constexpr int kMmaBk = 64;
// Default warps per forward block by head dim (mma_forward_warps).
// Measured on an H200 (causal bf16, bench/run_attention_bench.sh): D 64, B16 H12 T1024: 4 warps
// 152.7 TFLOP/s, 8 warps 108.5; D 128, B4 H32 T4096: 4 warps 188.2, 8 warps 201.2.
constexpr int kFwdWarpsD64 = 4, kFwdWarpsD128 = 8;
constexpr int kBwdBk = 128, kBwdBq = 64;
// Streamed tiles (K/V in the forward, Q/dO in the backward) are kept kStages deep in flight.
constexpr int kStages = 3;

__device__ inline uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ inline void cp_async16(uint32_t dst, const void* src, bool valid) {
  const int n = valid ? 16 : 0;  // 0: zero-fill
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(n));
}
__device__ inline void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ inline void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::); }
// Waits until at most one committed group is still in flight.
__device__ inline void cp_async_wait_one() { asm volatile("cp.async.wait_group 1;\n" ::); }

__device__ inline void ldsm_x4(uint32_t addr, uint32_t& r0, uint32_t& r1, uint32_t& r2,
                               uint32_t& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}
__device__ inline void ldsm_x4_t(uint32_t addr, uint32_t& r0, uint32_t& r1, uint32_t& r2,
                                 uint32_t& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr));
}

template <bool kBf16>
__device__ inline void mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (kBf16) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// Two floats -> one register of two 16-bit values (lo in the low half).
template <bool kBf16>
__device__ inline uint32_t pack2(float lo, float hi) {
  uint32_t r;
  if constexpr (kBf16)
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  else
    asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

// Byte offset of 16-byte chunk c of row r in a swizzled tile with kChunks chunks per row.
template <int kChunks>
__device__ inline uint32_t swz(int r, int c) {
  return static_cast<uint32_t>((r * kChunks + (c ^ (r & 7))) * 16);
}

// Issues the cp.async copies of rows [r0, r0 + kRows) of a [len, D] matrix (row stride rs
// elements).
template <int kD, int kRows, int kThreads = kMmaThreads>
__device__ inline void load_tile_async(uint32_t s, const uint16_t* g, int64_t rs, int64_t r0,
                                       int64_t len) {
  constexpr int kChunks = kD / 8;
  for (int e = threadIdx.x; e < kRows * kChunks; e += kThreads) {
    const int r = e / kChunks, c = e % kChunks;
    const bool ok = r0 + r < len;
    cp_async16(s + swz<kChunks>(r, c), ok ? g + (r0 + r) * rs + c * 8 : g, ok);
  }
}

__device__ inline float mma_neg_inf() { return -__int_as_float(0x7f800000); }

// 2^x by the special-function unit (2^-inf = 0).
__device__ inline float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// a[0] += x, a[1] += y in global memory (a 8-byte aligned); one vector reduction on sm_90.
__device__ inline void red_add2(float* a, float x, float y) {
#if __CUDA_ARCH__ >= 900
  asm volatile("red.global.add.v2.f32 [%0], {%1, %2};\n" ::"l"(a), "f"(x), "f"(y) : "memory");
#else
  atomicAdd(a, x);
  atomicAdd(a + 1, y);
#endif
}

// Word index of element (b, h, i, j) in the dropout stream (Note [Flash attention dropout]).
__device__ inline uint64_t drop_index(const FlashParams& p, int b, int h, int64_t i, int64_t j) {
  return ((static_cast<uint64_t>(b) * static_cast<uint64_t>(p.hq) + static_cast<uint64_t>(h)) *
              static_cast<uint64_t>(p.tq) +
          static_cast<uint64_t>(i)) *
             static_cast<uint64_t>(p.tk) +
         static_cast<uint64_t>(j);
}
// flash_keep's rule out of line, so the unrolled tile loops stay small.
__device__ __noinline__ bool keep_element(uint64_t seed, uint64_t offset, uint64_t e, float pd) {
  const uint32_t w = philox_word(seed, offset, e);
  return static_cast<float>(w >> 8) * (1.0f / 16777216.0f) >= pd;
}

// Forward blocks of kWarps warps (16 query rows each); blocks resident per SM, as the launch
// bounds promise (registers are capped at 64K / (threads * blocks)).
template <int kD, int kWarps>
constexpr int fwd_min_blocks() {
  return kWarps == 8 ? 1 : (kD == 64 ? 3 : 2);
}

template <bool kBf16, int kD, int kWarps>
__global__ void __launch_bounds__(kWarps* kLanes, (fwd_min_blocks<kD, kWarps>()))
    mma_forward_kernel(FlashParams p) {
  constexpr int kChunks = kD / 8;
  constexpr int kThreads = kWarps * kLanes, kBq = kWarps * 16;
  constexpr int kTileBytes = 64 * kD * 2;
  extern __shared__ __align__(128) unsigned char smem[];
  const uint32_t sq = smem_addr(smem);
  // buffer i: K at skv + 2 i T, V at skv + (2 i + 1) T
  const uint32_t skv = sq + kBq * kD * 2;
  // Grid (heads, batch, query tiles): every head's heaviest (causal: last) query tile is
  // scheduled before any lighter one, so the last wave holds the short blocks.
  const int b = blockIdx.y, h = blockIdx.x;
  const int64_t lq = p.q_len(b), lk = p.k_len(b);
  const int64_t i0 = static_cast<int64_t>(gridDim.z - 1 - blockIdx.z) * kBq;
  if (i0 >= lq) return;
  const int hk = h / (p.hq / p.hk);
  const int warp = threadIdx.x / kLanes, lane = threadIdx.x % kLanes;
  const int g = lane >> 2, tq = lane & 3;
  const uint16_t* q = static_cast<const uint16_t*>(p.q) + p.q_row0(b) + h * p.q_sh;
  const uint16_t* k = static_cast<const uint16_t*>(p.k) + p.k_row0(b) + hk * p.k_sh;
  const uint16_t* v = static_cast<const uint16_t*>(p.v) + p.k_row0(b) + hk * p.k_sh;
  int64_t kend = lk;
  if (p.causal && i0 + kBq < kend) kend = i0 + kBq;
  const int ntiles = static_cast<int>((kend + kMmaBk - 1) / kMmaBk);

  // Groups: {Q, tile 0}, {tile 1}, then one per iteration (possibly empty).
  load_tile_async<kD, kBq, kThreads>(sq, q, p.q_sr, i0, lq);
  for (int t = 0; t < 2; ++t) {
    if (t < ntiles) {
      const uint32_t nb = skv + t * 2 * kTileBytes;
      load_tile_async<kD, kMmaBk, kThreads>(nb, k, p.k_sr, t * kMmaBk, lk);
      load_tile_async<kD, kMmaBk, kThreads>(nb + kTileBytes, v, p.k_sr, t * kMmaBk, lk);
    }
    cp_async_commit();
  }

  constexpr float kLog2e = 1.4426950408889634f;
  const float sl2 = p.scale * kLog2e;
  uint32_t qa[kD / 16][4];
  float o[kD / 8][4];
#pragma unroll
  for (int n = 0; n < kD / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float m0 = mma_neg_inf(), m1 = mma_neg_inf(), l0 = 0.0f, l1 = 0.0f;
  const int64_t row0 = i0 + warp * 16 + g, row1 = row0 + 8;
  const float* mask = static_cast<const float*>(p.mask);

  for (int t = 0; t < ntiles; ++t) {
    cp_async_wait_one();  // tile t has landed (t + 1 may still be in flight)
    __syncthreads();
    if (t == 0) {
#pragma unroll
      for (int kk = 0; kk < kD / 16; ++kk)
        ldsm_x4(sq + swz<kChunks>(warp * 16 + (lane & 15), kk * 2 + (lane >> 4)), qa[kk][0],
                qa[kk][1], qa[kk][2], qa[kk][3]);
    }
    if (t + 2 < ntiles) {  // into the buffer of tile t - 1, which every warp has finished
      const uint32_t nb = skv + ((t + 2) % kStages) * 2 * kTileBytes;
      load_tile_async<kD, kMmaBk, kThreads>(nb, k, p.k_sr, (t + 2) * kMmaBk, lk);
      load_tile_async<kD, kMmaBk, kThreads>(nb + kTileBytes, v, p.k_sr, (t + 2) * kMmaBk, lk);
    }
    cp_async_commit();
    const uint32_t sk = skv + (t % kStages) * 2 * kTileBytes, sv = sk + kTileBytes;
    const int64_t j0 = static_cast<int64_t>(t) * kMmaBk;
    // Causal: a tile whose keys all lie past this warp's last row changes nothing (every weight is
    // 0 and the running max stays), so the warp skips it exactly.
    if (p.causal && j0 > i0 + warp * 16 + 15) continue;

    float s[8][4];
#pragma unroll
    for (int n = 0; n < 8; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < kD / 16; ++kk) {
#pragma unroll
      for (int np = 0; np < 4; ++np) {
        const int mi = lane >> 3;
        uint32_t b0, b1, b2, b3;
        ldsm_x4(sk + swz<kChunks>(np * 16 + (mi >> 1) * 8 + (lane & 7), kk * 2 + (mi & 1)), b0, b1,
                b2, b3);
        mma16816<kBf16>(s[2 * np], qa[kk], b0, b1);
        mma16816<kBf16>(s[2 * np + 1], qa[kk], b2, b3);
      }
    }
    // Scale, mask, online softmax (log2 domain). Scalars per row (rows g and g + 8) keep the
    // running statistics in registers.
#pragma unroll
    for (int n = 0; n < 8; ++n)
#pragma unroll
      for (int r = 0; r < 4; ++r) s[n][r] *= sl2;
    if (j0 + kMmaBk > lk || (p.causal && j0 + kMmaBk - 1 > i0) || mask != nullptr) {
#pragma unroll
      for (int n = 0; n < 8; ++n)
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const int64_t j = j0 + n * 8 + 2 * tq + (r & 1), i = r < 2 ? row0 : row1;
          if (j >= lk || (p.causal && j > i))
            s[n][r] = mma_neg_inf();
          else if (mask && i < lq)
            s[n][r] += mask[p.mask_at(b, h, i, j)] * kLog2e;
        }
    }
    float mx0 = m0, mx1 = m1;
#pragma unroll
    for (int n = 0; n < 8; ++n) {
      mx0 = fmaxf(mx0, fmaxf(s[n][0], s[n][1]));
      mx1 = fmaxf(mx1, fmaxf(s[n][2], s[n][3]));
    }
    mx0 = fmaxf(mx0, warp_shfl_xor(mx0, 1));
    mx0 = fmaxf(mx0, warp_shfl_xor(mx0, 2));
    mx1 = fmaxf(mx1, warp_shfl_xor(mx1, 1));
    mx1 = fmaxf(mx1, warp_shfl_xor(mx1, 2));
    const float mu0 = mx0 == mma_neg_inf() ? 0.0f : mx0;
    const float mu1 = mx1 == mma_neg_inf() ? 0.0f : mx1;
    const float al0 = fast_exp2(m0 - mu0), al1 = fast_exp2(m1 - mu1);  // m = -inf: 0
    m0 = mx0;
    m1 = mx1;
    float rs0 = 0.0f, rs1 = 0.0f;
#pragma unroll
    for (int n = 0; n < 8; ++n) {
      s[n][0] = fast_exp2(s[n][0] - mu0);
      s[n][1] = fast_exp2(s[n][1] - mu0);
      s[n][2] = fast_exp2(s[n][2] - mu1);
      s[n][3] = fast_exp2(s[n][3] - mu1);
      rs0 += s[n][0] + s[n][1];
      rs1 += s[n][2] + s[n][3];
    }
    l0 = l0 * al0 + rs0;
    l1 = l1 * al1 + rs1;
    if (p.p_drop > 0.0f) {
#pragma unroll
      for (int n = 0; n < 8; ++n)
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const int64_t j = j0 + n * 8 + 2 * tq + (r & 1), i = r < 2 ? row0 : row1;
          const bool keep = i < lq && j < lk &&
                            keep_element(p.seed, p.offset, drop_index(p, b, h, i, j), p.p_drop);
          s[n][r] = keep ? s[n][r] * p.rp_drop : 0.0f;
        }
    }
#pragma unroll
    for (int n = 0; n < kD / 8; ++n) {
      o[n][0] *= al0;
      o[n][1] *= al0;
      o[n][2] *= al1;
      o[n][3] *= al1;
    }
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      const uint32_t a[4] = {pack2<kBf16>(s[2 * kk][0], s[2 * kk][1]),
                             pack2<kBf16>(s[2 * kk][2], s[2 * kk][3]),
                             pack2<kBf16>(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                             pack2<kBf16>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
      for (int np = 0; np < kD / 16; ++np) {
        const int mi = lane >> 3;
        uint32_t b0, b1, b2, b3;
        ldsm_x4_t(sv + swz<kChunks>(kk * 16 + (mi & 1) * 8 + (lane & 7), np * 2 + (mi >> 1)), b0,
                  b1, b2, b3);
        mma16816<kBf16>(o[2 * np], a, b0, b1);
        mma16816<kBf16>(o[2 * np + 1], a, b2, b3);
      }
    }
  }
  cp_async_wait_all();  // nothing may be in flight at exit (no key tiles: Q only)
  // Row sums across the quad, then out = o / l and lse = (m + log2 l) ln 2.
  l0 += warp_shfl_xor(l0, 1);
  l0 += warp_shfl_xor(l0, 2);
  l1 += warp_shfl_xor(l1, 1);
  l1 += warp_shfl_xor(l1, 2);
  uint16_t* out = static_cast<uint16_t*>(p.o) + p.q_row0(b) + h * p.q_sh;
  float* lse = static_cast<float*>(p.lse) + p.lse_row0(b, h);
  auto store_row = [&](int64_t row, float mm, float ll, int e) {
    if (row >= lq) return;
    const float inv = ll > 0.0f ? 1.0f / ll : 0.0f;
    uint16_t* orow = out + row * p.q_sr;
#pragma unroll
    for (int n = 0; n < kD / 8; ++n)
      *reinterpret_cast<uint32_t*>(orow + n * 8 + 2 * tq) =
          pack2<kBf16>(o[n][2 * e] * inv, o[n][2 * e + 1] * inv);
    if (tq == 0) lse[row] = ll > 0.0f ? (mm + log2f(ll)) * 0.6931471805599453f : mma_neg_inf();
  };
  store_row(row0, m0, l0, 0);
  store_row(row1, m1, l1, 1);
}

// The forward grid puts the query tile in grid z (at most 65535 tiles; longer calls go portable).
constexpr int64_t kMaxGridZ = 65535;

template <class T>
bool mma_forward_supported(const FlashParams& p) {
  return (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)&&(p.d == 64 || p.d == 128) &&
         (p.tq + 63) / 64 <= kMaxGridZ;
}

// Warps per forward block: KILN_FLASH_FWD_WARPS=4 or 8 (read once) overrides the default, for
// tuning runs (bench/run_attention_bench.sh) and so the tests can cover both shapes.
inline int mma_forward_warps(int d) {
  static const int forced = [] {
    const char* e = std::getenv("KILN_FLASH_FWD_WARPS");
    return e && (e[0] == '4' || e[0] == '8') && e[1] == 0 ? e[0] - '0' : 0;
  }();
  if (forced) return forced;
  return d == 64 ? kFwdWarpsD64 : kFwdWarpsD128;
}

template <bool kBf16, int kD, int kWarps>
void mma_forward_launch(const FlashParams& p, gpuStream_t stream) {
  constexpr int kBq = kWarps * 16;
  constexpr int kSmem = (kBq + 2 * kStages * 64) * kD * 2;  // Q, kStages K/V buffers
  static const bool attr_set = [] {
    return gpuFuncSetAttribute(
               reinterpret_cast<const void*>(&mma_forward_kernel<kBf16, kD, kWarps>),
               cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem) == gpuSuccess;
  }();
  (void)attr_set;
  const dim3 grid(static_cast<unsigned>(p.hq), static_cast<unsigned>(p.b),
                  static_cast<unsigned>((p.tq + kBq - 1) / kBq));
  mma_forward_kernel<kBf16, kD, kWarps><<<grid, kWarps * kLanes, kSmem, stream>>>(p);
}

template <class T>
void mma_forward(const FlashParams& p, gpuStream_t stream) {
  constexpr bool kBf16 = std::is_same_v<T, BFloat16>;
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    const int w = mma_forward_warps(p.d);
    if (p.d == 64) {
      if (w == 4)
        mma_forward_launch<kBf16, 64, 4>(p, stream);
      else
        mma_forward_launch<kBf16, 64, 8>(p, stream);
    } else {
      if (w == 4)
        mma_forward_launch<kBf16, 128, 4>(p, stream);
      else
        mma_forward_launch<kBf16, 128, 8>(p, stream);
    }
  }
}

// Note [Flash mma backward]: a block of 8 warps owns 128 keys of one (batch, query head), 16 per
// warp, and walks the query tiles of 64 rows (Q and grad_o streamed kStages deep by cp.async). Per
// tile each warp computes S^T = K Q^T and dP^T = V dO^T for its keys (m16n8k16, K and V read from
// shared memory), P^T = exp2(S^T - lse) and dS^T = P^T (Z dP^T - delta), then dV += (Z P)^T dO and
// dK += dS^T Q from registers. dS^T goes to shared memory, and each warp adds its 16 rows of
// dQ = dS K into the float accumulator with atomics, 16 head dims at a time.
template <bool kBf16, int kD>
__global__ void __launch_bounds__(kMmaThreads) mma_backward_kv_kernel(FlashParams p) {
  constexpr int kChunks = kD / 8;
  constexpr int kTileBytes = kBwdBq * kD * 2;  // a Q or dO tile
  constexpr int kKvBytes = kBwdBk * kD * 2;    // the K or V tile
  extern __shared__ __align__(128) unsigned char smem[];
  const uint32_t sk = smem_addr(smem), sv = sk + kKvBytes;
  const uint32_t sqd = sv + kKvBytes;  // buffer i: Q at sqd + 2 i T, dO at sqd + (2 i + 1) T
  const uint32_t sds = sqd + 2 * kStages * kTileBytes;  // dS^T [128 keys][64 queries], 16-bit
  // Grid (key tiles, heads, batch): the blocks of one head run side by side and share its Q and
  // dO in L2 (ordering all heads' heavy causal tiles first measured slower: 2 MB per head at T
  // 4096, D 128 overflow L2); within a head the heavy (causal: first) tiles go first.
  const int b = blockIdx.z, h = blockIdx.y;
  const int64_t lq = p.q_len(b), lk = p.k_len(b);
  const int64_t j0 = static_cast<int64_t>(blockIdx.x) * kBwdBk;
  if (j0 >= lk) return;
  const int hk = h / (p.hq / p.hk);
  const int warp = threadIdx.x / kLanes, lane = threadIdx.x % kLanes;
  const int g = lane >> 2, tq = lane & 3, mi = lane >> 3;
  const int64_t qoff = p.q_row0(b) + h * p.q_sh;
  const uint16_t* q = static_cast<const uint16_t*>(p.q) + qoff;
  const uint16_t* go = static_cast<const uint16_t*>(p.dout) + qoff;
  const uint16_t* k = static_cast<const uint16_t*>(p.k) + p.k_row0(b) + hk * p.k_sh;
  const uint16_t* v = static_cast<const uint16_t*>(p.v) + p.k_row0(b) + hk * p.k_sh;
  const float* lse = static_cast<const float*>(p.lse) + p.lse_row0(b, h);
  const float* delta = p.delta + p.lse_row0(b, h);
  const float* mask = static_cast<const float*>(p.mask);
  const int64_t istart = p.causal ? j0 : 0;  // causal: earlier queries see none of these keys
  const int ntiles = istart < lq ? static_cast<int>((lq - istart + kBwdBq - 1) / kBwdBq) : 0;

  // Groups: {K, V, tile 0}, {tile 1}, then one per iteration (possibly empty).
  load_tile_async<kD, kBwdBk>(sk, k, p.k_sr, j0, lk);
  load_tile_async<kD, kBwdBk>(sv, v, p.k_sr, j0, lk);
  for (int t = 0; t < 2; ++t) {
    if (t < ntiles) {
      const uint32_t nb = sqd + t * 2 * kTileBytes;
      load_tile_async<kD, kBwdBq>(nb, q, p.q_sr, istart + t * kBwdBq, lq);
      load_tile_async<kD, kBwdBq>(nb + kTileBytes, go, p.q_sr, istart + t * kBwdBq, lq);
    }
    cp_async_commit();
  }

  constexpr float kLog2e = 1.4426950408889634f;
  const float sl2 = p.scale * kLog2e;
  float dk[kD / 8][4], dv[kD / 8][4];
#pragma unroll
  for (int n = 0; n < kD / 8; ++n)
#pragma unroll
    for (int r = 0; r < 4; ++r) dk[n][r] = dv[n][r] = 0.0f;
  const int64_t key[2] = {j0 + warp * 16 + g, j0 + warp * 16 + g + 8};

  for (int t = 0; t < ntiles; ++t) {
    cp_async_wait_one();  // tile t has landed
    __syncthreads();
    if (t + 2 < ntiles) {  // into the buffer of tile t - 1, which every warp has finished
      const uint32_t nb = sqd + ((t + 2) % kStages) * 2 * kTileBytes;
      load_tile_async<kD, kBwdBq>(nb, q, p.q_sr, istart + (t + 2) * kBwdBq, lq);
      load_tile_async<kD, kBwdBq>(nb + kTileBytes, go, p.q_sr, istart + (t + 2) * kBwdBq, lq);
    }
    cp_async_commit();
    const uint32_t sq = sqd + (t % kStages) * 2 * kTileBytes, sdo = sq + kTileBytes;
    const int64_t i0 = istart + static_cast<int64_t>(t) * kBwdBq;
    // Causal: when every query of the tile precedes this warp's keys, P^T and dS^T are 0: the warp
    // skips its products (its dS^T rows, all 0, still go to shared memory for dQ).
    const bool wskip = p.causal && i0 + kBwdBq - 1 < j0 + warp * 16;

    float st[8][4], dp[8][4];
#pragma unroll
    for (int n = 0; n < 8; ++n)
#pragma unroll
      for (int r = 0; r < 4; ++r) st[n][r] = dp[n][r] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < kD / 16; ++kk) {
      if (wskip) break;
      uint32_t ka[4], va[4];
      ldsm_x4(sk + swz<kChunks>(warp * 16 + (lane & 15), kk * 2 + (lane >> 4)), ka[0], ka[1], ka[2],
              ka[3]);
      ldsm_x4(sv + swz<kChunks>(warp * 16 + (lane & 15), kk * 2 + (lane >> 4)), va[0], va[1], va[2],
              va[3]);
#pragma unroll
      for (int np = 0; np < 4; ++np) {
        const int rr = np * 16 + (mi >> 1) * 8 + (lane & 7), cc = kk * 2 + (mi & 1);
        uint32_t b0, b1, b2, b3;
        ldsm_x4(sq + swz<kChunks>(rr, cc), b0, b1, b2, b3);
        mma16816<kBf16>(st[2 * np], ka, b0, b1);
        mma16816<kBf16>(st[2 * np + 1], ka, b2, b3);
        ldsm_x4(sdo + swz<kChunks>(rr, cc), b0, b1, b2, b3);
        mma16816<kBf16>(dp[2 * np], va, b0, b1);
        mma16816<kBf16>(dp[2 * np + 1], va, b2, b3);
      }
    }
    // P^T, Z P^T (into st) and dS^T (into dp).
    const bool edge = i0 + kBwdBq > lq || j0 + kBwdBk > lk || (p.causal && i0 < j0 + kBwdBk - 1) ||
                      mask != nullptr;
#pragma unroll
    for (int n = 0; n < 8; ++n) {
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const int64_t i = i0 + n * 8 + 2 * tq + c;
        const bool iok = i < lq;
        const float l2 = iok ? lse[i] * kLog2e : 0.0f;
        const float dl = iok ? delta[i] : 0.0f;
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int r = 2 * e + c;
          const int64_t j = key[e];
          float x = st[n][r] * sl2;
          bool ok = true;
          if (edge) {
            ok = iok && j < lk && !(p.causal && j > i);
            if (ok && mask) x += mask[p.mask_at(b, h, i, j)] * kLog2e;
          }
          const float pr = (ok && l2 != mma_neg_inf()) ? fast_exp2(x - l2) : 0.0f;
          float z = 1.0f;
          if (p.p_drop > 0.0f)
            z = (ok && keep_element(p.seed, p.offset, drop_index(p, b, h, i, j), p.p_drop))
                    ? p.rp_drop
                    : 0.0f;
          dp[n][r] = pr * (dp[n][r] * z - dl);
          st[n][r] = pr * z;
        }
      }
    }
    // dV += (Z P)^T dO, dK += dS^T Q (k = the 64 queries of the tile).
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      const uint32_t pa[4] = {pack2<kBf16>(st[2 * kk][0], st[2 * kk][1]),
                              pack2<kBf16>(st[2 * kk][2], st[2 * kk][3]),
                              pack2<kBf16>(st[2 * kk + 1][0], st[2 * kk + 1][1]),
                              pack2<kBf16>(st[2 * kk + 1][2], st[2 * kk + 1][3])};
      const uint32_t da[4] = {pack2<kBf16>(dp[2 * kk][0], dp[2 * kk][1]),
                              pack2<kBf16>(dp[2 * kk][2], dp[2 * kk][3]),
                              pack2<kBf16>(dp[2 * kk + 1][0], dp[2 * kk + 1][1]),
                              pack2<kBf16>(dp[2 * kk + 1][2], dp[2 * kk + 1][3])};
#pragma unroll
      for (int np = 0; np < kD / 16; ++np) {
        if (wskip) break;
        const int rr = kk * 16 + (mi & 1) * 8 + (lane & 7), cc = np * 2 + (mi >> 1);
        uint32_t b0, b1, b2, b3;
        ldsm_x4_t(sdo + swz<kChunks>(rr, cc), b0, b1, b2, b3);
        mma16816<kBf16>(dv[2 * np], pa, b0, b1);
        mma16816<kBf16>(dv[2 * np + 1], pa, b2, b3);
        ldsm_x4_t(sq + swz<kChunks>(rr, cc), b0, b1, b2, b3);
        mma16816<kBf16>(dk[2 * np], da, b0, b1);
        mma16816<kBf16>(dk[2 * np + 1], da, b2, b3);
      }
      // dS^T rows of this warp, columns kk * 16 .. + 16, to shared memory.
      const int r0 = warp * 16 + g;
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(sds + swz<8>(r0, 2 * kk) + 4 * tq),
                   "r"(da[0]));
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(sds + swz<8>(r0 + 8, 2 * kk) + 4 * tq),
                   "r"(da[1]));
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(sds + swz<8>(r0, 2 * kk + 1) + 4 * tq),
                   "r"(da[2]));
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(sds + swz<8>(r0 + 8, 2 * kk + 1) + 4 * tq),
                   "r"(da[3]));
    }
    if (p.dq_acc) {
      __syncthreads();
      // dQ rows i0 + (warp % 4) * 16 .. + 16 += dS K (k = the 128 keys); warps 0-3 take the first
      // half of the head dims, warps 4-7 the second, 16 dims at a time.
      float* dq = p.dq_acc + qoff;
      const int qr = (warp & 3) * 16, half = warp >> 2;
#pragma unroll
      for (int hp = 0; hp < kD / 32; ++hp) {
        const int np = half * (kD / 32) + hp;
        float acc[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
#pragma unroll
        for (int kk = 0; kk < kBwdBk / 16; ++kk) {
          uint32_t a[4];
          ldsm_x4_t(sds + swz<8>(kk * 16 + (mi >> 1) * 8 + (lane & 7), qr / 8 + (mi & 1)), a[0],
                    a[1], a[2], a[3]);
          uint32_t b0, b1, b2, b3;
          ldsm_x4_t(sk + swz<kChunks>(kk * 16 + (mi & 1) * 8 + (lane & 7), np * 2 + (mi >> 1)), b0,
                    b1, b2, b3);
          mma16816<kBf16>(acc[0], a, b0, b1);
          mma16816<kBf16>(acc[1], a, b2, b3);
        }
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int64_t i = i0 + qr + g + 8 * e;
          if (i >= lq) continue;
          float* row = dq + i * p.q_sr + np * 16 + 2 * tq;
          red_add2(row, acc[0][2 * e] * p.scale, acc[0][2 * e + 1] * p.scale);
          red_add2(row + 8, acc[1][2 * e] * p.scale, acc[1][2 * e + 1] * p.scale);
        }
      }
    }
  }
  cp_async_wait_all();  // nothing may be in flight at exit
  const int hw = p.dkv_f32 ? h : hk;
#pragma unroll
  for (int e = 0; e < 2; ++e) {
    if (key[e] >= lk) continue;
    const int64_t off = p.dk_row0(b) + hw * p.dk_sh + key[e] * p.dk_sr;
#pragma unroll
    for (int n = 0; n < kD / 8; ++n) {
      const int d = n * 8 + 2 * tq;
      const float k0 = dk[n][2 * e] * p.scale, k1 = dk[n][2 * e + 1] * p.scale;
      const float v0 = dv[n][2 * e], v1 = dv[n][2 * e + 1];
      if (p.dkv_f32) {
        float* fk = static_cast<float*>(p.dk) + off + d;
        float* fv = static_cast<float*>(p.dv) + off + d;
        fk[0] = k0;
        fk[1] = k1;
        fv[0] = v0;
        fv[1] = v1;
      } else {
        *reinterpret_cast<uint32_t*>(static_cast<uint16_t*>(p.dk) + off + d) = pack2<kBf16>(k0, k1);
        *reinterpret_cast<uint32_t*>(static_cast<uint16_t*>(p.dv) + off + d) = pack2<kBf16>(v0, v1);
      }
    }
  }
}

template <class T>
bool mma_backward_supported(const FlashParams& p) {
  return mma_forward_supported<T>(p);
}

template <bool kBf16, int kD>
void mma_backward_launch(const FlashParams& p, gpuStream_t stream) {
  constexpr int kSmem =
      2 * kBwdBk * kD * 2 + 2 * kStages * kBwdBq * kD * 2 + kBwdBk * kBwdBq * 2;  // K, V,
  // kStages Q/dO buffers, dS^T
  static const bool attr_set = [] {
    return gpuFuncSetAttribute(reinterpret_cast<const void*>(&mma_backward_kv_kernel<kBf16, kD>),
                               cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem) == gpuSuccess;
  }();
  (void)attr_set;
  const dim3 grid(static_cast<unsigned>((p.tk + kBwdBk - 1) / kBwdBk), static_cast<unsigned>(p.hq),
                  static_cast<unsigned>(p.b));
  mma_backward_kv_kernel<kBf16, kD><<<grid, kMmaThreads, kSmem, stream>>>(p);
}

// dk, dv (and dq into p.dq_acc when it is set) by the tensor-core kernel.
template <class T>
void mma_backward_kv(const FlashParams& p, gpuStream_t stream) {
  constexpr bool kBf16 = std::is_same_v<T, BFloat16>;
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    if (p.d == 64)
      mma_backward_launch<kBf16, 64>(p, stream);
    else
      mma_backward_launch<kBf16, 128>(p, stream);
  }
}

#else  // portable build (HIP): no tensor-core kernels here

template <class T>
bool mma_forward_supported(const FlashParams&) {
  return false;
}
template <class T>
void mma_forward(const FlashParams&, gpuStream_t) {}
template <class T>
bool mma_backward_supported(const FlashParams&) {
  return false;
}
template <class T>
void mma_backward_kv(const FlashParams&, gpuStream_t) {}

#endif

}  // namespace kiln::gpu::flash
