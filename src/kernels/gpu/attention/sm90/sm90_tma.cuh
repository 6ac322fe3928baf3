// Host helpers shared by the sm90 attention kernels: cuTensorMapEncodeTiled through the runtime's
// driver entry point, [batch, heads, rows, d] tensor maps with 128-byte swizzle, and the
// compute-capability 9.0 test. Included only by the sm_90a object library's .cu files.
#pragma once

#include <atomic>
#include <cstdint>

#include "backend/gpu/vendor.h"

namespace kiln::gpu::flash::sm90 {

using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                 const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                 const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                 CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

// cuTensorMapEncodeTiled through the runtime's driver entry point (libcuda is never linked).
inline EncodeTiled encode_tiled() {
  static const EncodeTiled fn = []() -> EncodeTiled {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault,
                                         &q) == cudaSuccess &&
        q == cudaDriverEntryPointSuccess)
      return reinterpret_cast<EncodeTiled>(f);
    (void)cudaGetLastError();
    return nullptr;
  }();
  return fn;
}

// A [batch, heads, rows, d] tensor (element strides sb, sh, sr; unit stride in d) of `type`
// with `elem` bytes per element as a 4-d tensor map: boxes of 128 bytes (one swizzle row) x
// box_rows rows, 128-byte swizzle, zero fill out of bounds. False when TMA cannot address it.
inline bool make_map_4d(CUtensorMap* map, const void* ptr, CUtensorMapDataType type, int elem,
                        int64_t d, int64_t rows, int64_t heads, int64_t batch, int64_t sr,
                        int64_t sh, int64_t sb, int box_rows) {
  EncodeTiled enc = encode_tiled();
  if (!enc || reinterpret_cast<uintptr_t>(ptr) % 16 != 0) return false;
  // Strides of dimensions of size 1 are never used: give them a valid value.
  if (rows == 1) sr = d;
  if (heads == 1) sh = rows * sr;
  if (batch == 1) sb = heads * sh;
  const int64_t st[3] = {sr * elem, sh * elem, sb * elem};
  for (int64_t x : st)
    if (x <= 0 || x % 16 != 0 || x >= (int64_t{1} << 40)) return false;
  const cuuint64_t dims[4] = {static_cast<cuuint64_t>(d), static_cast<cuuint64_t>(rows),
                              static_cast<cuuint64_t>(heads), static_cast<cuuint64_t>(batch)};
  const cuuint64_t strides[3] = {static_cast<cuuint64_t>(st[0]), static_cast<cuuint64_t>(st[1]),
                                 static_cast<cuuint64_t>(st[2])};
  const cuuint32_t box[4] = {static_cast<cuuint32_t>(128 / elem), static_cast<cuuint32_t>(box_rows),
                             1, 1};
  const cuuint32_t estr[4] = {1, 1, 1, 1};
  return enc(map, type, 4, const_cast<void*>(ptr), dims, strides, box, estr,
             CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
             CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// q, k, v, dout (bfloat16 / float16): boxes of 64 elements.
inline bool make_map(CUtensorMap* map, const void* ptr, bool bf16, int64_t d, int64_t rows,
                     int64_t heads, int64_t batch, int64_t sr, int64_t sh, int64_t sb,
                     int box_rows) {
  return make_map_4d(map, ptr,
                     bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2,
                     d, rows, heads, batch, sr, sh, sb, box_rows);
}

// The float32 dq accumulator, for reduce-add stores: boxes of 32 floats.
inline bool make_map_f32(CUtensorMap* map, float* ptr, int64_t d, int64_t rows, int64_t heads,
                         int64_t batch, int64_t sr, int64_t sh, int64_t sb, int box_rows) {
  return make_map_4d(map, ptr, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, d, rows, heads, batch, sr, sh,
                     sb, box_rows);
}

// Compute capability 9.0, cached per device (0 unknown, 1 yes, 2 no).
inline bool is_sm90(int device) {
  static std::atomic<int> state[64];
  if (device < 0 || device >= 64) return false;
  int s = state[device].load(std::memory_order_relaxed);
  if (s == 0) {
    int major = 0, minor = 0;
    const bool ok =
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) == cudaSuccess;
    if (!ok) (void)cudaGetLastError();
    s = ok && major == 9 && minor == 0 ? 1 : 2;
    state[device].store(s, std::memory_order_relaxed);
  }
  return s == 1;
}

// Device attribute kAttr, cached per device (`fallback` when unreadable).
template <cudaDeviceAttr kAttr>
int device_attr(int device, int fallback) {
  static std::atomic<int> n[64];
  if (device < 0 || device >= 64) return fallback;
  int c = n[device].load(std::memory_order_relaxed);
  if (c == 0) {
    if (cudaDeviceGetAttribute(&c, kAttr, device) != cudaSuccess || c <= 0) {
      (void)cudaGetLastError();
      c = fallback;
    }
    n[device].store(c, std::memory_order_relaxed);
  }
  return c;
}
// Multiprocessors of the device (132, an H100's count, when unreadable).
inline int sm_count(int device) { return device_attr<cudaDevAttrMultiProcessorCount>(device, 132); }
// The device's L2 cache in bytes (50 MiB, an H100's, when unreadable).
inline int64_t l2_bytes(int device) {
  return device_attr<cudaDevAttrL2CacheSize>(device, 50 << 20);
}

// Lets kKernel use `bytes` of dynamic shared memory (set once per kernel); whether that worked.
template <auto kKernel>
bool smem_limit_set(int bytes) {
  static const bool ok =
      cudaFuncSetAttribute(reinterpret_cast<const void*>(kKernel),
                           cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) == cudaSuccess;
  return ok;
}

}  // namespace kiln::gpu::flash::sm90
