// Generic GPU elementwise kernels over the functors of kernels/functors.h: gpu_unary<F, Mask>,
// gpu_binary, gpu_ternary (the GPU twins of kernels/cpu/loops.h). One kernel per (functor,
// dtype) holds a vectorized contiguous path and a strided path (Note [GPU elementwise kernels]).
#pragma once

#include "backend/gpu/vendor.h"

#include <cstring>
#include <type_traits>

#include "backend/gpu/runtime.h"
#include "backend/gpu/stream.h"
#include "core/dispatch_dtype.h"
#include "kernels/convert.h"
#include "kernels/functors.h"
#include "kernels/gpu/offset_calc.cuh"
#include "kernels/gpu/small_batch.cuh"
#include "ops/op.h"

namespace kiln::gpu {

// Note [GPU elementwise kernels]
// Compile time is the constraint (about 750 functor x dtype pairs, built for two architectures
// in CI), so each pair is ONE kernel: a run-time flag picks the contiguous path (each thread
// loads kUnroll vectors of 16 bytes per input, computes, stores 16 bytes) or the strided path
// (OffsetCalc: broadcasting, any strides; linear indices coalesced across the block). Inputs are
// cast to the compute dtype before the kernel (as on the CPU), so a kernel never converts
// between storage types other than its own. Inputs that are 0-dim CPU tensors (wrapped numbers)
// travel by value in the kernel arguments; device tensors broadcast from one element are read
// once. Index arithmetic is 64-bit with 32-bit divisions where the values fit (OffsetCalc).
inline constexpr int kElemBlock = 128;
inline constexpr int kElemUnroll = 2;

// Input modes.
inline constexpr uint8_t kInDense = 0;       // contiguous (contiguous path) or via OffsetCalc
inline constexpr uint8_t kInBroadcast = 1;   // one element on the device, read once
inline constexpr uint8_t kInHostScalar = 2;  // value in ElemArgs::scalar
static_assert(kInDense == kSmallDense && kInBroadcast == kSmallBroadcast &&
              kInHostScalar == kSmallHostScalar);  // small_batch.cuh reads these modes

template <int N>
struct ElemArgs {
  char* out;
  const char* in[N];
  int64_t n;
  bool contiguous;  // out and the dense inputs contiguous (else: oc)
  bool vec_ok;      // contiguous and every dense pointer aligned for vector access
  uint8_t mode[N];
  alignas(16) unsigned char scalar[N][16];
  OffsetCalc<N + 1> oc;  // operand 0 is the output
};

template <class T, int V>
struct alignas(sizeof(T) * V) VecOf {
  T v[V];
};

template <class... Ts>
constexpr int max_size() {
  int m = 1;
  ((m = m < static_cast<int>(sizeof(Ts)) ? static_cast<int>(sizeof(Ts)) : m), ...);
  return m;
}

// The functor's call, out of line: compiled once per (functor, compute type) however many
// storage types, paths and unrolled copies call it (Note [GPU elementwise kernels]).
template <class F, class... C>
__device__ __noinline__ auto call_out_of_line(F f, C... x) {
  return f(x...);
}

// Applies F<C> to storage values and converts to O. A0 is the first input's storage type (bool
// for where's condition), T the others'. kInline: the functor is inlined (hot, cheap ops).
template <class F, class O, class C0, class C, bool kInline>
struct Apply {
  F f;
  template <class A0, class... A>
  __device__ __forceinline__ O operator()(A0 x0, A... x) const {
    if constexpr (kInline)
      return ::kiln::detail::convert<O>(
          f(::kiln::detail::convert<C0>(x0), ::kiln::detail::convert<C>(x)...));
    else
      return ::kiln::detail::convert<O>(
          call_out_of_line(f, ::kiln::detail::convert<C0>(x0), ::kiln::detail::convert<C>(x)...));
  }
};

template <class T, int N>
__device__ __forceinline__ T elem_scalar(const ElemArgs<N>& a, int k) {
  T v;
  memcpy(&v, a.scalar[k], sizeof(T));
  return v;
}

template <int N, int V, class Op, class O, class A0, class T>
__global__ void __launch_bounds__(kElemBlock) elementwise_kernel(Op op, ElemArgs<N> a) {
  const int64_t block_base = static_cast<int64_t>(blockIdx.x) * kElemBlock * V * kElemUnroll;
  if (a.contiguous) {
    O* out = reinterpret_cast<O*>(a.out);
    const A0* p0 = reinterpret_cast<const A0*>(a.in[0]);
    const T* p1 = N > 1 ? reinterpret_cast<const T*>(a.in[1]) : nullptr;
    const T* p2 = N > 2 ? reinterpret_cast<const T*>(a.in[2]) : nullptr;
    // Broadcast and host-scalar inputs: one value for the whole thread.
    A0 s0{};
    T s1{}, s2{};
    if (a.mode[0] == kInBroadcast) s0 = p0[0];
    if (a.mode[0] == kInHostScalar) s0 = elem_scalar<A0>(a, 0);
    if constexpr (N > 1) {
      if (a.mode[1] == kInBroadcast) s1 = p1[0];
      if (a.mode[1] == kInHostScalar) s1 = elem_scalar<T>(a, 1);
    }
    if constexpr (N > 2) {
      if (a.mode[2] == kInBroadcast) s2 = p2[0];
      if (a.mode[2] == kInHostScalar) s2 = elem_scalar<T>(a, 2);
    }
    const int64_t first = block_base + static_cast<int64_t>(threadIdx.x) * V;
    if (a.vec_ok && block_base + kElemBlock * V * kElemUnroll <= a.n) {
      // Full block: every load first (bytes in flight), then compute and store.
      A0 x0[kElemUnroll][V];
      T x1[kElemUnroll][N > 1 ? V : 1], x2[kElemUnroll][N > 2 ? V : 1];
#pragma unroll
      for (int u = 0; u < kElemUnroll; ++u) {
        const int64_t i = first + static_cast<int64_t>(u) * kElemBlock * V;
        if (a.mode[0] == kInDense) {
          auto v = *reinterpret_cast<const VecOf<A0, V>*>(p0 + i);
#pragma unroll
          for (int k = 0; k < V; ++k) x0[u][k] = v.v[k];
        } else {
#pragma unroll
          for (int k = 0; k < V; ++k) x0[u][k] = s0;
        }
        if constexpr (N > 1) {
          if (a.mode[1] == kInDense) {
            auto v = *reinterpret_cast<const VecOf<T, V>*>(p1 + i);
#pragma unroll
            for (int k = 0; k < V; ++k) x1[u][k] = v.v[k];
          } else {
#pragma unroll
            for (int k = 0; k < V; ++k) x1[u][k] = s1;
          }
        }
        if constexpr (N > 2) {
          if (a.mode[2] == kInDense) {
            auto v = *reinterpret_cast<const VecOf<T, V>*>(p2 + i);
#pragma unroll
            for (int k = 0; k < V; ++k) x2[u][k] = v.v[k];
          } else {
#pragma unroll
            for (int k = 0; k < V; ++k) x2[u][k] = s2;
          }
        }
      }
#pragma unroll
      for (int u = 0; u < kElemUnroll; ++u) {
        VecOf<O, V> r;
#pragma unroll
        for (int k = 0; k < V; ++k) {
          if constexpr (N == 1)
            r.v[k] = op(x0[u][k]);
          else if constexpr (N == 2)
            r.v[k] = op(x0[u][k], x1[u][k]);
          else
            r.v[k] = op(x0[u][k], x1[u][k], x2[u][k]);
        }
        *reinterpret_cast<VecOf<O, V>*>(out + first + static_cast<int64_t>(u) * kElemBlock * V) = r;
      }
      return;
    }
    // The tail (or unaligned data): element by element.
    for (int u = 0; u < kElemUnroll; ++u)
      for (int k = 0; k < V; ++k) {
        const int64_t i = first + static_cast<int64_t>(u) * kElemBlock * V + k;
        if (i >= a.n) continue;
        A0 v0 = a.mode[0] == kInDense ? p0[i] : s0;
        if constexpr (N == 1) {
          out[i] = op(v0);
        } else if constexpr (N == 2) {
          out[i] = op(v0, a.mode[1] == kInDense ? p1[i] : s1);
        } else {
          out[i] = op(v0, a.mode[1] == kInDense ? p1[i] : s1, a.mode[2] == kInDense ? p2[i] : s2);
        }
      }
    return;
  }
  // Strided path: consecutive threads take consecutive linear indices.
  for (int u = 0; u < V * kElemUnroll; ++u) {
    const int64_t i = block_base + static_cast<int64_t>(u) * kElemBlock + threadIdx.x;
    if (i >= a.n) return;
    int64_t off[N + 1];
    a.oc.get(i, off);
    A0 v0 = a.mode[0] == kInHostScalar ? elem_scalar<A0>(a, 0)
                                       : reinterpret_cast<const A0*>(a.in[0])[off[1]];
    O r;
    if constexpr (N == 1) {
      r = op(v0);
    } else {
      T v1 = a.mode[1] == kInHostScalar ? elem_scalar<T>(a, 1)
                                        : reinterpret_cast<const T*>(a.in[1])[off[2]];
      if constexpr (N == 2) {
        r = op(v0, v1);
      } else {
        T v2 = a.mode[2] == kInHostScalar ? elem_scalar<T>(a, 2)
                                          : reinterpret_cast<const T*>(a.in[2])[off[3]];
        r = op(v0, v1, v2);
      }
    }
    reinterpret_cast<O*>(a.out)[off[0]] = r;
  }
}

// ---- host side -------------------------------------------------------------------------------

// fn::Params from c.attrs (as the CPU's make_params) and the input cast to c.compute (inputs
// from c.promote_from on), both in elementwise.cu.
fn::Params elem_params(const OpAttrs& a);
void elem_cast_inputs(OpCall& c);
// Fills everything in `a` but the kernel-specific vec_ok; returns the device of the output and
// its current stream. `elem_sizes[k]` is the element size of operand k (0 = the output).
struct ElemLaunch {
  int device;
  uintptr_t stream;
};
template <int N>
ElemLaunch elem_prepare(OpCall& c, ElemArgs<N>& a);
unsigned elem_blocks(int64_t n, int per_thread);

template <int N, class Op, class O, class A0, class T>
void elem_launch(OpCall& c, const Op& op) {
  ElemArgs<N> a;
  ElemLaunch l = elem_prepare<N>(c, a);
  if (a.n == 0) return;
  // Note [Deferred small launches]: small contiguous ops join the pending batch.
  if (a.contiguous && small_defer<N, Op, O, A0, T>(op, a, l.device, l.stream)) return;
  flush_small_ops_if_pending();
  DeviceGuard guard(l.device);
  constexpr int kV0 = 16 / max_size<O, A0, T>();
  constexpr int V = kV0 < 1 ? 1 : (kV0 > 8 ? 8 : kV0);
  a.vec_ok = a.contiguous && reinterpret_cast<uintptr_t>(a.out) % (V * sizeof(O)) == 0;
  const size_t isz[3] = {sizeof(A0), sizeof(T), sizeof(T)};
  for (int k = 0; k < N; ++k)
    if (a.mode[k] == kInDense && reinterpret_cast<uintptr_t>(a.in[k]) % (V * isz[k]) != 0)
      a.vec_ok = false;
  elementwise_kernel<N, V, Op, O, A0, T><<<elem_blocks(a.n, V * kElemUnroll), kElemBlock, 0,
                                           reinterpret_cast<gpuStream_t>(l.stream)>>>(op, a);
  check_launch(op_name(c.op), l.stream);
}

// The storage type of a functor's result R when the compute type is C and the storage type T.
template <class T, class C, class R>
using elem_out_t = std::conditional_t<std::is_same_v<R, C>, T, R>;

template <template <class> class F, uint32_t Mask, bool kInline = false>
void gpu_unary(OpCall& c) {
  elem_cast_inputs(c);
  fn::Params p = elem_params(c.attrs);
  ::kiln::detail::dispatch_types<Mask>(c.compute, op_name(c.op), [&]<class T>() {
    using C = ::kiln::detail::opmath_t<T>;
    using R = std::decay_t<decltype(std::declval<const F<C>&>()(C()))>;
    using O = elem_out_t<T, C, R>;
    KILN_ASSERT(c.out[0].dtype() == dtype_of<O>(), "unary output dtype mismatch");
    elem_launch<1, Apply<F<C>, O, C, C, kInline>, O, T, T>(c,
                                                           Apply<F<C>, O, C, C, kInline>{F<C>(p)});
  });
}

template <template <class> class F, uint32_t Mask, bool kInline = false>
void gpu_binary(OpCall& c) {
  elem_cast_inputs(c);
  fn::Params p = elem_params(c.attrs);
  ::kiln::detail::dispatch_types<Mask>(c.compute, op_name(c.op), [&]<class T>() {
    using C = ::kiln::detail::opmath_t<T>;
    using R = std::decay_t<decltype(std::declval<const F<C>&>()(C(), C()))>;
    using O = elem_out_t<T, C, R>;
    KILN_ASSERT(c.out[0].dtype() == dtype_of<O>(), "binary output dtype mismatch");
    elem_launch<2, Apply<F<C>, O, C, C, kInline>, O, T, T>(c,
                                                           Apply<F<C>, O, C, C, kInline>{F<C>(p)});
  });
}

// Inputs before c.promote_from keep their dtype (where's bool condition): storage type Cond.
template <template <class> class F, uint32_t Mask, class Cond = void, bool kInline = false>
void gpu_ternary(OpCall& c) {
  elem_cast_inputs(c);
  fn::Params p = elem_params(c.attrs);
  ::kiln::detail::dispatch_types<Mask>(c.compute, op_name(c.op), [&]<class T>() {
    using C = ::kiln::detail::opmath_t<T>;
    using A0 = std::conditional_t<std::is_void_v<Cond>, T, Cond>;
    using C0 = std::conditional_t<std::is_void_v<Cond>, C, Cond>;
    using R = std::decay_t<decltype(std::declval<const F<C>&>()(C0(), C(), C()))>;
    using O = elem_out_t<T, C, R>;
    KILN_ASSERT(c.out[0].dtype() == dtype_of<O>(), "ternary output dtype mismatch");
    if constexpr (!std::is_void_v<Cond>)
      KILN_ASSERT(c.in[0].dtype() == dtype_of<Cond>(), "ternary condition dtype mismatch");
    elem_launch<3, Apply<F<C>, O, C0, C, kInline>, O, A0, T>(
        c, Apply<F<C>, O, C0, C, kInline>{F<C>(p)});
  });
}

}  // namespace kiln::gpu
