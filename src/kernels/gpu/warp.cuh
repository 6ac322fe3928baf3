// Warp-level helpers for GPU kernels: warp_size() (32 on NVIDIA, 64 on AMD CDNA), lane index and
// shuffles/ballots/reductions. Kernel code never writes the warp width or a shuffle directly.
#pragma once

#include <cstdint>

#include "backend/gpu/vendor.h"
#include "kiln/macros.h"

namespace kiln::gpu {

// The width of a warp (wavefront) of the code being compiled. On the host pass it is the
// vendor's usual width; host code asks the device (DeviceInfo::warp_size) instead.
__host__ __device__ constexpr int warp_size() {
#if KILN_HIP
#if defined(__AMDGCN_WAVEFRONT_SIZE)
  return __AMDGCN_WAVEFRONT_SIZE;
#else
  return 64;
#endif
#else
  return 32;  // the one place where NVIDIA's width is written
#endif
}

// A mask with one bit per lane of the warp.
#if KILN_HIP
using LaneMask = uint64_t;
#else
using LaneMask = uint32_t;
#endif
__device__ constexpr LaneMask full_lane_mask() { return ~LaneMask(0); }

__device__ inline int lane_id() {
#if KILN_CUDA
  unsigned id;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(id));  // inline PTX: NVIDIA only
  return static_cast<int>(id);
#else
  return static_cast<int>(threadIdx.x % warp_size());  // portable path
#endif
}

template <class T>
__device__ inline T warp_shfl(T v, int src_lane) {
#if KILN_CUDA
  return __shfl_sync(full_lane_mask(), v, src_lane, warp_size());
#else
  return __shfl(v, src_lane, warp_size());
#endif
}

template <class T>
__device__ inline T warp_shfl_xor(T v, int lane_mask) {
#if KILN_CUDA
  return __shfl_xor_sync(full_lane_mask(), v, lane_mask, warp_size());
#else
  return __shfl_xor(v, lane_mask, warp_size());
#endif
}

template <class T>
__device__ inline T warp_shfl_down(T v, unsigned delta) {
#if KILN_CUDA
  return __shfl_down_sync(full_lane_mask(), v, delta, warp_size());
#else
  return __shfl_down(v, delta, warp_size());
#endif
}

__device__ inline LaneMask warp_ballot(bool pred) {
#if KILN_CUDA
  return __ballot_sync(full_lane_mask(), pred);
#else
  return __ballot(pred);
#endif
}

// Sum over the warp with a butterfly: every lane gets the total. `op` combines two values.
template <class T, class Op>
__device__ inline T warp_all_reduce(T v, Op op) {
  for (int offset = warp_size() / 2; offset > 0; offset /= 2) v = op(v, warp_shfl_xor(v, offset));
  return v;
}

template <class T>
__device__ inline T warp_sum(T v) {
  return warp_all_reduce(v, [](T a, T b) { return a + b; });
}

}  // namespace kiln::gpu
