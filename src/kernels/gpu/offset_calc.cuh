// OffsetCalc<N>: turns a linear element index into element offsets of N strided operands that
// share one shape (broadcast operands have stride 0). Built on the host from tensors with the
// dimensions merged where the layout allows, so contiguous tensors become one dimension.
#pragma once

#include <cstdint>

#include "kiln/error.h"
#include "kiln/macros.h"
#include "kiln/tensor.h"

namespace kiln::gpu {

inline constexpr int kMaxGpuDims = 25;

template <int N>
struct OffsetCalc {
  int ndim = 0;
  int64_t sizes[kMaxGpuDims];
  int64_t strides[N][kMaxGpuDims];  // in elements; dimension ndim-1 is the innermost

  KILN_HD void get(int64_t linear, int64_t (&off)[N]) const {
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] = 0;
    for (int d = ndim - 1; d >= 0; --d) {
      int64_t s = sizes[d];
      int64_t q;
      // 32-bit division when both fit: 64-bit division is many times slower on GPUs.
      if (((static_cast<uint64_t>(linear) | static_cast<uint64_t>(s)) >> 32) == 0)
        q = static_cast<uint32_t>(linear) / static_cast<uint32_t>(s);
      else
        q = linear / s;
      int64_t i = linear - q * s;
      linear = q;
#pragma unroll
      for (int k = 0; k < N; ++k) off[k] += i * strides[k][d];
    }
  }
};

// operands[0] gives the shape; the others are broadcast to it (right-aligned, as numpy).
// Size-1 dimensions are dropped and neighbours merged when every operand allows it.
template <int N>
OffsetCalc<N> make_offset_calc(const Tensor* const (&operands)[N], const char* op) {
  IntArrayRef shape = operands[0]->sizes();
  int64_t nd = static_cast<int64_t>(shape.size());
  int64_t sz[64];
  int64_t st[N][64];
  KILN_CHECK(nd <= 64, "[", op, "] tensors with more than 64 dims are not supported");
  int n = 0;
  for (int64_t d = 0; d < nd; ++d) {
    if (shape[d] == 1) continue;
    sz[n] = shape[d];
    for (int k = 0; k < N; ++k) {
      const Tensor& t = *operands[k];
      int64_t td = d - (nd - t.dim());
      st[k][n] = (td < 0 || t.sizes()[td] == 1) ? 0 : t.strides()[td];
    }
    ++n;
  }
  // Merge dimension i into i-1 (outer) when stride[i-1] == stride[i] * size[i] for all operands.
  int m = 0;
  for (int i = 0; i < n; ++i) {
    bool merge = m > 0;
    for (int k = 0; k < N && merge; ++k) merge = st[k][m - 1] == st[k][i] * sz[i];
    if (merge) {
      sz[m - 1] *= sz[i];
      for (int k = 0; k < N; ++k) st[k][m - 1] = st[k][i];
    } else {
      sz[m] = sz[i];
      for (int k = 0; k < N; ++k) st[k][m] = st[k][i];
      ++m;
    }
  }
  KILN_CHECK(m <= kMaxGpuDims, "[", op, "] GPU kernels support at most ", kMaxGpuDims,
             " non-mergeable dims, got ", m);
  OffsetCalc<N> oc;
  oc.ndim = m == 0 ? 1 : m;
  if (m == 0) {
    oc.sizes[0] = 1;
    for (int k = 0; k < N; ++k) oc.strides[k][0] = 0;
  }
  for (int d = 0; d < m; ++d) {
    oc.sizes[d] = sz[d];
    for (int k = 0; k < N; ++k) oc.strides[k][d] = st[k][d];
  }
  return oc;
}

}  // namespace kiln::gpu
