// Shared pieces of the GPU sort family: order-preserving keys computed from raw element bits
// (Note [GPU sort keys]), the lines of tensors along one dim, and the line sorts that return each
// line's sorted keys with the original positions (sort_lines.cu, sort_cub.cu).
#pragma once

#include "backend/gpu/vendor.h"

#include <cstdint>
#include <type_traits>
#include <vector>

#include "backend/gpu/runtime.h"
#include "backend/gpu/stream.h"
#include "dispatch/registry.h"
#include "kernels/gpu/offset_calc.cuh"
#include "ops/op.h"
#include "ops/tensor_factory.h"

namespace kiln::gpu::sortg {

// Note [GPU sort keys]
// The GPU computes the keys of Note [sort keys] (kernels/cpu/sort_keys.h) from the bits of each
// element: NaN is all ones in the element's width (every NaN equal and greatest), -0.0 is +0.0,
// and a descending sort complements the key within the element's width. Keys travel as uint32
// (elements of 1 to 4 bytes) or uint64. Every line is sorted by (key, position), a total order,
// so whichever algorithm runs the result is the CPU's stable sort, indices included:
// - lines of at most kBlockSortMax elements: a bitonic network in shared memory, one block per
//   line (several short lines per block), reading the keys straight from the input;
// - longer lines: CUB's (hipCUB's) radix sort of (key, position) pairs, which is stable;
// - longer lines without CUB (HIP builds without hipCUB, or KILN_GPU_SORT_PORTABLE=1, which the
//   tests use to cover this path on CUDA): a bitonic network in global memory.
enum class KeyKind : uint8_t { Unsigned, Signed, Float };

struct KeySpec {
  KeyKind kind = KeyKind::Unsigned;
  bool desc = false;
  uint64_t inf = 0;  // floats: the bits of +inf; a magnitude above it is a NaN
};

// The key rule of a real dtype (bool and unsigned: the value; signed: sign bit flipped; floats).
KeySpec key_spec(DType dt, bool desc);
inline bool is_float_key(const KeySpec& s) { return s.kind == KeyKind::Float; }

template <class E>
using key_of_t = std::conditional_t<sizeof(E) == 8, uint64_t, uint32_t>;

// The ascending key of a NaN (all ones in the element's width), as a K.
template <class K>
KILN_HD inline K nan_key(int elem_bytes) {
  return elem_bytes >= static_cast<int>(sizeof(K)) ? static_cast<K>(~K(0))
                                                   : static_cast<K>((K(1) << (8 * elem_bytes)) - 1);
}

template <class E>
__device__ inline key_of_t<E> make_key(E u, const KeySpec& s) {
  constexpr E sign = static_cast<E>(E(1) << (sizeof(E) * 8 - 1));
  E k;
  if (s.kind == KeyKind::Unsigned) {
    k = u;
  } else if (s.kind == KeyKind::Signed) {
    k = static_cast<E>(u ^ sign);
  } else {
    const E a = static_cast<E>(u & static_cast<E>(~sign));
    if (a > static_cast<E>(s.inf))
      k = static_cast<E>(~E(0));
    else if (a == 0)
      k = sign;
    else
      k = (u & sign) ? static_cast<E>(~u) : static_cast<E>(u | sign);
  }
  if (s.desc) k = static_cast<E>(~k);
  return static_cast<key_of_t<E>>(k);
}

// First position in [0, n) of sorted keys k with k[i] >= v.
template <class K>
__device__ inline int64_t lower_bound(const K* k, int64_t n, K v) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + ((hi - lo) >> 1);
    if (k[mid] < v)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// Calls f.template operator()<E>() with the unsigned integer type of the dtype's element size.
template <class F>
void dispatch_elem(DType dt, const char* op, const F& f) {
  switch (element_size(dt)) {
    case 1:
      return f.template operator()<uint8_t>();
    case 2:
      return f.template operator()<uint16_t>();
    case 4:
      return f.template operator()<uint32_t>();
    case 8:
      return f.template operator()<uint64_t>();
    default:
      KILN_CHECK(false, "[", op, "] unsupported dtype ", dtype_name(dt));
  }
}

// The lines along one dim of N operands that share every size but that dim's (operand 0 gives
// the shape). Line l of operand k starts at element batch.get(l)[k] and steps by stride[k];
// lines are numbered in row-major order of the other dims. A 0-dim operand is one line.
template <int N>
struct Lines {
  OffsetCalc<N> batch;
  int64_t stride[N];
  int64_t count = 1;
};

template <int N>
Lines<N> make_lines(const Tensor* const (&t)[N], int64_t dim, const char* op) {
  Lines<N> L;
  const Tensor& a = *t[0];
  std::vector<int64_t> sz;
  std::vector<std::vector<int64_t>> st;
  for (int64_t d = 0; d < a.dim(); ++d) {
    if (d == dim) continue;
    L.count *= a.size(d);
    if (a.size(d) == 1) continue;
    std::vector<int64_t> s(N);
    for (int k = 0; k < N; ++k) s[k] = t[k]->stride(d);
    if (!sz.empty()) {
      bool merge = true;
      for (int k = 0; k < N && merge; ++k) merge = st.back()[k] == s[k] * a.size(d);
      if (merge) {
        sz.back() *= a.size(d);
        st.back() = s;
        continue;
      }
    }
    sz.push_back(a.size(d));
    st.push_back(s);
  }
  KILN_CHECK(static_cast<int>(sz.size()) <= kMaxGpuDims, "[", op, "] GPU kernels support at most ",
             kMaxGpuDims, " non-mergeable dims");
  L.batch.ndim = sz.empty() ? 1 : static_cast<int>(sz.size());
  if (sz.empty()) {
    L.batch.sizes[0] = 1;
    for (int k = 0; k < N; ++k) L.batch.strides[k][0] = 0;
  }
  for (size_t d = 0; d < sz.size(); ++d) {
    L.batch.sizes[d] = sz[d];
    for (int k = 0; k < N; ++k) L.batch.strides[k][d] = st[d][k];
  }
  for (int k = 0; k < N; ++k) L.stride[k] = t[k]->dim() == 0 ? 0 : t[k]->stride(dim);
  return L;
}

// Each line's keys in ascending order and the positions they came from.
struct SortedLines {
  Tensor keys;  // lines x pitch keys: uint64 when wide, else uint32
  Tensor pos;   // lines x pitch uint32 positions
  int64_t lines = 0, n = 0, pitch = 0;
  bool wide = false;
  template <class K>
  const K* key_ptr() const {
    return static_cast<const K*>(keys.data_ptr());
  }
  const uint32_t* pos_ptr() const { return static_cast<const uint32_t*>(pos.data_ptr()); }
};

inline constexpr int64_t kBlockSortMax = 4096;

struct Launch {
  int device = 0;
  gpuStream_t stream = nullptr;
};
// The device of t (the current one when unset) and its current stream.
Launch launch_of(const Tensor& t);
Tensor scratch(int64_t elems, DType dt, int device);
inline unsigned blocks_for(int64_t n, int threads) {
  const int64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < (int64_t{1} << 20) ? (b > 0 ? b : 1) : (int64_t{1} << 20));
}

// Stable sort (Note [GPU sort keys]) of the lines of x along dim (x real, lines < 2^32).
SortedLines sort_tensor_lines(const Tensor& x, int64_t dim, bool desc, const char* op);
// Sorts `lines` lines of n keys stored one line after the other in keys (uint64 when wide, else
// uint32); only the low key_bits bits of a key may differ between keys. keys is not modified.
SortedLines sort_key_lines(const Tensor& keys, int64_t lines, int64_t n, bool wide, int key_bits,
                           const Launch& l, const char* op);
// The radix sort of sort_key_lines through CUB/hipCUB; false (nothing done) when kiln was built
// without it.
bool cub_sort_lines(const void* keys_in, void* keys_out, const uint32_t* pos_in, uint32_t* pos_out,
                    int64_t lines, int64_t n, bool wide, int key_bits, const Launch& l,
                    const char* op);
// out[i] = in[0] + ... + in[i] (device arrays of n int64).
void inclusive_scan(const int64_t* in, int64_t* out, int64_t n, const Launch& l, const char* op);

void register_sort_stats_kernels(detail::KernelRegistry& r);  // sort_stats_kernels.cu

}  // namespace kiln::gpu::sortg
