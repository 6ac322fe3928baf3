// Helpers shared by the GPU index, shape and scan kernels: launch geometry, element-size and
// index-type dispatch, raw copies through the registered GPU copy kernel, and atomic combines.
#pragma once

#include "backend/gpu/vendor.h"

#include <cstdint>
#include <type_traits>

#include "backend/gpu/runtime.h"
#include "backend/gpu/stream.h"
#include "core/dispatch_dtype.h"
#include "dispatch/registry.h"
#include "kernels/convert.h"
#include "kernels/gpu/kernel_error.cuh"
#include "kernels/gpu/offset_calc.cuh"
#include "ops/op.h"
#include "ops/tensor_factory.h"

namespace kiln::gpu::idx {

inline constexpr int kThreads = 256;

inline unsigned blocks_for(int64_t n, int threads = kThreads) {
  int64_t b = (n + threads - 1) / threads;
  if (b < 1) b = 1;
  return static_cast<unsigned>(b < (int64_t{1} << 20) ? b : (int64_t{1} << 20));
}

inline int device_of(const Tensor& t) {
  int i = t.device().index;
  return i >= 0 ? i : current_device();
}

inline gpuStream_t as_stream(StreamHandle s) { return reinterpret_cast<gpuStream_t>(s); }

// Grid-stride loop over [0, n) with 64-bit indices.
#define KILN_GRID_LOOP(i, n)                                                             \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)

struct alignas(16) Raw16 {
  uint64_t lo, hi;
};

// f.template operator()<U>() with U an unsigned type (or Raw16) of the element size.
template <class F>
decltype(auto) dispatch_raw(int64_t size, F&& f) {
  switch (size) {
    case 1:
      return f.template operator()<uint8_t>();
    case 2:
      return f.template operator()<uint16_t>();
    case 4:
      return f.template operator()<uint32_t>();
    case 8:
      return f.template operator()<uint64_t>();
    default:
      KILN_ASSERT(size == 16, "element size ", size);
      return f.template operator()<Raw16>();
  }
}

// f.template operator()<IT>() for an int64 or int32 index tensor.
template <class F>
decltype(auto) dispatch_index(DType d, F&& f) {
  if (d == DType::Int32) return f.template operator()<int32_t>();
  KILN_ASSERT(d == DType::Int64, "index dtype");
  return f.template operator()<int64_t>();
}

// dst <- src (broadcast, cast, any strides) with the GPU copy kernel, no op-layer hooks.
inline void gpu_copy(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0 || dst.is_same(src)) return;
  OpCall c(OpId::Copy);
  c.in.push_back(src);
  c.out.push_back(dst);
  c.compute = dst.dtype();
  ::kiln::detail::find_kernel(OpId::Copy, kCUDA)(c);
}

// dst <- v (converted as fill_ converts it), any strides, with the GPU fill kernel.
inline void gpu_fill(const Tensor& dst, const Scalar& v) {
  if (dst.numel() == 0) return;
  OpCall c(OpId::Fill);
  c.out.push_back(dst);
  c.attrs.s0 = v;
  c.attrs.has_s0 = true;
  ::kiln::detail::find_kernel(OpId::Fill, kCUDA)(c);
}

// A contiguous tensor of t's shape and dtype on t's device.
inline Tensor empty_like_contig(const Tensor& t) {
  return ::kiln::detail::empty_impl(t.sizes(), t.dtype(), t.device());
}

template <class IT>
__device__ __forceinline__ int64_t wrap_idx(IT v, int64_t n) {
  int64_t i = static_cast<int64_t>(v);
  return i < 0 ? i + n : i;
}

// ---- atomic read-modify-write of any element type through compare-and-swap -------------------
template <class T, class F>
__device__ __forceinline__ void atomic_rmw(T* p, F f) {
  if constexpr (sizeof(T) == 8) {
    auto* a = reinterpret_cast<unsigned long long*>(p);
    unsigned long long old = *a, assumed;
    do {
      assumed = old;
      T cur;
      memcpy(&cur, &assumed, 8);
      T nv = f(cur);
      unsigned long long nb;
      memcpy(&nb, &nv, 8);
      old = atomicCAS(a, assumed, nb);
    } while (old != assumed);
  } else if constexpr (sizeof(T) == 4) {
    auto* a = reinterpret_cast<unsigned int*>(p);
    unsigned int old = *a, assumed;
    do {
      assumed = old;
      T cur;
      memcpy(&cur, &assumed, 4);
      T nv = f(cur);
      unsigned int nb;
      memcpy(&nb, &nv, 4);
      old = atomicCAS(a, assumed, nb);
    } while (old != assumed);
  } else {
    static_assert(sizeof(T) == 1 || sizeof(T) == 2, "atomic_rmw: element size");
    // The aligned 32-bit word that holds the element.
    const uintptr_t addr = reinterpret_cast<uintptr_t>(p);
    auto* a = reinterpret_cast<unsigned int*>(addr & ~uintptr_t{3});
    const unsigned shift = static_cast<unsigned>(addr & 3) * 8;
    const unsigned mask = (sizeof(T) == 1 ? 0xffu : 0xffffu) << shift;
    unsigned int old = *a, assumed;
    do {
      assumed = old;
      std::conditional_t<sizeof(T) == 1, uint8_t, uint16_t> bits =
          static_cast<std::conditional_t<sizeof(T) == 1, uint8_t, uint16_t>>((assumed & mask) >>
                                                                             shift);
      T cur;
      memcpy(&cur, &bits, sizeof(T));
      T nv = f(cur);
      memcpy(&bits, &nv, sizeof(T));
      unsigned int nb = (assumed & ~mask) | (static_cast<unsigned>(bits) << shift);
      old = atomicCAS(a, assumed, nb);
    } while (old != assumed);
  }
}

}  // namespace kiln::gpu::idx
