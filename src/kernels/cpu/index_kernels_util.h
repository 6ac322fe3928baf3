// Helpers shared by the CPU index kernels: typed-by-size copies, index bounds checks, row-major
// walks over strided operands, and the copy of self into a fresh output.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "backend/cpu/parallel.h"
#include "core/dispatch_dtype.h"
#include "dispatch/registry.h"
#include "kernels/convert.h"
#include "ops/op.h"

namespace kiln::cpu {

void register_index_put_kernels(detail::KernelRegistry& r);
void register_index_masked_kernels(detail::KernelRegistry& r);

// A trivially copyable blob of N bytes: moves elements without knowing their dtype.
template <int N>
struct Bytes {
  alignas(N >= 8 ? 8 : N) unsigned char b[N];
};

// f.template operator()<U>() with U a blob type of the element size (1, 2, 4, 8 or 16 bytes).
template <class F>
decltype(auto) dispatch_element_size(int64_t size, F&& f) {
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
      return f.template operator()<Bytes<16>>();
  }
}

// f.template operator()<IT>() for an int64 or int32 index tensor.
template <class F>
decltype(auto) dispatch_index_type(DType d, F&& f) {
  if (d == DType::Int32) return f.template operator()<int32_t>();
  KILN_ASSERT(d == DType::Int64, "index dtype");
  return f.template operator()<int64_t>();
}

// Copies src into dst (same shape) with the Copy kernel itself (no op-layer hooks).
void copy_raw(const Tensor& dst, const Tensor& src);

// Throws "[op] index v is out of bounds for dimension dim with size n" if any element of idx
// (int64/int32, any layout) is outside [-n, n). Runs before a kernel writes anything.
void check_index_bounds(const Tensor& idx, int64_t n, int64_t dim, const char* op);

// A view of a 0-dim tensor of `dtype` holding v, expanded (stride 0) to `shape`.
Tensor value_tensor(const Scalar& v, DType dtype, IntArrayRef shape);

// Stream compaction in fixed chunks (independent of the thread count). compact_count: count(b, e)
// returns how many items positions [b, e) produce; the result holds each chunk's first item
// (and the total last). compact_write: write(b, e, first_item) for every chunk.
constexpr int64_t kCompactChunk = 1 << 16;
template <class Count>
std::vector<int64_t> compact_count(int64_t n, const Count& count) {
  const int64_t nch = (n + kCompactChunk - 1) / kCompactChunk;
  std::vector<int64_t> start(static_cast<size_t>(nch) + 1, 0);
  parallel_for(0, nch, 1, [&](int64_t b, int64_t e) {
    for (int64_t ch = b; ch < e; ++ch)
      start[ch + 1] = count(ch * kCompactChunk, std::min(n, (ch + 1) * kCompactChunk));
  });
  for (int64_t ch = 0; ch < nch; ++ch) start[ch + 1] += start[ch];
  return start;
}
template <class Write>
void compact_write(int64_t n, const std::vector<int64_t>& start, const Write& write) {
  const int64_t nch = static_cast<int64_t>(start.size()) - 1;
  parallel_for(0, nch, 1, [&](int64_t b, int64_t e) {
    for (int64_t ch = b; ch < e; ++ch)
      write(ch * kCompactChunk, std::min(n, (ch + 1) * kCompactChunk), start[ch]);
  });
}

template <class IT>
inline int64_t wrap_index(IT v, int64_t n) {
  int64_t i = static_cast<int64_t>(v);
  return i < 0 ? i + n : i;
}

// Row-major walk over `shape` for up to 4 operands given by byte strides. f(char** ptrs) per
// element (or f(ptrs, coords)), for linear positions [b, e).
struct RowMajorWalk {
  int nd = 0;
  int nops = 0;
  int64_t shape[64];
  int64_t strides[4][64];
  char* base[4];

  RowMajorWalk(IntArrayRef sizes, std::initializer_list<std::pair<char*, IntArrayRef>> ops,
               std::initializer_list<int64_t> esizes) {
    nd = static_cast<int>(sizes.size());
    for (int d = 0; d < nd; ++d) shape[d] = sizes[d];
    auto es = esizes.begin();
    for (const auto& [p, st] : ops) {
      base[nops] = p;
      for (int d = 0; d < nd; ++d) strides[nops][d] = st[d] * *es;
      ++nops;
      ++es;
    }
  }

  template <class F>
  void run(int64_t b, int64_t e, const F& f) const {
    if (b >= e) return;
    int64_t idx[64];
    char* p[4];
    int64_t rem = b;
    for (int k = 0; k < nops; ++k) p[k] = base[k];
    for (int d = nd - 1; d >= 0; --d) {
      idx[d] = rem % shape[d];
      rem /= shape[d];
      for (int k = 0; k < nops; ++k) p[k] += idx[d] * strides[k][d];
    }
    for (int64_t i = b; i < e; ++i) {
      if constexpr (std::is_invocable_v<const F&, char**, const int64_t*>)
        f(p, static_cast<const int64_t*>(idx));
      else
        f(p);
      for (int d = nd - 1; d >= 0; --d) {
        for (int k = 0; k < nops; ++k) p[k] += strides[k][d];
        if (++idx[d] < shape[d]) break;
        for (int k = 0; k < nops; ++k) p[k] -= shape[d] * strides[k][d];
        idx[d] = 0;
      }
    }
  }
};

}  // namespace kiln::cpu
