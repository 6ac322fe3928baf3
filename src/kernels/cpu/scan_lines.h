// Helpers of the CPU shape/scan/sort kernels: LineIter (the 1-D lines of tensors along one dim,
// for ops that work line by line) and copy_into (the copy kernel called without the op hooks).
#pragma once

#include <cstdint>

#include "backend/cpu/parallel.h"
#include "ops/op.h"

namespace kiln::cpu {

// dst <- src (src broadcast to dst's shape, converted to dst's dtype), strided, in parallel.
// Calls the registered CPU copy kernel directly: no autograd/trace hooks run.
void copy_into(const Tensor& dst, const Tensor& src);

// The lines along `dim` of operands that share every size but the one of `dim`. Operand k's line
// l starts at element offset(k, l) of its data and steps by stride(k). 0-dim tensors are one line
// of one element.
class LineIter {
 public:
  static constexpr int kMax = 6;
  LineIter(const Tensor& shape_of, int64_t dim);
  void add(const Tensor& t);
  int64_t lines() const { return lines_; }
  int64_t offset(int k, int64_t line) const {
    int64_t off = 0;
    for (int d = static_cast<int>(sizes_.size()) - 1; d >= 0; --d) {
      const int64_t i = line % sizes_[d];
      line /= sizes_[d];
      off += i * strides_[k][d];
    }
    return off;
  }
  int64_t stride(int k) const { return dim_stride_[k]; }
  template <class T>
  T* data(int k, int64_t line) const {
    return static_cast<T*>(data_[k]) + offset(k, line);
  }

  // f(line_begin, line_end) in parallel; `work` is the elements per line (for the grain).
  template <class F>
  void for_lines(int64_t work, const F& f) const {
    const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(work, 1));
    parallel_for(0, lines_, grain, f);
  }

 private:
  DimVector sizes_;  // the dims other than `dim`
  int64_t dim_;
  int64_t lines_ = 1;
  int n_ = 0;
  DimVector strides_[kMax];
  int64_t dim_stride_[kMax] = {};
  void* data_[kMax] = {};
};

// Calls f.template operator()<U>() with an unsigned integer type of t's element size (or a
// 16-byte struct), for kernels that only move elements.
struct Bytes16 {
  uint64_t a, b;
};
template <class F>
void dispatch_by_size(int64_t element_size, const F& f) {
  switch (element_size) {
    case 1:
      return f.template operator()<uint8_t>();
    case 2:
      return f.template operator()<uint16_t>();
    case 4:
      return f.template operator()<uint32_t>();
    case 8:
      return f.template operator()<uint64_t>();
    default:
      return f.template operator()<Bytes16>();
  }
}

}  // namespace kiln::cpu
