// StridedIter: the CPU elementwise iterator. Broadcasts operands to one shape, orders dims so
// the innermost is first, merges contiguous dims, and runs a 1-D inner loop in parallel chunks.
#pragma once

#include "backend/cpu/parallel.h"
#include "kiln/tensor.h"

namespace kiln::cpu {

constexpr int kMaxOperands = 8;

// Inner loop: data[k] points at operand k's first element, strides[k] is its byte stride.
// Operands are outputs first, then inputs, in the order they were added.
class StridedIter {
 public:
  // Adds an operand; it must broadcast to the iteration shape given to build().
  void add(const Tensor& t);
  // Computes byte strides for `shape`, reorders dims by the first operand's strides and merges.
  void build(IntArrayRef shape);
  int64_t numel() const { return numel_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  // True when every operand is contiguous over the (merged) single dim.
  bool is_contiguous_1d() const;

  template <class Loop>
  void for_each(const Loop& loop, int64_t grain = kGrainSize) const {
    if (numel_ == 0) return;
    parallel_for(0, numel_, grain, [&](int64_t b, int64_t e) { run_range(loop, b, e); });
  }

  template <class Loop>
  void run_range(const Loop& loop, int64_t b, int64_t e) const {
    int nd = ndim();
    char* ptr[kMaxOperands];
    int64_t inner[kMaxOperands];
    if (nd == 0) {
      for (int k = 0; k < n_; ++k) ptr[k] = data_[k], inner[k] = 0;
      loop(ptr, inner, int64_t(1));
      return;
    }
    int64_t idx[64];
    int64_t rem = b;
    for (int k = 0; k < n_; ++k) ptr[k] = data_[k], inner[k] = strides_[k][0];
    for (int d = 0; d < nd; ++d) {
      idx[d] = rem % shape_[d];
      rem /= shape_[d];
      for (int k = 0; k < n_; ++k) ptr[k] += idx[d] * strides_[k][d];
    }
    while (b < e) {
      int64_t n = std::min(shape_[0] - idx[0], e - b);
      loop(ptr, inner, n);
      b += n;
      idx[0] += n;
      for (int k = 0; k < n_; ++k) ptr[k] += n * strides_[k][0];
      for (int d = 0; d + 1 < nd && idx[d] == shape_[d]; ++d) {
        idx[d] = 0;
        ++idx[d + 1];
        for (int k = 0; k < n_; ++k) ptr[k] += strides_[k][d + 1] - shape_[d] * strides_[k][d];
      }
    }
  }

 private:
  int n_ = 0;
  char* data_[kMaxOperands] = {};
  const Tensor* ops_[kMaxOperands] = {};
  DimVector shape_;
  DimVector strides_[kMaxOperands];
  int64_t numel_ = 0;
};

}  // namespace kiln::cpu
