// GPU kernels of layer_norm and rms_norm, forward and backward: register-resident rows
// (Note [GPU row kernels]) saving mean/rstd; dx and dweight/dbias in one pass of per-block column
// partial sums (Note [Fused layer_norm backward]) plus a second pass (deterministic, no atomics).
#include "kernels/gpu/nn_common.cuh"

#include <algorithm>

namespace kiln::gpu {
namespace {

using namespace nnk;

// Loads E elements of row `base` (index (k * tpr + t) * V + j) of p into r (0 outside the row).
template <class T, int VPT, class A>
__device__ __forceinline__ void load_row(const T* p, int64_t base, int64_t n, int t, int tpr,
                                         bool vec, bool active, A* r) {
  constexpr int V = vec_width<T>();
#pragma unroll
  for (int k = 0; k < VPT; ++k) {
    const int64_t i0 = (static_cast<int64_t>(k) * tpr + t) * V;
    if (active && vec && i0 < n) {
      const Vec<T, V> v = *reinterpret_cast<const Vec<T, V>*>(p + base + i0);
#pragma unroll
      for (int j = 0; j < V; ++j) r[k * V + j] = ld<A>(v.v[j]);
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j)
        r[k * V + j] = active && i0 + j < n ? ld<A>(p[base + i0 + j]) : A(0);
    }
  }
}

template <class T, int VPT, class A>
__device__ __forceinline__ void store_row(T* p, int64_t base, int64_t n, int t, int tpr, bool vec,
                                          const A* r) {
  constexpr int V = vec_width<T>();
#pragma unroll
  for (int k = 0; k < VPT; ++k) {
    const int64_t i0 = (static_cast<int64_t>(k) * tpr + t) * V;
    if (vec && i0 < n) {
      Vec<T, V> v;
#pragma unroll
      for (int j = 0; j < V; ++j) v.v[j] = st<T>(r[k * V + j]);
      *reinterpret_cast<Vec<T, V>*>(p + base + i0) = v;
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j)
        if (i0 + j < n) p[base + i0 + j] = st<T>(r[k * V + j]);
    }
  }
}

template <int VPT, int V>
__device__ __forceinline__ bool in_row(int e, int t, int tpr, int64_t n) {
  return (static_cast<int64_t>(e / V) * tpr + t) * V + e % V < n;
}

// y = (x - mean) * rstd * w + b (center) or x * rstd * w (rms); writes mean / rstd per row.
template <class T, int VPT>
__global__ void __launch_bounds__(kRowThreads)
    norm_fwd_kernel(const T* x, const T* w, const T* b, T* y, acc_t<T>* mean_out,
                    acc_t<T>* rstd_out, int64_t rows, int64_t n, int tpr, bool vec, bool center,
                    acc_t<T> eps) {
  using A = acc_t<T>;
  constexpr int V = vec_width<T>();
  constexpr int E = VPT * V;
  __shared__ A smem[kMaxWarps];
  const int t = static_cast<int>(threadIdx.x) % tpr;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / tpr) + threadIdx.x / tpr;
  const bool active = row < rows;
  const int64_t base = active ? row * n : 0;
  A v[E];
  load_row<T, VPT>(x, base, n, t, tpr, vec, active, v);
  A mean = 0;
  if (center) {
    A s = 0;
#pragma unroll
    for (int e = 0; e < E; ++e) s += v[e];
    mean = group_reduce(s, SumOp<A>(), tpr, smem) / static_cast<A>(n);
  }
  A q = 0;
#pragma unroll
  for (int e = 0; e < E; ++e) {
    const A d = in_row<VPT, V>(e, t, tpr, n) ? v[e] - mean : A(0);
    q += d * d;
  }
  q = group_reduce(q, SumOp<A>(), tpr, smem);
  const A rstd = A(1) / dsqrt(q / static_cast<A>(n) + eps);
  if (!active) return;
  A wv[E], bv[E];
  if (w) load_row<T, VPT>(w, 0, n, t, tpr, vec, true, wv);
  if (b) load_row<T, VPT>(b, 0, n, t, tpr, vec, true, bv);
#pragma unroll
  for (int e = 0; e < E; ++e) {
    A o = (v[e] - mean) * rstd;
    if (w) o *= wv[e];
    if (b) o += bv[e];
    v[e] = o;
  }
  store_row<T, VPT>(y, base, n, t, tpr, vec, v);
  if (t == 0) {
    if (center) mean_out[row] = mean;
    rstd_out[row] = rstd;
  }
}

// Forward rows of at most a warp's width of threads (tpr <= warp size, kWarpBlock threads per
// block): shuffle-only reductions, and weight/bias read one vector at a time in the write loop
// so that only the row stays in registers (<= 64 registers for VPT <= 3: full occupancy).
inline constexpr int kWarpBlock = 128;

template <class T, int VPT>
__global__ void __launch_bounds__(kWarpBlock, VPT <= 3 ? 8 : 6)
    norm_fwd_warp_kernel(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ b,
                         T* __restrict__ y, acc_t<T>* mean_out, acc_t<T>* rstd_out, int64_t rows,
                         int64_t n, int tpr, bool vec, bool center, acc_t<T> eps) {
  using A = acc_t<T>;
  constexpr int V = vec_width<T>();
  constexpr int E = VPT * V;
  const int t = static_cast<int>(threadIdx.x) % tpr;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (kWarpBlock / tpr) + threadIdx.x / tpr;
  const bool active = row < rows;
  const int64_t base = active ? row * n : 0;
  A v[E];
  load_row<T, VPT>(x, base, n, t, tpr, vec, active, v);
  A mean = 0;
  if (center) {
    A s = 0;
#pragma unroll
    for (int e = 0; e < E; ++e) s += v[e];
    for (int o = tpr / 2; o > 0; o /= 2) s += warp_shfl_xor(s, o);
    mean = s / static_cast<A>(n);
  }
  A q = 0;
#pragma unroll
  for (int e = 0; e < E; ++e) {
    const A d = in_row<VPT, V>(e, t, tpr, n) ? v[e] - mean : A(0);
    q += d * d;
  }
  for (int o = tpr / 2; o > 0; o /= 2) q += warp_shfl_xor(q, o);
  const A rstd = A(1) / dsqrt(q / static_cast<A>(n) + eps);
  if (!active) return;
#pragma unroll
  for (int k = 0; k < VPT; ++k) {
    const int64_t i0 = (static_cast<int64_t>(k) * tpr + t) * V;
    if (vec && i0 < n) {
      Vec<T, V> wv, bv, o;
      if (w) wv = *reinterpret_cast<const Vec<T, V>*>(w + i0);
      if (b) bv = *reinterpret_cast<const Vec<T, V>*>(b + i0);
#pragma unroll
      for (int j = 0; j < V; ++j) {
        A r = (v[k * V + j] - mean) * rstd;
        if (w) r *= ld<A>(wv.v[j]);
        if (b) r += ld<A>(bv.v[j]);
        o.v[j] = st<T>(r);
      }
      *reinterpret_cast<Vec<T, V>*>(y + base + i0) = o;
    } else if (!vec) {
#pragma unroll
      for (int j = 0; j < V; ++j) {
        if (i0 + j >= n) break;
        A r = (v[k * V + j] - mean) * rstd;
        if (w) r *= ld<A>(w[i0 + j]);
        if (b) r += ld<A>(b[i0 + j]);
        y[base + i0 + j] = st<T>(r);
      }
    }
  }
  if (t == 0) {
    if (center) mean_out[row] = mean;
    rstd_out[row] = rstd;
  }
}

// Note [Persistent layer_norm forward]
// -------------------------------------
// For rows of one warp (tpr == warp width) with 16-byte vectors, a grid of one wave of blocks
// walks the rows: each warp loads its next row before it reduces and writes the current one, so
// twice the bytes are in flight per warp and no block pays a launch ramp. The arithmetic is that
// of norm_fwd_warp_kernel, in the same order: the results are bitwise identical.
inline constexpr int kPersistBlocks = 6;

template <class T, int VPT>
__global__ void __launch_bounds__(kWarpBlock, kPersistBlocks)
    norm_fwd_persistent_kernel(const T* __restrict__ x, const T* __restrict__ w,
                               const T* __restrict__ b, T* __restrict__ y, acc_t<T>* mean_out,
                               acc_t<T>* rstd_out, int64_t rows, int64_t n, bool center,
                               acc_t<T> eps) {
  using A = acc_t<T>;
  constexpr int V = vec_width<T>();
  using VecT = Vec<T, V>;
  const int ws = warp_size();
  const int t = static_cast<int>(threadIdx.x) % ws;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (kWarpBlock / ws);
  int64_t row = static_cast<int64_t>(blockIdx.x) * (kWarpBlock / ws) + threadIdx.x / ws;
  auto load = [&](int64_t r, VecT* buf) {
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
      const int64_t i0 = (static_cast<int64_t>(k) * ws + t) * V;
      if (i0 < n) buf[k] = *reinterpret_cast<const VecT*>(x + r * n + i0);
    }
  };
  VecT cur[VPT], nxt[VPT];
  if (row < rows) load(row, cur);
  for (; row < rows; row += warps) {
    if (row + warps < rows) load(row + warps, nxt);
    // The row stays packed in `cur` (registers for two rows); each use converts again.
    auto val = [&](int k, int j) {
      return (static_cast<int64_t>(k) * ws + t) * V < n ? ld<A>(cur[k].v[j]) : A(0);
    };
    A mean = 0;
    if (center) {
      A s = 0;
#pragma unroll
      for (int k = 0; k < VPT; ++k)
#pragma unroll
        for (int j = 0; j < V; ++j) s += val(k, j);
      for (int o = ws / 2; o > 0; o /= 2) s += warp_shfl_xor(s, o);
      mean = s / static_cast<A>(n);
    }
    A q = 0;
#pragma unroll
    for (int k = 0; k < VPT; ++k)
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const A d = (static_cast<int64_t>(k) * ws + t) * V < n ? val(k, j) - mean : A(0);
        q += d * d;
      }
    for (int o = ws / 2; o > 0; o /= 2) q += warp_shfl_xor(q, o);
    const A rstd = A(1) / dsqrt(q / static_cast<A>(n) + eps);
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
      const int64_t i0 = (static_cast<int64_t>(k) * ws + t) * V;
      if (i0 >= n) continue;
      VecT wv, bv, o;
      if (w) wv = *reinterpret_cast<const VecT*>(w + i0);
      if (b) bv = *reinterpret_cast<const VecT*>(b + i0);
#pragma unroll
      for (int j = 0; j < V; ++j) {
        A r = (ld<A>(cur[k].v[j]) - mean) * rstd;
        if (w) r *= ld<A>(wv.v[j]);
        if (b) r += ld<A>(bv.v[j]);
        o.v[j] = st<T>(r);
      }
      *reinterpret_cast<VecT*>(y + row * n + i0) = o;
    }
    if (t == 0) {
      if (center) mean_out[row] = mean;
      rstd_out[row] = rstd;
    }
#pragma unroll
    for (int k = 0; k < VPT; ++k) cur[k] = nxt[k];
  }
}

// Geometry of the forward: the fewest vectors per thread (1-4, 3 included: n = 768 bfloat16
// fills a warp exactly) that fit a warp; else the shared row_geom (multi-warp rows or two-pass).
inline RowGeom norm_fwd_geom(int64_t n, int V, int ws, bool aligned) {
  for (int vpt : {1, 2, 3, 4}) {
    const int64_t need = (n + static_cast<int64_t>(vpt) * V - 1) / (static_cast<int64_t>(vpt) * V);
    if (need > ws || kWarpBlock % ws != 0) continue;
    RowGeom g;
    g.vec = aligned && n % V == 0;
    g.vpt = vpt;
    while (g.tpr < need) g.tpr *= 2;
    g.rows_per_block = kWarpBlock / g.tpr;
    g.threads = kWarpBlock;
    return g;
  }
  return row_geom(n, V, ws, aligned);
}

// dx = rstd * (g*w - mean(g*w) - xhat * mean(g*w * xhat)) (rms: no mean(g*w) term).
template <class T, int VPT>
__global__ void __launch_bounds__(kRowThreads)
    norm_bwd_kernel(const T* g, const T* x, const acc_t<T>* mean, const acc_t<T>* rstd, const T* w,
                    T* dx, int64_t rows, int64_t n, int tpr, bool vec, bool center) {
  using A = acc_t<T>;
  constexpr int V = vec_width<T>();
  constexpr int E = VPT * V;
  __shared__ A smem[kMaxWarps];
  const int t = static_cast<int>(threadIdx.x) % tpr;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / tpr) + threadIdx.x / tpr;
  const bool active = row < rows;
  const int64_t base = active ? row * n : 0;
  A gv[E], xv[E];
  load_row<T, VPT>(g, base, n, t, tpr, vec, active, gv);
  load_row<T, VPT>(x, base, n, t, tpr, vec, active, xv);
  if (w) {
    A wv[E];
    load_row<T, VPT>(w, 0, n, t, tpr, vec, true, wv);
#pragma unroll
    for (int e = 0; e < E; ++e) gv[e] *= wv[e];
  }
  const A mu = active && center ? mean[row] : A(0);
  const A rs = active ? rstd[row] : A(0);
  A s1 = 0, s2 = 0;
#pragma unroll
  for (int e = 0; e < E; ++e) {
    xv[e] = (xv[e] - mu) * rs;  // xhat (garbage outside the row, where gv = 0)
    s1 += gv[e];
    s2 += gv[e] * xv[e];
  }
  if (center) s1 = group_reduce(s1, SumOp<A>(), tpr, smem);
  s2 = group_reduce(s2, SumOp<A>(), tpr, smem);
  const A a = center ? s1 / static_cast<A>(n) : A(0);
  const A bq = s2 / static_cast<A>(n);
  if (!active) return;
#pragma unroll
  for (int e = 0; e < E; ++e) gv[e] = rs * (gv[e] - a - xv[e] * bq);
  store_row<T, VPT>(dx, base, n, t, tpr, vec, gv);
}

// Rows too long for registers: one block per row, statistics then the write (rows re-read).
template <class T>
__global__ void __launch_bounds__(kMaxThreads)
    norm_fwd_long_kernel(const T* x, const T* w, const T* b, T* y, acc_t<T>* mean_out,
                         acc_t<T>* rstd_out, int64_t n, bool center, acc_t<T> eps) {
  using A = acc_t<T>;
  __shared__ A smem[kMaxWarps];
  const int64_t base = static_cast<int64_t>(blockIdx.x) * n;
  A mean = 0;
  if (center) {
    A s = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += ld<A>(x[base + i]);
    mean = block_reduce(s, SumOp<A>(), smem) / static_cast<A>(n);
  }
  A q = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const A d = ld<A>(x[base + i]) - mean;
    q += d * d;
  }
  q = block_reduce(q, SumOp<A>(), smem);
  const A rstd = A(1) / dsqrt(q / static_cast<A>(n) + eps);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    A o = (ld<A>(x[base + i]) - mean) * rstd;
    if (w) o *= ld<A>(w[i]);
    if (b) o += ld<A>(b[i]);
    y[base + i] = st<T>(o);
  }
  if (threadIdx.x == 0) {
    if (center) mean_out[blockIdx.x] = mean;
    rstd_out[blockIdx.x] = rstd;
  }
}

template <class T>
__global__ void __launch_bounds__(kMaxThreads)
    norm_bwd_long_kernel(const T* g, const T* x, const acc_t<T>* mean, const acc_t<T>* rstd,
                         const T* w, T* dx, int64_t n, bool center) {
  using A = acc_t<T>;
  __shared__ A smem[kMaxWarps];
  const int64_t row = blockIdx.x, base = row * n;
  const A mu = center ? mean[row] : A(0), rs = rstd[row];
  A s1 = 0, s2 = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const A gw = ld<A>(g[base + i]) * (w ? ld<A>(w[i]) : A(1));
    s1 += gw;
    s2 += gw * (ld<A>(x[base + i]) - mu) * rs;
  }
  s1 = block_reduce(s1, SumOp<A>(), smem);
  s2 = block_reduce(s2, SumOp<A>(), smem);
  const A a = center ? s1 / static_cast<A>(n) : A(0), bq = s2 / static_cast<A>(n);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const A gw = ld<A>(g[base + i]) * (w ? ld<A>(w[i]) : A(1));
    const A xh = (ld<A>(x[base + i]) - mu) * rs;
    dx[base + i] = st<T>(rs * (gw - a - xh * bq));
  }
}

// dweight / dbias, pass 1: block (32 columns x 8 row lanes) sums rows [chunk) of its columns.
constexpr int kColTile = 32, kRowLanes = 8;

template <class T>
__global__ void norm_param_partial_kernel(const T* g, const T* x, const acc_t<T>* mean,
                                          const acc_t<T>* rstd, acc_t<T>* pw, acc_t<T>* pb,
                                          int64_t rows, int64_t n, int64_t chunk, bool center) {
  using A = acc_t<T>;
  __shared__ A sw[kRowLanes][kColTile + 1], sb[kRowLanes][kColTile + 1];
  const int tx = static_cast<int>(threadIdx.x) % kColTile, ty = threadIdx.x / kColTile;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kColTile + tx;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * chunk;
  const int64_t r1 = r0 + chunk < rows ? r0 + chunk : rows;
  A aw = 0, ab = 0;
  if (col < n)
    for (int64_t r = r0 + ty; r < r1; r += kRowLanes) {
      const A gv = ld<A>(g[r * n + col]);
      const A mu = center ? mean[r] : A(0);
      aw += gv * (ld<A>(x[r * n + col]) - mu) * rstd[r];
      ab += gv;
    }
  sw[ty][tx] = aw;
  sb[ty][tx] = ab;
  __syncthreads();
  if (ty == 0 && col < n) {
    for (int k = 1; k < kRowLanes; ++k) aw += sw[k][tx], ab += sb[k][tx];
    if (pw) pw[blockIdx.y * n + col] = aw;
    if (pb) pb[blockIdx.y * n + col] = ab;
  }
}

// Pass 2: column j sums its chunks in order.
template <class T>
__global__ void norm_param_finish_kernel(const acc_t<T>* pw, const acc_t<T>* pb, T* dw, T* db,
                                         int64_t chunks, int64_t n) {
  using A = acc_t<T>;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= n) return;
  A aw = 0, ab = 0;
  for (int64_t k = 0; k < chunks; ++k) {
    if (dw) aw += pw[k * n + col];
    if (db) ab += pb[k * n + col];
  }
  if (dw) dw[col] = st<T>(aw);
  if (db) db[col] = st<T>(ab);
}

// Note [Fused layer_norm backward]
// ---------------------------------
// When one warp holds a row in registers (16-byte vectors), one persistent kernel computes dx
// and the parameter-gradient partial sums together: warp w of W walks rows w, w + W, ..., writes
// dx, and keeps running sums of g * xhat and g for the columns its lanes own (the same columns in
// every row). Each block adds its warps' sums in warp order and writes one partial row;
// norm_param_rows_finish_kernel adds the blocks' rows in a fixed order. g and x are read once, not
// twice (the separate partial-sum kernel re-read both), and one launch less. Every sum has an
// order fixed by the grid (the device's multiprocessor count): deterministic. The dx formula is
// norm_bwd_kernel's; its two row sums reduce by warp butterfly instead of a block tree.
inline constexpr int kFusedBwdThreads = 256;
inline constexpr int kFusedBwdBlocksPerSm = 2;
// Elements per lane (VPT * V) of the fused kernel: beyond 24 its four register rows spill.
inline constexpr int kFusedBwdMaxElems = 24;
inline constexpr size_t kFusedBwdMaxSmem = 48 * 1024;

template <class A, int E>
__device__ __forceinline__ void fused_block_sum(const A (&acc)[E], A* sm, A* out, int64_t n,
                                                int lane, int wid, int wpb, int ws, int V) {
#pragma unroll
  for (int e = 0; e < E; ++e) {
    const int64_t i = (static_cast<int64_t>(e / V) * ws + lane) * V + e % V;
    if (i < n) sm[static_cast<int64_t>(wid) * n + i] = acc[e];
  }
  __syncthreads();
  for (int64_t c = threadIdx.x; c < n; c += blockDim.x) {
    A s = 0;
    for (int q = 0; q < wpb; ++q) s += sm[static_cast<int64_t>(q) * n + c];
    out[static_cast<int64_t>(blockIdx.x) * n + c] = s;
  }
  __syncthreads();
}

template <class T, int VPT>
__global__ void __launch_bounds__(kFusedBwdThreads, kFusedBwdBlocksPerSm)
    norm_bwd_fused_kernel(const T* __restrict__ g, const T* __restrict__ x,
                          const acc_t<T>* __restrict__ mean, const acc_t<T>* __restrict__ rstd,
                          const T* __restrict__ w, T* __restrict__ dx, acc_t<T>* __restrict__ pw,
                          acc_t<T>* __restrict__ pb, int64_t rows, int64_t n, bool center) {
  using A = acc_t<T>;
  constexpr int V = vec_width<T>();
  constexpr int E = VPT * V;
  using VecT = Vec<T, V>;
  extern __shared__ unsigned char fused_bwd_smem[];  // [warps per block][n] of A
  const int ws = warp_size();
  const int lane = static_cast<int>(threadIdx.x) % ws, wid = static_cast<int>(threadIdx.x) / ws;
  const int wpb = static_cast<int>(blockDim.x) / ws;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * wpb;
  A aw[E], ab[E];
#pragma unroll
  for (int e = 0; e < E; ++e) aw[e] = ab[e] = A(0);
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * wpb + wid; row < rows; row += stride) {
    const int64_t base = row * n;
    A gv[E], xh[E];
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
      const int64_t i0 = (static_cast<int64_t>(k) * ws + lane) * V;
      if (i0 < n) {
        const VecT a = *reinterpret_cast<const VecT*>(g + base + i0);
        const VecT b = *reinterpret_cast<const VecT*>(x + base + i0);
#pragma unroll
        for (int j = 0; j < V; ++j) gv[k * V + j] = ld<A>(a.v[j]), xh[k * V + j] = ld<A>(b.v[j]);
      } else {
#pragma unroll
        for (int j = 0; j < V; ++j) gv[k * V + j] = xh[k * V + j] = A(0);
      }
    }
    const A mu = center ? mean[row] : A(0);
    const A rs = rstd[row];
    A s1 = 0, s2 = 0;
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
      const int64_t i0 = (static_cast<int64_t>(k) * ws + lane) * V;
      if (i0 >= n) continue;
      VecT wv;
      if (w) wv = *reinterpret_cast<const VecT*>(w + i0);
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const int e = k * V + j;
        xh[e] = (xh[e] - mu) * rs;
        aw[e] += gv[e] * xh[e];
        ab[e] += gv[e];
        if (w) gv[e] *= ld<A>(wv.v[j]);  // from here on gv holds g * w
        s1 += gv[e];
        s2 += gv[e] * xh[e];
      }
    }
    for (int o = ws / 2; o > 0; o /= 2) {
      if (center) s1 += warp_shfl_xor(s1, o);
      s2 += warp_shfl_xor(s2, o);
    }
    const A a = center ? s1 / static_cast<A>(n) : A(0);
    const A bq = s2 / static_cast<A>(n);
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
      const int64_t i0 = (static_cast<int64_t>(k) * ws + lane) * V;
      if (i0 >= n) continue;
      VecT o;
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const int e = k * V + j;
        o.v[j] = st<T>(rs * (gv[e] - a - xh[e] * bq));
      }
      *reinterpret_cast<VecT*>(dx + base + i0) = o;
    }
  }
  A* sm = reinterpret_cast<A*>(fused_bwd_smem);
  if (pw) fused_block_sum(aw, sm, pw, n, lane, wid, wpb, ws, V);
  if (pb) fused_block_sum(ab, sm, pb, n, lane, wid, wpb, ws, V);
}

// The fused kernel's second pass: column j sums the blocks' partial rows. Many partial rows (two
// per multiprocessor) and few columns, so a block takes kColTile columns with kFinishLanes lanes
// striding over the rows (a handful of independent loads each: the pass is latency-bound), and
// the lanes combine in lane order: a fixed order, as the one-thread-per-column
// norm_param_finish_kernel, without its serial walk over hundreds of rows.
inline constexpr int kFinishLanes = 32;

template <class T>
__global__ void __launch_bounds__(kColTile* kFinishLanes)
    norm_param_rows_finish_kernel(const acc_t<T>* __restrict__ pw, const acc_t<T>* __restrict__ pb,
                                  T* dw, T* db, int64_t parts, int64_t n) {
  using A = acc_t<T>;
  __shared__ A sw[kFinishLanes][kColTile + 1], sb[kFinishLanes][kColTile + 1];
  const int tx = static_cast<int>(threadIdx.x) % kColTile, ty = threadIdx.x / kColTile;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kColTile + tx;
  A aw = 0, ab = 0;
  if (col < n) {
#pragma unroll 4
    for (int64_t k = ty; k < parts; k += kFinishLanes) {
      if (pw) aw += pw[k * n + col];
      if (pb) ab += pb[k * n + col];
    }
  }
  sw[ty][tx] = aw;
  sb[ty][tx] = ab;
  __syncthreads();
  if (ty == 0 && col < n) {
    for (int k = 1; k < kFinishLanes; ++k) aw += sw[k][tx], ab += sb[k][tx];
    if (dw) dw[col] = st<T>(aw);
    if (db) db[col] = st<T>(ab);
  }
}

template <bool kCenter>
void norm_op(OpCall& c) {
  const Tensor& x = c.in[0];
  const int64_t n = c.attrs.i0;
  const bool has_w = c.attrs.i1 & 1, has_b = kCenter && (c.attrs.i1 & 2);
  const int64_t rows = n == 0 ? 0 : x.numel() / n;
  if (rows == 0) return;
  const int dev = device_of(x);
  DeviceGuard guard(dev);
  const gpuStream_t s = stream_of(dev);
  const char* op = op_name(c.op);
  detail::dispatch_types<detail::kFloatMask>(x.dtype(), op, [&]<class T>() {
    using A = acc_t<T>;
    const T* xp = static_cast<const T*>(x.data_ptr());
    const T* w = has_w ? static_cast<const T*>(c.in[1].data_ptr()) : nullptr;
    const T* b = has_b ? static_cast<const T*>(c.in[has_w ? 2 : 1].data_ptr()) : nullptr;
    T* y = static_cast<T*>(c.out[0].data_ptr());
    A* mean = kCenter ? static_cast<A*>(c.out[1].data_ptr()) : nullptr;
    A* rstd = static_cast<A*>(c.out[kCenter ? 2 : 1].data_ptr());
    const A eps = static_cast<A>(c.attrs.s0.to<double>());
    const bool aligned =
        aligned16(xp) && aligned16(y) && (!w || aligned16(w)) && (!b || aligned16(b));
    const int ws = device_info(dev).warp_size;
    if constexpr (std::is_same_v<T, float>) {
      // float32 rows of 5-6 vectors per lane of one warp (768: GPT-2's width) take the
      // persistent kernel with six vectors (Note [Persistent layer_norm forward]); the masked
      // lanes of a shorter row load nothing. (16-bit rows of six vectors spill there.)
      const int64_t per_vec = static_cast<int64_t>(ws) * vec_width<T>();
      const int64_t need = (n + per_vec - 1) / per_vec;
      if (aligned && n % vec_width<T>() == 0 && need > 4 && need <= 6 && kWarpBlock % ws == 0) {
        const unsigned blocks6 = grid_for(rows, kWarpBlock / ws);
        const unsigned grid = std::min<unsigned>(
            blocks6,
            static_cast<unsigned>(kPersistBlocks * device_info(dev).multi_processor_count));
        norm_fwd_persistent_kernel<T, 6>
            <<<grid, kWarpBlock, 0, s>>>(xp, w, b, y, mean, rstd, rows, n, kCenter, eps);
        return;
      }
    }
    const RowGeom g = norm_fwd_geom(n, vec_width<T>(), ws, aligned);
    const unsigned blocks = grid_for(rows, g.rows_per_block);
#define KILN_NORM_FWD_WARP(VPT) \
  norm_fwd_warp_kernel<T, VPT>  \
      <<<blocks, kWarpBlock, 0, s>>>(xp, w, b, y, mean, rstd, rows, n, g.tpr, g.vec, kCenter, eps)
#define KILN_NORM_FWD(VPT) \
  norm_fwd_kernel<T, VPT>  \
      <<<blocks, g.threads, 0, s>>>(xp, w, b, y, mean, rstd, rows, n, g.tpr, g.vec, kCenter, eps)
    if (g.vpt > 0 && g.vpt <= 3 && g.tpr == ws && g.vec) {
      // One wave: __launch_bounds__ guarantees kPersistBlocks blocks per multiprocessor.
      const unsigned grid = std::min<unsigned>(
          blocks, static_cast<unsigned>(kPersistBlocks * device_info(dev).multi_processor_count));
#define KILN_NORM_FWD_PERSIST(VPT)   \
  norm_fwd_persistent_kernel<T, VPT> \
      <<<grid, kWarpBlock, 0, s>>>(xp, w, b, y, mean, rstd, rows, n, kCenter, eps)
      if (g.vpt == 1)
        KILN_NORM_FWD_PERSIST(1);
      else if (g.vpt == 2)
        KILN_NORM_FWD_PERSIST(2);
      else
        KILN_NORM_FWD_PERSIST(3);
#undef KILN_NORM_FWD_PERSIST
    } else if (g.vpt > 0 && g.tpr <= ws) {
      switch (g.vpt) {
        case 1:
          KILN_NORM_FWD_WARP(1);
          break;
        case 2:
          KILN_NORM_FWD_WARP(2);
          break;
        case 3:
          KILN_NORM_FWD_WARP(3);
          break;
        default:
          KILN_NORM_FWD_WARP(4);
      }
    } else
      switch (g.vpt) {
        case 1:
          KILN_NORM_FWD(1);
          break;
        case 2:
          KILN_NORM_FWD(2);
          break;
        case 4:
          KILN_NORM_FWD(4);
          break;
        default:
          norm_fwd_long_kernel<T>
              <<<grid_for(rows, 1), kMaxThreads, 0, s>>>(xp, w, b, y, mean, rstd, n, kCenter, eps);
      }
#undef KILN_NORM_FWD
#undef KILN_NORM_FWD_WARP
  });
  check(op, s);
}

// in = (grad, x, [mean], rstd, [w]); out = (dx, [dw], [db]) (i1 bits 4 / 8).
template <bool kCenter>
void norm_backward_op(OpCall& c) {
  const Tensor& x = c.in[1];
  const int64_t n = c.attrs.i0;
  const bool has_w = c.attrs.i1 & 1, want_dw = c.attrs.i1 & 4, want_db = c.attrs.i1 & 8;
  const int64_t rows = n == 0 ? 0 : x.numel() / n;
  const int dev = device_of(x);
  DeviceGuard guard(dev);
  const gpuStream_t s = stream_of(dev);
  const char* op = op_name(c.op);
  detail::dispatch_types<detail::kFloatMask>(x.dtype(), op, [&]<class T>() {
    using A = acc_t<T>;
    int next = 2;
    const A* mean = kCenter ? static_cast<const A*>(c.in[next++].data_ptr()) : nullptr;
    const A* rstd = static_cast<const A*>(c.in[next++].data_ptr());
    const T* w = has_w ? static_cast<const T*>(c.in[next++].data_ptr()) : nullptr;
    const T* gp = static_cast<const T*>(c.in[0].data_ptr());
    const T* xp = static_cast<const T*>(x.data_ptr());
    T* dx = static_cast<T*>(c.out[0].data_ptr());
    T* dw = want_dw ? static_cast<T*>(c.out[1].data_ptr()) : nullptr;
    T* db = want_db ? static_cast<T*>(c.out[want_dw ? 2 : 1].data_ptr()) : nullptr;
    if (rows == 0) {
      // No rows: the parameter gradients are zero sums.
      if (dw) gpuMemsetAsync(dw, 0, n * sizeof(T), s);
      if (db) gpuMemsetAsync(db, 0, n * sizeof(T), s);
      return;
    }
    const bool aligned = aligned16(gp) && aligned16(xp) && aligned16(dx) && (!w || aligned16(w));
    if constexpr (!std::is_same_v<T, double>) {
      // Note [Fused layer_norm backward]: dx and the partial sums in one pass.
      const int ws = device_info(dev).warp_size;
      const int64_t per_vec = static_cast<int64_t>(ws) * vec_width<T>();
      const int64_t need = (n + per_vec - 1) / per_vec;
      const int wpb = kFusedBwdThreads / ws;
      const size_t smem = static_cast<size_t>(wpb) * static_cast<size_t>(n) * sizeof(A);
      if ((dw || db) && aligned && n % vec_width<T>() == 0 &&
          need * vec_width<T>() <= kFusedBwdMaxElems && smem <= kFusedBwdMaxSmem) {
        const int64_t sms = device_info(dev).multi_processor_count;
        const int64_t blocks = std::max<int64_t>(
            1, std::min<int64_t>((rows + wpb - 1) / wpb, kFusedBwdBlocksPerSm * sms));
        Tensor part = scratch<A>(2 * blocks * n, x.device());
        A* pw = static_cast<A*>(part.data_ptr());
        A* pb = pw + blocks * n;
#define KILN_NORM_BWD_FUSED(VPT)                                                               \
  norm_bwd_fused_kernel<T, VPT><<<static_cast<unsigned>(blocks), kFusedBwdThreads, smem, s>>>( \
      gp, xp, mean, rstd, w, dx, dw ? pw : nullptr, db ? pb : nullptr, rows, n, kCenter)
        if (need <= 1)
          KILN_NORM_BWD_FUSED(1);
        else if (need <= 2)
          KILN_NORM_BWD_FUSED(2);
        else if (need <= 3)
          KILN_NORM_BWD_FUSED(3);
        else if constexpr (6 * vec_width<T>() <= kFusedBwdMaxElems)
          KILN_NORM_BWD_FUSED(6);
#undef KILN_NORM_BWD_FUSED
        norm_param_rows_finish_kernel<T>
            <<<static_cast<unsigned>((n + kColTile - 1) / kColTile), kColTile * kFinishLanes, 0,
               s>>>(dw ? pw : nullptr, db ? pb : nullptr, dw, db, blocks, n);
        return;
      }
    }
    const RowGeom g = row_geom(n, vec_width<T>(), device_info(dev).warp_size, aligned);
    const unsigned blocks = grid_for(rows, g.rows_per_block);
#define KILN_NORM_BWD(VPT) \
  norm_bwd_kernel<T, VPT>  \
      <<<blocks, g.threads, 0, s>>>(gp, xp, mean, rstd, w, dx, rows, n, g.tpr, g.vec, kCenter)
    switch (g.vpt) {
      case 1:
        KILN_NORM_BWD(1);
        break;
      case 2:
        KILN_NORM_BWD(2);
        break;
      case 4:
        KILN_NORM_BWD(4);
        break;
      default:
        norm_bwd_long_kernel<T>
            <<<grid_for(rows, 1), kMaxThreads, 0, s>>>(gp, xp, mean, rstd, w, dx, n, kCenter);
    }
#undef KILN_NORM_BWD
    if (!dw && !db) return;
    // About 4 blocks per SM over (column tiles x row chunks); at least 32 rows per chunk.
    const int64_t tiles = (n + kColTile - 1) / kColTile;
    const int64_t want = 4 * static_cast<int64_t>(device_info(dev).multi_processor_count);
    int64_t chunks = (want + tiles - 1) / tiles;
    chunks = std::max<int64_t>(1, std::min<int64_t>(chunks, (rows + 31) / 32));
    const int64_t chunk = (rows + chunks - 1) / chunks;
    chunks = (rows + chunk - 1) / chunk;
    Tensor ws = scratch<A>(2 * chunks * n, x.device());
    A* pw = static_cast<A*>(ws.data_ptr());
    A* pb = pw + chunks * n;
    norm_param_partial_kernel<T>
        <<<dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(chunks)), kColTile * kRowLanes,
           0, s>>>(gp, xp, mean, rstd, dw ? pw : nullptr, db ? pb : nullptr, rows, n, chunk,
                   kCenter);
    norm_param_finish_kernel<T><<<grid_for(n, 256), 256, 0, s>>>(pw, pb, dw, db, chunks, n);
  });
  check(op, s);
}

}  // namespace

void register_nn_norm_kernels(detail::KernelRegistry& r) {
  r.set(OpId::LayerNorm, kCUDA, &norm_op<true>);
  r.set(OpId::RmsNorm, kCUDA, &norm_op<false>);
  r.set(OpId::LayerNormBackward, kCUDA, &norm_backward_op<true>);
  r.set(OpId::RmsNormBackward, kCUDA, &norm_backward_op<false>);
}

}  // namespace kiln::gpu
