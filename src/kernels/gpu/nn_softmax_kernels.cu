// GPU kernels of softmax / log_softmax and their backward ops over one dim of a contiguous
// [outer, n, inner] tensor: register-resident rows (Note [GPU row kernels]), a two-pass kernel for
// rows too long for a block, and a column kernel for inner > 1.
#include "kernels/gpu/nn_common.cuh"

namespace kiln::gpu {
namespace {

using namespace nnk;

// Modes: forward softmax / log_softmax (in: x); backward (in: grad, y).
enum Mode { kSoftmax = 0, kLogSoftmax = 1, kSoftmaxBwd = 2, kLogSoftmaxBwd = 3 };

template <class T, int VPT, int M>
__global__ void __launch_bounds__(kRowThreads)
    softmax_rows_kernel(const T* a, const T* b, T* y, int64_t rows, int64_t n, int tpr, bool vec) {
  using A = acc_t<T>;
  constexpr int V = vec_width<T>();
  constexpr int E = VPT * V;
  constexpr bool kBwd = M >= kSoftmaxBwd;
  __shared__ A smem[kMaxWarps];
  const int t = static_cast<int>(threadIdx.x) % tpr;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / tpr) + threadIdx.x / tpr;
  const bool active = row < rows;
  const int64_t base = active ? row * n : 0;
  const A fill = kBwd ? A(0) : -static_cast<A>(INFINITY);
  A xa[E], xb[kBwd ? E : 1];
#pragma unroll
  for (int k = 0; k < VPT; ++k) {
    const int64_t i0 = (static_cast<int64_t>(k) * tpr + t) * V;
    if (active && vec && i0 < n) {
      const Vec<T, V> va = *reinterpret_cast<const Vec<T, V>*>(a + base + i0);
#pragma unroll
      for (int j = 0; j < V; ++j) xa[k * V + j] = ld<A>(va.v[j]);
      if constexpr (kBwd) {
        const Vec<T, V> vb = *reinterpret_cast<const Vec<T, V>*>(b + base + i0);
#pragma unroll
        for (int j = 0; j < V; ++j) xb[k * V + j] = ld<A>(vb.v[j]);
      }
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const bool in = active && i0 + j < n;
        xa[k * V + j] = in ? ld<A>(a[base + i0 + j]) : fill;
        if constexpr (kBwd) xb[k * V + j] = in ? ld<A>(b[base + i0 + j]) : A(0);
      }
    }
  }
  // Results overwrite xa (fewer live registers).
  if constexpr (!kBwd) {
    A m = fill;
#pragma unroll
    for (int e = 0; e < E; ++e) m = MaxOp<A>()(m, xa[e]);
    m = group_reduce(m, MaxOp<A>(), tpr, smem);
    A s = 0;
#pragma unroll
    for (int e = 0; e < E; ++e) s += dexp(xa[e] - m);
    s = group_reduce(s, SumOp<A>(), tpr, smem);
    if constexpr (M == kSoftmax) {
      const A r = A(1) / s;
#pragma unroll
      for (int e = 0; e < E; ++e) xa[e] = dexp(xa[e] - m) * r;
    } else {
      const A c = m + dlog(s);
#pragma unroll
      for (int e = 0; e < E; ++e) xa[e] = xa[e] - c;
    }
  } else {
    A s = 0;
#pragma unroll
    for (int e = 0; e < E; ++e) s += M == kSoftmaxBwd ? xa[e] * xb[e] : xa[e];
    s = group_reduce(s, SumOp<A>(), tpr, smem);
#pragma unroll
    for (int e = 0; e < E; ++e)
      xa[e] = M == kSoftmaxBwd ? xb[e] * (xa[e] - s) : xa[e] - dexp(xb[e]) * s;
  }
  if (!active) return;
#pragma unroll
  for (int k = 0; k < VPT; ++k) {
    const int64_t i0 = (static_cast<int64_t>(k) * tpr + t) * V;
    if (vec && i0 < n) {
      Vec<T, V> vo;
#pragma unroll
      for (int j = 0; j < V; ++j) vo.v[j] = st<T>(xa[k * V + j]);
      *reinterpret_cast<Vec<T, V>*>(y + base + i0) = vo;
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j)
        if (i0 + j < n) y[base + i0 + j] = st<T>(xa[k * V + j]);
    }
  }
}

// Rows too long for registers: one block per row, two passes (the second read mostly hits L2).
template <class T, int M>
__global__ void __launch_bounds__(kMaxThreads)
    softmax_long_kernel(const T* a, const T* b, T* y, int64_t n) {
  using A = acc_t<T>;
  constexpr bool kBwd = M >= kSoftmaxBwd;
  __shared__ A sm[kMaxWarps], ss[kMaxWarps];
  const int64_t base = static_cast<int64_t>(blockIdx.x) * n;
  const T* ra = a + base;
  const T* rb = kBwd ? b + base : nullptr;
  T* ry = y + base;
  if constexpr (!kBwd) {
    A m = -static_cast<A>(INFINITY), s = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const A v = ld<A>(ra[i]);
      online_merge(m, s, v, A(1));
    }
    block_online_reduce(m, s, sm, ss);
    const A r = A(1) / s, c = m + dlog(s);
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const A v = ld<A>(ra[i]);
      ry[i] = st<T>(M == kSoftmax ? dexp(v - m) * r : v - c);
    }
  } else {
    A s = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
      s += M == kSoftmaxBwd ? ld<A>(ra[i]) * ld<A>(rb[i]) : ld<A>(ra[i]);
    s = block_reduce(s, SumOp<A>(), sm);
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const A g = ld<A>(ra[i]), v = ld<A>(rb[i]);
      ry[i] = st<T>(M == kSoftmaxBwd ? v * (g - s) : g - dexp(v) * s);
    }
  }
}

// inner > 1: one thread per (outer, inner) column, walking the dim with stride inner.
template <class T, int M>
__global__ void softmax_cols_kernel(const T* a, const T* b, T* y, int64_t outer, int64_t n,
                                    int64_t inner) {
  using A = acc_t<T>;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= outer * inner) return;
  const int64_t base = col / inner * n * inner + col % inner;
  if constexpr (M < kSoftmaxBwd) {
    A m = -static_cast<A>(INFINITY), s = 0;
    for (int64_t i = 0; i < n; ++i) m = MaxOp<A>()(m, ld<A>(a[base + i * inner]));
    for (int64_t i = 0; i < n; ++i) s += dexp(ld<A>(a[base + i * inner]) - m);
    const A r = A(1) / s, c = m + dlog(s);
    for (int64_t i = 0; i < n; ++i) {
      const A v = ld<A>(a[base + i * inner]);
      y[base + i * inner] = st<T>(M == kSoftmax ? dexp(v - m) * r : v - c);
    }
  } else {
    A s = 0;
    for (int64_t i = 0; i < n; ++i) {
      const A g = ld<A>(a[base + i * inner]);
      s += M == kSoftmaxBwd ? g * ld<A>(b[base + i * inner]) : g;
    }
    for (int64_t i = 0; i < n; ++i) {
      const A g = ld<A>(a[base + i * inner]), v = ld<A>(b[base + i * inner]);
      y[base + i * inner] = st<T>(M == kSoftmaxBwd ? v * (g - s) : g - dexp(v) * s);
    }
  }
}

template <int M>
void softmax_op(OpCall& c) {
  constexpr bool kBwd = M >= kSoftmaxBwd;
  const Tensor& x = c.in[0];
  const int64_t dim = c.attrs.i0;
  int64_t outer = 1, n = 1, inner = 1;
  for (int64_t d = 0; d < x.dim(); ++d) (d < dim ? outer : d == dim ? n : inner) *= x.size(d);
  if (outer * n * inner == 0) return;
  const int dev = device_of(x);
  DeviceGuard guard(dev);
  const gpuStream_t s = stream_of(dev);
  const char* op = op_name(c.op);
  detail::dispatch_types<detail::kFloatMask>(x.dtype(), op, [&]<class T>() {
    const T* a = static_cast<const T*>(x.data_ptr());
    const T* b = kBwd ? static_cast<const T*>(c.in[1].data_ptr()) : nullptr;
    T* y = static_cast<T*>(c.out[0].data_ptr());
    if (inner > 1) {
      softmax_cols_kernel<T, M>
          <<<grid_for(outer * inner, 256), 256, 0, s>>>(a, b, y, outer, n, inner);
      return;
    }
    const bool aligned = aligned16(a) && aligned16(y) && (!kBwd || aligned16(b));
    const RowGeom g = row_geom(n, vec_width<T>(), device_info(dev).warp_size, aligned);
    const unsigned blocks = grid_for(outer, g.rows_per_block);
    switch (g.vpt) {
      case 1:
        softmax_rows_kernel<T, 1, M><<<blocks, g.threads, 0, s>>>(a, b, y, outer, n, g.tpr, g.vec);
        break;
      case 2:
        softmax_rows_kernel<T, 2, M><<<blocks, g.threads, 0, s>>>(a, b, y, outer, n, g.tpr, g.vec);
        break;
      case 4:
        softmax_rows_kernel<T, 4, M><<<blocks, g.threads, 0, s>>>(a, b, y, outer, n, g.tpr, g.vec);
        break;
      default:
        softmax_long_kernel<T, M><<<grid_for(outer, 1), kMaxThreads, 0, s>>>(a, b, y, n);
    }
  });
  check(op, s);
}

}  // namespace

void register_nn_softmax_kernels(detail::KernelRegistry& r) {
  r.set(OpId::Softmax, kCUDA, &softmax_op<kSoftmax>);
  r.set(OpId::LogSoftmax, kCUDA, &softmax_op<kLogSoftmax>);
  r.set(OpId::SoftmaxBackward, kCUDA, &softmax_op<kSoftmaxBwd>);
  r.set(OpId::LogSoftmaxBackward, kCUDA, &softmax_op<kLogSoftmaxBwd>);
}

}  // namespace kiln::gpu
