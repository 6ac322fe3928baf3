// The long-line radix sort of Note [GPU sort keys] through CUB (hipCUB): one DeviceRadixSort for a
// single line, DeviceSegmentedRadixSort over equal-length lines otherwise. Its own file so that
// the CUB headers compile once.
#include "backend/gpu/vendor.h"

#include <algorithm>

#include "backend/gpu/vendor/cub.h"
#include "kernels/gpu/sort_common.cuh"

namespace kiln::gpu::sortg {

#if KILN_HAS_CUB

namespace {

__global__ void segment_offsets_kernel(int* o, int64_t count, int n) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t <= count;
       t += step)
    o[t] = static_cast<int>(t * n);
}

template <class K>
void radix_sort(const K* keys_in, K* keys_out, const uint32_t* pos_in, uint32_t* pos_out,
                int64_t lines, int64_t n, int key_bits, const Launch& l, const char* op) {
  size_t bytes = 0;
  if (lines == 1) {
    KILN_GPU_CHECK(op, gpucub::DeviceRadixSort::SortPairs(nullptr, bytes, keys_in, keys_out, pos_in,
                                                          pos_out, n, 0, key_bits, l.stream));
    Tensor tmp = scratch(static_cast<int64_t>(bytes) + 1, DType::UInt8, l.device);
    KILN_GPU_CHECK(
        op, gpucub::DeviceRadixSort::SortPairs(tmp.data_ptr(), bytes, keys_in, keys_out, pos_in,
                                               pos_out, n, 0, key_bits, l.stream));
    return;
  }
  // The segmented sort counts items in int: chunks of whole lines below 2^31 items.
  const int64_t chunk =
      std::max<int64_t>(1, std::min<int64_t>(lines, ((int64_t{1} << 31) - 1) / n));
  KILN_CHECK(chunk * n < (int64_t{1} << 31), "[", op, "] GPU sort lines of ", n,
             " elements are too long");
  Tensor offs = scratch(chunk + 1, DType::Int32, l.device);
  int* po = static_cast<int*>(offs.data_ptr());
  segment_offsets_kernel<<<blocks_for(chunk + 1, 256), 256, 0, l.stream>>>(po, chunk,
                                                                           static_cast<int>(n));
  check_launch(op, reinterpret_cast<uintptr_t>(l.stream));
  KILN_GPU_CHECK(
      op, gpucub::DeviceSegmentedRadixSort::SortPairs(
              nullptr, bytes, keys_in, keys_out, pos_in, pos_out, static_cast<int>(chunk * n),
              static_cast<int>(chunk), po, po + 1, 0, key_bits, l.stream));
  Tensor tmp = scratch(static_cast<int64_t>(bytes) + 1, DType::UInt8, l.device);
  for (int64_t b = 0; b < lines; b += chunk) {
    const int64_t c = std::min(chunk, lines - b);
    const int64_t off = b * n;
    size_t have = bytes;
    KILN_GPU_CHECK(
        op, gpucub::DeviceSegmentedRadixSort::SortPairs(
                tmp.data_ptr(), have, keys_in + off, keys_out + off, pos_in + off, pos_out + off,
                static_cast<int>(c * n), static_cast<int>(c), po, po + 1, 0, key_bits, l.stream));
  }
}

}  // namespace

bool cub_sort_lines(const void* keys_in, void* keys_out, const uint32_t* pos_in, uint32_t* pos_out,
                    int64_t lines, int64_t n, bool wide, int key_bits, const Launch& l,
                    const char* op) {
  if (wide)
    radix_sort<uint64_t>(static_cast<const uint64_t*>(keys_in), static_cast<uint64_t*>(keys_out),
                         pos_in, pos_out, lines, n, key_bits, l, op);
  else
    radix_sort<uint32_t>(static_cast<const uint32_t*>(keys_in), static_cast<uint32_t*>(keys_out),
                         pos_in, pos_out, lines, n, key_bits, l, op);
  return true;
}

#else

bool cub_sort_lines(const void*, void*, const uint32_t*, uint32_t*, int64_t, int64_t, bool, int,
                    const Launch&, const char*) {
  return false;
}

#endif

}  // namespace kiln::gpu::sortg
