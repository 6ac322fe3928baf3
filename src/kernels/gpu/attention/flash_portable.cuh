// Portable flash-attention kernels (plain FMA on shared-memory tiles, no vendor intrinsics): the
// forward, the backward (dk/dv per key tile, dq by float atomics or by a separate deterministic
// pass) and the delta = rowsum(grad_o * o) pre-pass. They compile for CUDA and HIP, take any head
// dim up to kMaxD and float16/bfloat16/float32, and are the fallback of the tensor-core kernels.
#pragma once

#include <cmath>

#include "backend/gpu/vendor.h"
#include "kernels/convert.h"
#include "kernels/gpu/attention/flash_params.h"

namespace kiln::gpu::flash {

using detail::FlashParams;

constexpr int kSimtThreads = 128;
// Tile rows: kTile * kMaxD = 2048 elements per tile (24 KB of float tiles in the forward).
template <int kMaxD>
struct SimtShape {
  static constexpr int kTile = 2048 / kMaxD;
  static constexpr int kTpr = kSimtThreads / kTile;  // threads per tile row
  static constexpr int kDpt = kMaxD / kTpr;          // head-dim elements per thread
};

__device__ inline float neg_inf() { return -__int_as_float(0x7f800000); }

template <class T>
__device__ inline float ld(const T* p, int64_t i) {
  return detail::convert<float>(p[i]);
}

// Loads rows [r0, r0 + kTile) of a [len, D] matrix (row stride rs) into s[kTile][kMaxD + 1] as
// float, zero beyond len or D.
template <class T, int kMaxD>
__device__ inline void load_tile(float (*s)[kMaxD + 1], const T* base, int64_t rs, int64_t r0,
                                 int64_t len, int d) {
  constexpr int kTile = SimtShape<kMaxD>::kTile;
  for (int e = threadIdx.x; e < kTile * kMaxD; e += kSimtThreads) {
    const int r = e / kMaxD, c = e % kMaxD;
    s[r][c] = (r0 + r < len && c < d) ? ld(base, (r0 + r) * rs + c) : 0.0f;
  }
}

// score = scale q.k + mask, -inf where masked or out of range.
template <int kMaxD>
__device__ inline float tile_score(const FlashParams& p, const float (*sq)[kMaxD + 1],
                                   const float (*sk)[kMaxD + 1], int rr, int cc, int b, int h,
                                   int64_t i, int64_t j, int64_t lq, int64_t lk) {
  if (i >= lq || j >= lk || (p.causal && j > i)) return neg_inf();
  float acc = 0.0f;
  for (int d = 0; d < p.d; ++d) acc += sq[rr][d] * sk[cc][d];
  float s = acc * p.scale;
  if (p.mask) s += static_cast<const float*>(p.mask)[p.mask_at(b, h, i, j)];
  return s;
}

template <class T, int kMaxD>
__global__ void __launch_bounds__(kSimtThreads) simt_forward(FlashParams p) {
  using S = SimtShape<kMaxD>;
  constexpr int kTile = S::kTile;
  __shared__ float sq[kTile][kMaxD + 1], sk[kTile][kMaxD + 1], sv[kTile][kMaxD + 1];
  __shared__ float ss[kTile][kTile + 1];
  __shared__ float sz[kTile][kTile + 1];  // dropout factor
  const int b = blockIdx.z, h = blockIdx.y, t = threadIdx.x;
  const int64_t lq = p.q_len(b), lk = p.k_len(b);
  const int64_t i0 = static_cast<int64_t>(blockIdx.x) * kTile;
  if (i0 >= lq) return;
  const int hk = h / (p.hq / p.hk);
  const T* q = static_cast<const T*>(p.q) + p.q_row0(b) + h * p.q_sh;
  const T* k = static_cast<const T*>(p.k) + p.k_row0(b) + hk * p.k_sh;
  const T* v = static_cast<const T*>(p.v) + p.v_row0(b) + hk * p.v_sh;
  load_tile<T, kMaxD>(sq, q, p.q_sr, i0, lq, p.d);
  const int r = t / S::kTpr, part = t % S::kTpr;
  const int64_t i = i0 + r;
  float m = neg_inf(), l = 0.0f, acc[S::kDpt];
#pragma unroll
  for (int e = 0; e < S::kDpt; ++e) acc[e] = 0.0f;
  int64_t kend = lk;
  if (p.causal && i0 + kTile < kend) kend = i0 + kTile;
  for (int64_t j0 = 0; j0 < kend; j0 += kTile) {
    __syncthreads();
    load_tile<T, kMaxD>(sk, k, p.k_sr, j0, lk, p.d);
    load_tile<T, kMaxD>(sv, v, p.v_sr, j0, lk, p.d);
    __syncthreads();
    for (int e = t; e < kTile * kTile; e += kSimtThreads) {
      const int rr = e / kTile, cc = e % kTile;
      ss[rr][cc] = tile_score<kMaxD>(p, sq, sk, rr, cc, b, h, i0 + rr, j0 + cc, lq, lk);
      if (p.p_drop > 0.0f)
        sz[rr][cc] = (i0 + rr < lq && j0 + cc < lk && detail::flash_keep(p, b, h, i0 + rr, j0 + cc))
                         ? p.rp_drop
                         : 0.0f;
    }
    __syncthreads();
    float mx = m;
    for (int c = 0; c < kTile; ++c) mx = fmaxf(mx, ss[r][c]);
    const float mu = mx == neg_inf() ? 0.0f : mx;
    const float alpha = m == neg_inf() ? 0.0f : expf(m - mu);
#pragma unroll
    for (int e = 0; e < S::kDpt; ++e) acc[e] *= alpha;
    float rs = 0.0f;
    for (int c = 0; c < kTile; ++c) {
      const float pc = ss[r][c] == neg_inf() ? 0.0f : expf(ss[r][c] - mu);
      rs += pc;
      const float w = p.p_drop > 0.0f ? pc * sz[r][c] : pc;
#pragma unroll
      for (int e = 0; e < S::kDpt; ++e) acc[e] += w * sv[c][part + S::kTpr * e];
    }
    l = l * alpha + rs;
    m = mx;
  }
  if (i >= lq) return;
  T* o = static_cast<T*>(p.o) + p.o_row0(b) + h * p.o_sh + i * p.o_sr;
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;
#pragma unroll
  for (int e = 0; e < S::kDpt; ++e) {
    const int d = part + S::kTpr * e;
    if (d < p.d) o[d] = detail::convert<T>(acc[e] * inv);
  }
  if (part == 0)
    static_cast<float*>(p.lse)[p.lse_row0(b, h) + i] = l > 0.0f ? m + logf(l) : neg_inf();
}

// delta[b, h, i] = sum_d grad_o * o; one thread per row.
template <class T>
__global__ void simt_delta(FlashParams p, int64_t rows_per_bh) {
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int b = blockIdx.z, h = blockIdx.y;
  if (idx >= rows_per_bh || idx >= p.q_len(b)) return;
  const T* go = static_cast<const T*>(p.dout) + p.do_row0(b) + h * p.do_sh + idx * p.do_sr;
  const T* o = static_cast<const T*>(p.o) + p.o_row0(b) + h * p.o_sh + idx * p.o_sr;
  float acc = 0.0f;
  for (int d = 0; d < p.d; ++d) acc += ld(go, d) * ld(o, d);
  p.delta[p.lse_row0(b, h) + idx] = acc;
}

// Scores -> P~ = P Z (sp) and dS / scale = P (Z dO.v - delta) (sd) for one (query tile, key tile).
template <int kMaxD>
__device__ inline void simt_ds_tile(const FlashParams& p, const float (*sq)[kMaxD + 1],
                                    const float (*sk)[kMaxD + 1], const float (*sdo)[kMaxD + 1],
                                    const float (*sv)[kMaxD + 1], const float* slse,
                                    const float* sdelta, float (*sp)[SimtShape<kMaxD>::kTile + 1],
                                    float (*sd)[SimtShape<kMaxD>::kTile + 1], int b, int h,
                                    int64_t i0, int64_t j0, int64_t lq, int64_t lk) {
  constexpr int kTile = SimtShape<kMaxD>::kTile;
  for (int e = threadIdx.x; e < kTile * kTile; e += kSimtThreads) {
    const int rr = e / kTile, cc = e % kTile;
    const float s = tile_score<kMaxD>(p, sq, sk, rr, cc, b, h, i0 + rr, j0 + cc, lq, lk);
    const float lse = slse[rr];
    float pr = 0.0f, ds = 0.0f;
    if (s != neg_inf() && lse != neg_inf()) {
      pr = expf(s - lse);
      float dpd = 0.0f;
      for (int d = 0; d < p.d; ++d) dpd += sdo[rr][d] * sv[cc][d];
      float z = 1.0f;
      if (p.p_drop > 0.0f) z = detail::flash_keep(p, b, h, i0 + rr, j0 + cc) ? p.rp_drop : 0.0f;
      ds = pr * (dpd * z - sdelta[rr]);
      pr *= z;
    }
    sp[rr][cc] = pr;
    sd[rr][cc] = ds;
  }
}

// dk, dv of one key tile from one query head (atomic_dq: also adds dq into p.dq_acc).
template <class T, int kMaxD>
__global__ void __launch_bounds__(kSimtThreads) simt_backward_kv(FlashParams p, bool atomic_dq) {
  using S = SimtShape<kMaxD>;
  constexpr int kTile = S::kTile;
  __shared__ float sq[kTile][kMaxD + 1], sk[kTile][kMaxD + 1], sv[kTile][kMaxD + 1];
  __shared__ float sdo[kTile][kMaxD + 1];
  __shared__ float sp[kTile][kTile + 1], sd[kTile][kTile + 1];
  __shared__ float slse[kTile], sdelta[kTile];
  const int b = blockIdx.z, h = blockIdx.y, t = threadIdx.x;
  const int64_t lq = p.q_len(b), lk = p.k_len(b);
  const int64_t j0 = static_cast<int64_t>(blockIdx.x) * kTile;
  if (j0 >= lk) return;
  const int hk = h / (p.hq / p.hk);
  const T* q = static_cast<const T*>(p.q) + p.q_row0(b) + h * p.q_sh;
  const T* go = static_cast<const T*>(p.dout) + p.do_row0(b) + h * p.do_sh;
  const T* k = static_cast<const T*>(p.k) + p.k_row0(b) + hk * p.k_sh;
  const T* v = static_cast<const T*>(p.v) + p.v_row0(b) + hk * p.v_sh;
  const float* lse = static_cast<const float*>(p.lse) + p.lse_row0(b, h);
  const float* delta = p.delta + p.lse_row0(b, h);
  load_tile<T, kMaxD>(sk, k, p.k_sr, j0, lk, p.d);
  load_tile<T, kMaxD>(sv, v, p.v_sr, j0, lk, p.d);
  const int r = t / S::kTpr, part = t % S::kTpr;
  float dk[S::kDpt], dv[S::kDpt];
#pragma unroll
  for (int e = 0; e < S::kDpt; ++e) dk[e] = dv[e] = 0.0f;
  const int64_t istart = p.causal ? (j0 / kTile) * kTile : 0;
  for (int64_t i0 = istart; i0 < lq; i0 += kTile) {
    __syncthreads();
    load_tile<T, kMaxD>(sq, q, p.q_sr, i0, lq, p.d);
    load_tile<T, kMaxD>(sdo, go, p.do_sr, i0, lq, p.d);
    if (t < kTile) {
      slse[t] = i0 + t < lq ? lse[i0 + t] : neg_inf();
      sdelta[t] = i0 + t < lq ? delta[i0 + t] : 0.0f;
    }
    __syncthreads();
    simt_ds_tile<kMaxD>(p, sq, sk, sdo, sv, slse, sdelta, sp, sd, b, h, i0, j0, lq, lk);
    __syncthreads();
    for (int rr = 0; rr < kTile; ++rr) {
      const float pz = sp[rr][r], ds = sd[rr][r];
      if (pz == 0.0f && ds == 0.0f) continue;
#pragma unroll
      for (int e = 0; e < S::kDpt; ++e) {
        const int d = part + S::kTpr * e;
        dv[e] += pz * sdo[rr][d];
        dk[e] += ds * sq[rr][d];
      }
    }
    if (atomic_dq && i0 + r < lq) {
      float* dq = p.dq_acc + p.acc_row0(b) + h * p.acc_sh + (i0 + r) * p.acc_sr;
#pragma unroll
      for (int e = 0; e < S::kDpt; ++e) {
        const int d = part + S::kTpr * e;
        if (d >= p.d) continue;
        float a = 0.0f;
        for (int c = 0; c < kTile; ++c) a += sd[r][c] * sk[c][d];
        if (a != 0.0f) atomicAdd(dq + d, a * p.scale);
      }
    }
  }
  if (j0 + r >= lk) return;
  const int hw = p.dkv_f32 ? h : hk;  // GQA partial sums go to the query head's slot
  const int64_t off = p.dk_row0(b) + hw * p.dk_sh + (j0 + r) * p.dk_sr;
#pragma unroll
  for (int e = 0; e < S::kDpt; ++e) {
    const int d = part + S::kTpr * e;
    if (d >= p.d) continue;
    if (p.dkv_f32) {
      static_cast<float*>(p.dk)[off + d] = dk[e] * p.scale;
      static_cast<float*>(p.dv)[off + d] = dv[e];
    } else {
      static_cast<T*>(p.dk)[off + d] = detail::convert<T>(dk[e] * p.scale);
      static_cast<T*>(p.dv)[off + d] = detail::convert<T>(dv[e]);
    }
  }
}

// Deterministic dq: one query tile loops over the key tiles (no atomics).
template <class T, int kMaxD>
__global__ void __launch_bounds__(kSimtThreads) simt_backward_q(FlashParams p) {
  using S = SimtShape<kMaxD>;
  constexpr int kTile = S::kTile;
  __shared__ float sq[kTile][kMaxD + 1], sk[kTile][kMaxD + 1], sv[kTile][kMaxD + 1];
  __shared__ float sdo[kTile][kMaxD + 1];
  __shared__ float sp[kTile][kTile + 1], sd[kTile][kTile + 1];
  __shared__ float slse[kTile], sdelta[kTile];
  const int b = blockIdx.z, h = blockIdx.y, t = threadIdx.x;
  const int64_t lq = p.q_len(b), lk = p.k_len(b);
  const int64_t i0 = static_cast<int64_t>(blockIdx.x) * kTile;
  if (i0 >= lq) return;
  const int hk = h / (p.hq / p.hk);
  const T* k = static_cast<const T*>(p.k) + p.k_row0(b) + hk * p.k_sh;
  const T* v = static_cast<const T*>(p.v) + p.v_row0(b) + hk * p.v_sh;
  load_tile<T, kMaxD>(sq, static_cast<const T*>(p.q) + p.q_row0(b) + h * p.q_sh, p.q_sr, i0, lq,
                      p.d);
  load_tile<T, kMaxD>(sdo, static_cast<const T*>(p.dout) + p.do_row0(b) + h * p.do_sh, p.do_sr, i0,
                      lq, p.d);
  if (t < kTile) {
    slse[t] = i0 + t < lq ? static_cast<const float*>(p.lse)[p.lse_row0(b, h) + i0 + t] : neg_inf();
    sdelta[t] = i0 + t < lq ? p.delta[p.lse_row0(b, h) + i0 + t] : 0.0f;
  }
  const int r = t / S::kTpr, part = t % S::kTpr;
  float dq[S::kDpt];
#pragma unroll
  for (int e = 0; e < S::kDpt; ++e) dq[e] = 0.0f;
  int64_t kend = lk;
  if (p.causal && i0 + kTile < kend) kend = i0 + kTile;
  for (int64_t j0 = 0; j0 < kend; j0 += kTile) {
    __syncthreads();
    load_tile<T, kMaxD>(sk, k, p.k_sr, j0, lk, p.d);
    load_tile<T, kMaxD>(sv, v, p.v_sr, j0, lk, p.d);
    __syncthreads();
    simt_ds_tile<kMaxD>(p, sq, sk, sdo, sv, slse, sdelta, sp, sd, b, h, i0, j0, lq, lk);
    __syncthreads();
    for (int c = 0; c < kTile; ++c) {
      const float ds = sd[r][c];
      if (ds == 0.0f) continue;
#pragma unroll
      for (int e = 0; e < S::kDpt; ++e) dq[e] += ds * sk[c][part + S::kTpr * e];
    }
  }
  if (i0 + r >= lq) return;
  T* out = static_cast<T*>(p.dq) + p.dq_row0(b) + h * p.dq_sh + (i0 + r) * p.dq_sr;
#pragma unroll
  for (int e = 0; e < S::kDpt; ++e) {
    const int d = part + S::kTpr * e;
    if (d < p.d) out[d] = detail::convert<T>(dq[e] * p.scale);
  }
}

}  // namespace kiln::gpu::flash
