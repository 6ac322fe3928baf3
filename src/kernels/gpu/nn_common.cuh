// Shared pieces of the nn GPU kernels (nn_*_kernels.cu): launch context, 16-byte vectors, row
// geometry of the register-resident row kernels, and deterministic group/block reductions.
#pragma once

#include "backend/gpu/vendor.h"

#include <type_traits>

#include "backend/gpu/runtime.h"
#include "backend/gpu/stream.h"
#include "core/dispatch_dtype.h"
#include "dispatch/registry.h"
#include "kernels/convert.h"
#include "kernels/gpu/warp.cuh"
#include "ops/op.h"
#include "ops/tensor_factory.h"

namespace kiln::gpu::nnk {

// Accumulation type: double for float64, float otherwise (16-bit floats compute in float).
template <class T>
using acc_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Elements of T in one 16-byte vector.
template <class T>
constexpr int vec_width() {
  return static_cast<int>(16 / sizeof(T));
}

template <class T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

template <class A, class T>
__device__ __forceinline__ A ld(const T& v) {
  return ::kiln::detail::convert<A>(v);
}
template <class T, class A>
__device__ __forceinline__ T st(A v) {
  return ::kiln::detail::convert<T>(v);
}

inline int device_of(const Tensor& t) {
  return t.device().index >= 0 ? t.device().index : current_device();
}
inline gpuStream_t stream_of(int dev) { return reinterpret_cast<gpuStream_t>(current_stream(dev)); }
inline void check(const char* op, gpuStream_t s) {
  check_launch(op, reinterpret_cast<StreamHandle>(s));
}
inline bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// A device buffer of `n` elements of T from the caching allocator (freed with the tensor, stream
// ordered like every kiln temporary).
template <class T>
Tensor scratch(int64_t n, Device d) {
  return ::kiln::detail::empty_impl({static_cast<int64_t>(n * sizeof(T))}, DType::UInt8, d);
}

// Note [GPU row kernels]
// ----------------------
// Softmax, layer/rms norm and their backward ops keep a whole row in registers when it fits:
// a group of `tpr` threads owns one row, and each thread holds VPT 16-byte vectors (E = VPT * V
// elements, V = 16 / sizeof(T)); element j of vector k of thread t is at row index
// (k * tpr + t) * V + j, so a warp's loads are contiguous. The row is read once and written
// once. tpr is a power of two up to the warp width (several rows per warp, shuffle reductions)
// or a multiple of the warp width (the group's warps combine through shared memory); a block
// holds rows_per_block groups. Rows too long for kRowThreads threads x 4 vectors take a two-pass
// kernel (online max/sum, then the write). Reductions combine in a fixed order: results do not
// depend on timing, and equal inputs give equal bits.
// Largest row group of the register-resident kernels (512: up to 128 registers per thread).
inline constexpr int kRowThreads = 512;

struct RowGeom {
  int vpt = 0;  // 0: the row does not fit (two-pass kernel)
  int tpr = 1, rows_per_block = 1, threads = 1;
  bool vec = false;  // 16-byte loads (row length a multiple of V, pointers aligned)
};

inline RowGeom row_geom(int64_t n, int V, int ws, bool aligned) {
  RowGeom g;
  g.vec = aligned && n % V == 0;
  for (int vpt : {1, 2, 4}) {
    const int64_t need = (n + static_cast<int64_t>(vpt) * V - 1) / (static_cast<int64_t>(vpt) * V);
    if (need > ws) continue;
    int tpr = 1;
    while (tpr < need) tpr *= 2;
    g.vpt = vpt;
    g.tpr = tpr;
    g.rows_per_block = 128 / tpr > 0 ? 128 / tpr : 1;
    g.threads = g.tpr * g.rows_per_block;
    return g;
  }
  for (int vpt : {1, 2, 4}) {
    const int64_t need = (n + static_cast<int64_t>(vpt) * V - 1) / (static_cast<int64_t>(vpt) * V);
    int64_t tpr = 1;
    if (need <= ws) {
      while (tpr < need) tpr *= 2;
    } else {
      tpr = (need + ws - 1) / ws * ws;
    }
    if (tpr <= kRowThreads) {
      g.vpt = vpt;
      g.tpr = static_cast<int>(tpr);
      g.rows_per_block = g.tpr >= 256 ? 1 : (g.tpr > ws ? 256 / g.tpr : 128 / g.tpr);
      if (g.rows_per_block < 1) g.rows_per_block = 1;
      g.threads = g.tpr * g.rows_per_block;
      return g;
    }
  }
  return g;
}

// Math on the accumulation type (kiln::exp & co. for complex numbers hide the global overloads).
__device__ __forceinline__ float dexp(float x) { return expf(x); }
__device__ __forceinline__ double dexp(double x) { return ::exp(x); }
__device__ __forceinline__ float dlog(float x) { return logf(x); }
__device__ __forceinline__ double dlog(double x) { return ::log(x); }
__device__ __forceinline__ float dsqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double dsqrt(double x) { return ::sqrt(x); }

template <class A>
struct SumOp {
  __device__ __forceinline__ A operator()(A a, A b) const { return a + b; }
};
// NaN-propagating max (as the CPU kernels: a NaN anywhere makes the row's max NaN).
template <class A>
struct MaxOp {
  __device__ __forceinline__ A operator()(A a, A b) const { return a > b || a != a ? a : b; }
};

// Largest block of the nn kernels, and its warps (shared memory for the group reductions).
inline constexpr int kMaxThreads = 1024;
inline constexpr int kMaxWarps = kMaxThreads / 16;

// Reduces v over the tpr threads of the calling thread's group (see Note [GPU row kernels]);
// every thread of the group gets the result. All threads of the block must call it.
template <class A, class Op>
__device__ __forceinline__ A group_reduce(A v, Op op, int tpr, A* smem) {
  if (tpr <= warp_size()) {
    for (int o = tpr / 2; o > 0; o /= 2) v = op(v, warp_shfl_xor(v, o));
    return v;
  }
  v = warp_all_reduce(v, op);
  const int warp = static_cast<int>(threadIdx.x) / warp_size();
  const int wpg = tpr / warp_size();
  const int first = warp / wpg * wpg;
  if (static_cast<int>(threadIdx.x) % warp_size() == 0) smem[warp] = v;
  __syncthreads();
  A r = smem[first];
  for (int k = 1; k < wpg; ++k) r = op(r, smem[first + k]);
  __syncthreads();  // smem is reused by the next reduction
  return r;
}

// Whole-block reduction (blockDim.x a multiple of the warp width).
template <class A, class Op>
__device__ __forceinline__ A block_reduce(A v, Op op, A* smem) {
  return group_reduce(v, op, static_cast<int>(blockDim.x), smem);
}

// Online softmax state (max m, sum of exp(x - m)) and its combination.
template <class A>
__device__ __forceinline__ void online_merge(A& m, A& s, A m2, A s2) {
  const A mn = MaxOp<A>()(m, m2);
  const A a = m == mn ? s : s * dexp(m - mn);
  const A b = m2 == mn ? s2 : s2 * dexp(m2 - mn);
  m = mn;
  s = a + b;
}

template <class A>
__device__ __forceinline__ void block_online_reduce(A& m, A& s, A* smem_m, A* smem_s) {
  for (int o = warp_size() / 2; o > 0; o /= 2) {
    const A m2 = warp_shfl_xor(m, o), s2 = warp_shfl_xor(s, o);
    online_merge(m, s, m2, s2);
  }
  const int warp = static_cast<int>(threadIdx.x) / warp_size();
  const int nw = static_cast<int>(blockDim.x) / warp_size();
  if (static_cast<int>(threadIdx.x) % warp_size() == 0) smem_m[warp] = m, smem_s[warp] = s;
  __syncthreads();
  m = smem_m[0];
  s = smem_s[0];
  for (int k = 1; k < nw; ++k) online_merge(m, s, smem_m[k], smem_s[k]);
  __syncthreads();
}

// One block: the sums of m per-element losses pl and weights pw, in a fixed order (double);
// writes out[0] = sum / total (mean) or sum (when out is given) and total[0] (when given).
template <class T>
__global__ void loss_finish_kernel(const double* pl, const double* pw, int64_t m, T* out, T* total,
                                   bool mean) {
  __shared__ double smem[kMaxWarps];
  double l = 0, w = 0;
  for (int64_t e = threadIdx.x; e < m; e += blockDim.x) l += pl[e], w += pw[e];
  l = block_reduce(l, SumOp<double>(), smem);
  w = block_reduce(w, SumOp<double>(), smem);
  if (threadIdx.x == 0) {
    if (out) *out = st<T>(static_cast<acc_t<T>>(mean ? l / w : l));
    if (total) *total = st<T>(static_cast<acc_t<T>>(w));
  }
}

inline unsigned grid_for(int64_t work, int threads) {
  int64_t b = (work + threads - 1) / threads;
  if (b < 1) b = 1;
  return static_cast<unsigned>(b < (int64_t{1} << 30) ? b : (int64_t{1} << 30));
}

}  // namespace kiln::gpu::nnk
