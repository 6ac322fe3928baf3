// Tensor-core flash-attention forward for float16/bfloat16, head dim 64 and 128, and the helpers
// the backward (flash_mma_bwd.cuh) shares (CUDA, sm_80+:
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

// Note [Flash mma forward]: a block of kWarps warps (4 or 8, mma_forward_warps) owns 16 kM kWarps
// query rows (16 kM per warp, kM = 1 or 2: mma_forward_m) of one (batch, head) and walks the key
// tiles of 64 keys; every K/V fragment loaded from shared memory feeds the warp's kM m16 tiles; K/V
// tiles stream through kStages shared-memory buffers by cp.async (two tiles load while one
// computes). S = Q K^T and O += P V run on mma.m16n8k16 with fp32 accumulators; P never leaves
// registers (the S accumulator fragment is exactly the A fragment of the P V product). Softmax runs
// in the log2 domain (ex2.approx). Shared tiles are [64 rows][D / 8 chunks of 16 bytes], chunk c of
// row r stored at c ^ (r & 7), so the 8 rows an ldmatrix reads fall into 8 different bank groups.
// Profile at B16 H12 T1024 D64 (4 warps x 2 tiles, 238 registers, 2 blocks per SM) on an H200
// (ncu): 118 us, issue slots 46% busy, tensor pipe 38%; the top stall is fixed-latency dependency
// (8 warps per SM cannot hide the MMA -> softmax -> MMA chain). Next: overlap the softmax of one
// key tile with the MMAs of the next (FlashAttention-3 style), or wgmma on Hopper.
constexpr int kMmaWarps = 8;
// mma.sync/ldmatrix are NVIDIA instructions over 32-lane warps: this path fixes the width.
constexpr int kLanes = 32;
constexpr int kMmaThreads = kMmaWarps * kLanes;
// Forward key tiles of 64 (the backward's shapes: flash_mma_bwd.cuh).
constexpr int kMmaBk = 64;
// Default warps per forward block by head dim (mma_forward_warps), and m16 tiles per warp for plain
// (no mask, no dropout) calls at head dim 64 (mma_forward_m). Measured on an H200 (causal bf16
// forward, bench/run_attention_bench.sh, TFLOP/s): D 64, B16 H12 T1024: 4 warps x 2 tiles 225.1,
// 4 x 1 209.9 (8 x 1 was 108.5 before the plain kernels); D 128, B4 H32 T4096: 4 warps 272.2,
// 8 warps 271.3.
constexpr int kFwdWarpsD64 = 4, kFwdWarpsD128 = 8;
constexpr int kFwdMD64 = 2;
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

// swz<kChunks>(R + rl, C + cl) for R % 8 == 0, C even and lane part lo = swz<kChunks>(rl, cl): the
// row's low 3 bits come from rl alone and C only flips the chunk bits above cl, so each thread
// computes lo once and every ldmatrix address is one XOR and an add of constants.
template <int kChunks>
__device__ inline uint32_t swz_at(uint32_t lo, int r, int c) {
  return static_cast<uint32_t>(r * kChunks * 16) + (lo ^ static_cast<uint32_t>(c * 16));
}

// Issues the cp.async copies of rows [r0, r0 + kRows) of a [len, D] matrix (row stride rs
// elements); rows past len are zero-filled. When the threads tile the copy evenly (every shape
// the kernels use) each thread owns one chunk column and rows kThreads / kChunks apart, a
// multiple of 8, so its swizzled offsets are one constant apart.
template <int kD, int kRows, int kThreads = kMmaThreads>
__device__ inline void load_tile_async(uint32_t s, const uint16_t* g, int64_t rs, int64_t r0,
                                       int64_t len) {
  constexpr int kChunks = kD / 8;
  if constexpr ((kRows * kChunks) % kThreads == 0 && (kThreads / kChunks) % 8 == 0) {
    constexpr int kIters = kRows * kChunks / kThreads, kStep = kThreads / kChunks;
    const int r = static_cast<int>(threadIdx.x) / kChunks,
              c = static_cast<int>(threadIdx.x) % kChunks;
    const int64_t left = len - r0 - r;  // rows of this thread's column that exist
    const uint16_t* src = g + (r0 + r) * rs + c * 8;
    const uint32_t dst = s + swz<kChunks>(r, c);
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
      const bool ok = it * kStep < left;
      cp_async16(dst + it * kStep * kChunks * 16, ok ? src + it * kStep * rs : g, ok);
    }
  } else {
    for (int e = threadIdx.x; e < kRows * kChunks; e += kThreads) {
      const int r = e / kChunks, c = e % kChunks;
      const bool ok = r0 + r < len;
      cp_async16(s + swz<kChunks>(r, c), ok ? g + (r0 + r) * rs + c * 8 : g, ok);
    }
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

// Forward blocks of kWarps warps, 16 kM query rows each (kM m16 tiles share every K/V fragment
// load); blocks resident per SM, as the launch bounds promise (registers are capped at
// 64K / (threads * blocks)). kGen compiles the additive mask and dropout in; the plain
// instantiation (the common case) masks only the causal diagonal and the key tail, with block-local
// 32-bit indices.
template <int kD, int kWarps, int kM>
constexpr int fwd_min_blocks() {
  return kWarps == 8 || kM == 2 ? (kWarps == 8 ? 1 : 2) : (kD == 64 ? 3 : 2);
}

template <bool kBf16, int kD, int kWarps, bool kGen, int kM>
__global__ void __launch_bounds__(kWarps* kLanes, (fwd_min_blocks<kD, kWarps, kM>()))
    mma_forward_kernel(FlashParams p) {
  constexpr int kChunks = kD / 8;
  constexpr int kThreads = kWarps * kLanes, kWr = 16 * kM, kBq = kWarps * kWr;
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
  const int g = lane >> 2, tq = lane & 3, mi = lane >> 3;
  const uint16_t* q = static_cast<const uint16_t*>(p.q) + p.q_row0(b) + h * p.q_sh;
  const uint16_t* k = static_cast<const uint16_t*>(p.k) + p.k_row0(b) + hk * p.k_sh;
  const uint16_t* v = static_cast<const uint16_t*>(p.v) + p.v_row0(b) + hk * p.v_sh;
  int64_t kend = lk;
  if (p.causal && i0 + kBq < kend) kend = i0 + kBq;
  const int ntiles = static_cast<int>((kend + kMmaBk - 1) / kMmaBk);

  // Groups: {Q, tile 0}, {tile 1}, then one per iteration (possibly empty).
  load_tile_async<kD, kBq, kThreads>(sq, q, p.q_sr, i0, lq);
  for (int t = 0; t < 2; ++t) {
    if (t < ntiles) {
      const uint32_t nb = skv + t * 2 * kTileBytes;
      load_tile_async<kD, kMmaBk, kThreads>(nb, k, p.k_sr, t * kMmaBk, lk);
      load_tile_async<kD, kMmaBk, kThreads>(nb + kTileBytes, v, p.v_sr, t * kMmaBk, lk);
    }
    cp_async_commit();
  }

  constexpr float kLog2e = 1.4426950408889634f;
  const float sl2 = p.scale * kLog2e;
  uint32_t qa[kM][kD / 16][4];
  float o[kM][kD / 8][4];
  float mrow[kM][2], lrow[kM][2];  // running max (log2 domain) and sum of rows g, g + 8
#pragma unroll
  for (int mt = 0; mt < kM; ++mt) {
#pragma unroll
    for (int n = 0; n < kD / 8; ++n) o[mt][n][0] = o[mt][n][1] = o[mt][n][2] = o[mt][n][3] = 0.0f;
    mrow[mt][0] = mrow[mt][1] = mma_neg_inf();
    lrow[mt][0] = lrow[mt][1] = 0.0f;
  }
  // The warp's first row: (mt, e) owns wrow + mt 16 + g + 8 e.
  // Lane parts of the ldmatrix addresses (swz_at): A operand rows, B operand rows, B transposed.
  const uint32_t lo_a = swz<kChunks>(lane & 15, lane >> 4);
  const uint32_t lo_b = swz<kChunks>((mi >> 1) * 8 + (lane & 7), mi & 1);
  const uint32_t lo_t = swz<kChunks>((mi & 1) * 8 + (lane & 7), mi >> 1);
  const int64_t wrow = i0 + warp * kWr;
  const float* mask = kGen ? static_cast<const float*>(p.mask) : nullptr;

  for (int t = 0; t < ntiles; ++t) {
    cp_async_wait_one();  // tile t has landed (t + 1 may still be in flight)
    __syncthreads();
    if (t == 0) {
#pragma unroll
      for (int mt = 0; mt < kM; ++mt)
#pragma unroll
        for (int kk = 0; kk < kD / 16; ++kk)
          ldsm_x4(sq + swz_at<kChunks>(lo_a, warp * kWr + mt * 16, kk * 2), qa[mt][kk][0],
                  qa[mt][kk][1], qa[mt][kk][2], qa[mt][kk][3]);
    }
    if (t + 2 < ntiles) {  // into the buffer of tile t - 1, which every warp has finished
      const uint32_t nb = skv + ((t + 2) % kStages) * 2 * kTileBytes;
      load_tile_async<kD, kMmaBk, kThreads>(nb, k, p.k_sr, (t + 2) * kMmaBk, lk);
      load_tile_async<kD, kMmaBk, kThreads>(nb + kTileBytes, v, p.v_sr, (t + 2) * kMmaBk, lk);
    }
    cp_async_commit();
    const uint32_t sk = skv + (t % kStages) * 2 * kTileBytes, sv = sk + kTileBytes;
    const int64_t j0 = static_cast<int64_t>(t) * kMmaBk;
    // Causal: a tile whose keys all lie past this warp's last row changes nothing (every weight is
    // 0 and the running max stays), so the warp skips it exactly.
    if (p.causal && j0 > wrow + kWr - 1) continue;

    float s[kM][8][4];
#pragma unroll
    for (int mt = 0; mt < kM; ++mt)
#pragma unroll
      for (int n = 0; n < 8; ++n) s[mt][n][0] = s[mt][n][1] = s[mt][n][2] = s[mt][n][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < kD / 16; ++kk) {
#pragma unroll
      for (int np = 0; np < 4; ++np) {
        uint32_t b0, b1, b2, b3;
        ldsm_x4(sk + swz_at<kChunks>(lo_b, np * 16, kk * 2), b0, b1, b2, b3);
#pragma unroll
        for (int mt = 0; mt < kM; ++mt) {
          mma16816<kBf16>(s[mt][2 * np], qa[mt][kk], b0, b1);
          mma16816<kBf16>(s[mt][2 * np + 1], qa[mt][kk], b2, b3);
        }
      }
    }
    // Scale, mask, online softmax (log2 domain). Fragment element r of s[mt][n] is row
    // wrow + mt 16 + g + 8 (r >> 1), key j0 + n 8 + 2 tq + (r & 1).
    // kGen scales first (the mask adds in the log2 domain); the plain kernel (scale > 0) keeps raw
    // scores and folds the scale into the exponent's FFMA: max(s) sl2 = max(s sl2).
    if constexpr (kGen) {
#pragma unroll
      for (int mt = 0; mt < kM; ++mt)
#pragma unroll
        for (int n = 0; n < 8; ++n)
#pragma unroll
          for (int r = 0; r < 4; ++r) s[mt][n][r] *= sl2;
    }
    if (j0 + kMmaBk > lk || (p.causal && j0 + kMmaBk - 1 > wrow) || mask != nullptr) {
      // Block-local: key jl of the tile is seen by row il (both relative to j0) iff jl < klim and
      // (not causal or jl <= il).
      const int klim = lk - j0 < kMmaBk ? static_cast<int>(lk - j0) : kMmaBk;
      const int il0 = static_cast<int>(wrow - j0) + g;
#pragma unroll
      for (int mt = 0; mt < kM; ++mt)
#pragma unroll
        for (int n = 0; n < 8; ++n)
#pragma unroll
          for (int r = 0; r < 4; ++r) {
            const int jl = n * 8 + 2 * tq + (r & 1), il = il0 + mt * 16 + (r < 2 ? 0 : 8);
            if (jl >= klim || (p.causal && jl > il)) {
              s[mt][n][r] = mma_neg_inf();
            } else if constexpr (kGen) {
              const int64_t i = j0 + il;
              if (mask && i < lq) s[mt][n][r] += mask[p.mask_at(b, h, i, j0 + jl)] * kLog2e;
            }
          }
    }
    float al[kM][2];
#pragma unroll
    for (int mt = 0; mt < kM; ++mt) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float mx = mma_neg_inf();
#pragma unroll
        for (int n = 0; n < 8; ++n) mx = fmaxf(mx, fmaxf(s[mt][n][2 * e], s[mt][n][2 * e + 1]));
        mx = fmaxf(mx, warp_shfl_xor(mx, 1));
        mx = fmaxf(mx, warp_shfl_xor(mx, 2));
        mx = fmaxf(mrow[mt][e], kGen ? mx : mx * sl2);
        const float mu = mx == mma_neg_inf() ? 0.0f : mx;
        al[mt][e] = fast_exp2(mrow[mt][e] - mu);  // m = -inf: 0
        mrow[mt][e] = mx;
        float rs = 0.0f;
#pragma unroll
        for (int n = 0; n < 8; ++n) {
          s[mt][n][2 * e] =
              fast_exp2(kGen ? s[mt][n][2 * e] - mu : fmaf(s[mt][n][2 * e], sl2, -mu));
          s[mt][n][2 * e + 1] =
              fast_exp2(kGen ? s[mt][n][2 * e + 1] - mu : fmaf(s[mt][n][2 * e + 1], sl2, -mu));
          rs += s[mt][n][2 * e] + s[mt][n][2 * e + 1];
        }
        lrow[mt][e] = lrow[mt][e] * al[mt][e] + rs;
      }
    }
    if (kGen && p.p_drop > 0.0f) {
#pragma unroll
      for (int mt = 0; mt < kM; ++mt)
#pragma unroll
        for (int n = 0; n < 8; ++n)
#pragma unroll
          for (int r = 0; r < 4; ++r) {
            const int64_t j = j0 + n * 8 + 2 * tq + (r & 1);
            const int64_t i = wrow + mt * 16 + g + (r < 2 ? 0 : 8);
            const bool keep = i < lq && j < lk &&
                              keep_element(p.seed, p.offset, drop_index(p, b, h, i, j), p.p_drop);
            s[mt][n][r] = keep ? s[mt][n][r] * p.rp_drop : 0.0f;
          }
    }
#pragma unroll
    for (int mt = 0; mt < kM; ++mt)
#pragma unroll
      for (int n = 0; n < kD / 8; ++n) {
        o[mt][n][0] *= al[mt][0];
        o[mt][n][1] *= al[mt][0];
        o[mt][n][2] *= al[mt][1];
        o[mt][n][3] *= al[mt][1];
      }
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      uint32_t a[kM][4];
#pragma unroll
      for (int mt = 0; mt < kM; ++mt) {
        a[mt][0] = pack2<kBf16>(s[mt][2 * kk][0], s[mt][2 * kk][1]);
        a[mt][1] = pack2<kBf16>(s[mt][2 * kk][2], s[mt][2 * kk][3]);
        a[mt][2] = pack2<kBf16>(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
        a[mt][3] = pack2<kBf16>(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
      }
#pragma unroll
      for (int np = 0; np < kD / 16; ++np) {
        uint32_t b0, b1, b2, b3;
        ldsm_x4_t(sv + swz_at<kChunks>(lo_t, kk * 16, np * 2), b0, b1, b2, b3);
#pragma unroll
        for (int mt = 0; mt < kM; ++mt) {
          mma16816<kBf16>(o[mt][2 * np], a[mt], b0, b1);
          mma16816<kBf16>(o[mt][2 * np + 1], a[mt], b2, b3);
        }
      }
    }
  }
  cp_async_wait_all();  // nothing may be in flight at exit (no key tiles: Q only)
  // Row sums across the quad, then out = o / l and lse = (m + log2 l) ln 2.
  uint16_t* out = static_cast<uint16_t*>(p.o) + p.o_row0(b) + h * p.o_sh;
  float* lse = static_cast<float*>(p.lse) + p.lse_row0(b, h);
#pragma unroll
  for (int mt = 0; mt < kM; ++mt)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      float ll = lrow[mt][e];
      ll += warp_shfl_xor(ll, 1);
      ll += warp_shfl_xor(ll, 2);
      const int64_t row = wrow + mt * 16 + g + 8 * e;
      if (row >= lq) continue;
      const float inv = ll > 0.0f ? 1.0f / ll : 0.0f;
      uint16_t* orow = out + row * p.o_sr;
#pragma unroll
      for (int n = 0; n < kD / 8; ++n)
        *reinterpret_cast<uint32_t*>(orow + n * 8 + 2 * tq) =
            pack2<kBf16>(o[mt][n][2 * e] * inv, o[mt][n][2 * e + 1] * inv);
      if (tq == 0)
        lse[row] = ll > 0.0f ? (mrow[mt][e] + log2f(ll)) * 0.6931471805599453f : mma_neg_inf();
    }
}

// The forward grid puts the query tile in grid z (at most 65535 tiles; longer calls go portable).
constexpr int64_t kMaxGridZ = 65535;

// A 16-bit tensor whose rows are 16-byte aligned (cp.async / ldmatrix / vector stores): the data
// pointer and the batch, head and row strides (elements) are multiples of 8. The front ends pass
// strided q, k, v, dout only under this rule (flash_rows_aligned, src/nn/functional/attention.cpp).
inline bool rows_aligned16(const void* x, int64_t sb, int64_t sh, int64_t sr) {
  return reinterpret_cast<uintptr_t>(x) % 16 == 0 && sb % 8 == 0 && sh % 8 == 0 && sr % 8 == 0;
}

template <class T>
bool mma_forward_supported(const FlashParams& p) {
  return (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)&&(p.d == 64 || p.d == 128) &&
         (p.tq + 63) / 64 <= kMaxGridZ && rows_aligned16(p.q, p.q_sb, p.q_sh, p.q_sr) &&
         rows_aligned16(p.k, p.k_sb, p.k_sh, p.k_sr) &&
         rows_aligned16(p.v, p.v_sb, p.v_sh, p.v_sr) && rows_aligned16(p.o, p.o_sb, p.o_sh, p.o_sr);
}

// Warps per forward block: KILN_FLASH_FWD_WARPS=4 or 8, and m16 tiles per warp at head dim 64:
// KILN_FLASH_FWD_M=1 or 2 (read once), override the defaults, for tuning runs
// (bench/run_attention_bench.sh) and so the tests can cover every shape.
inline int env_digit(const char* name, char a, char b) {
  const char* e = std::getenv(name);
  return e && (e[0] == a || e[0] == b) && e[1] == 0 ? e[0] - '0' : 0;
}
inline int mma_forward_warps(int d) {
  static const int forced = env_digit("KILN_FLASH_FWD_WARPS", '4', '8');
  if (forced) return forced;
  return d == 64 ? kFwdWarpsD64 : kFwdWarpsD128;
}
inline int mma_forward_m() {
  static const int forced = env_digit("KILN_FLASH_FWD_M", '1', '2');
  return forced ? forced : kFwdMD64;
}

template <bool kBf16, int kD, int kWarps, bool kGen, int kM>
void mma_forward_launch(const FlashParams& p, gpuStream_t stream) {
  constexpr int kBq = kWarps * 16 * kM;
  constexpr int kSmem = (kBq + 2 * kStages * 64) * kD * 2;  // Q, kStages K/V buffers
  static const bool attr_set = [] {
    return gpuFuncSetAttribute(
               reinterpret_cast<const void*>(&mma_forward_kernel<kBf16, kD, kWarps, kGen, kM>),
               cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem) == gpuSuccess;
  }();
  (void)attr_set;
  const dim3 grid(static_cast<unsigned>(p.hq), static_cast<unsigned>(p.b),
                  static_cast<unsigned>((p.tq + kBq - 1) / kBq));
  mma_forward_kernel<kBf16, kD, kWarps, kGen, kM><<<grid, kWarps * kLanes, kSmem, stream>>>(p);
}

// Instantiated shapes: 4 or 8 warps of one m16 tile, and (plain calls at head dim 64) 4 warps of
// two; the mask / dropout kernels (kGen) take one tile per warp.
template <bool kBf16, int kD>
void mma_forward_dispatch(const FlashParams& p, gpuStream_t stream) {
  // The plain kernels fold a positive scale into the exponent (Note [Flash mma forward]).
  const bool gen = p.mask != nullptr || p.p_drop > 0.0f || !(p.scale > 0.0f);
  const int w = mma_forward_warps(kD);
  if constexpr (kD == 64) {
    if (!gen && w == 4 && mma_forward_m() == 2) {
      mma_forward_launch<kBf16, kD, 4, false, 2>(p, stream);
      return;
    }
  }
  if (w == 4)
    gen ? mma_forward_launch<kBf16, kD, 4, true, 1>(p, stream)
        : mma_forward_launch<kBf16, kD, 4, false, 1>(p, stream);
  else
    gen ? mma_forward_launch<kBf16, kD, 8, true, 1>(p, stream)
        : mma_forward_launch<kBf16, kD, 8, false, 1>(p, stream);
}

template <class T>
void mma_forward(const FlashParams& p, gpuStream_t stream) {
  constexpr bool kBf16 = std::is_same_v<T, BFloat16>;
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    if (p.d == 64)
      mma_forward_dispatch<kBf16, 64>(p, stream);
    else
      mma_forward_dispatch<kBf16, 128>(p, stream);
  }
}

#else  // portable build (HIP): no tensor-core kernels here

template <class T>
bool mma_forward_supported(const FlashParams&) {
  return false;
}
template <class T>
void mma_forward(const FlashParams&, gpuStream_t) {}

#endif

}  // namespace kiln::gpu::flash
