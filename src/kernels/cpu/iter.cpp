// StridedIter construction: broadcasting strides, dim ordering and merging.
#include "kernels/cpu/iter.h"

#include <algorithm>
#include <numeric>

namespace kiln::cpu {

void StridedIter::add(const Tensor& t) {
  KILN_ASSERT(n_ < kMaxOperands);
  ops_[n_] = &t;
  data_[n_] = static_cast<char*>(t.data_ptr());
  ++n_;
}

bool StridedIter::is_contiguous_1d() const {
  if (ndim() != 1) return ndim() == 0;
  for (int k = 0; k < n_; ++k)
    if (strides_[k][0] != ops_[k]->element_size()) return false;
  return true;
}

void StridedIter::build(IntArrayRef shape) {
  int nd = static_cast<int>(shape.size());
  KILN_CHECK(nd <= 64, "[iter] tensors with more than 64 dims are not supported (got ", nd, ")");
  numel_ = 1;
  for (int64_t s : shape) numel_ *= s;
  shape_.clear();
  for (int k = 0; k < n_; ++k) strides_[k].clear();
  // Fast path (most calls, and all the cheap ones): every operand is contiguous over the whole
  // shape or a single broadcast element, so the iteration is one dim of numel elements.
  if (nd > 0) {
    bool flat = true;
    for (int k = 0; k < n_ && flat; ++k) {
      const Tensor& t = *ops_[k];
      flat = t.dim() <= nd && (t.numel() == 1 || (t.numel() == numel_ && t.is_contiguous()));
    }
    if (flat) {
      shape_.push_back(numel_);
      for (int k = 0; k < n_; ++k) {
        const Tensor& t = *ops_[k];
        strides_[k].push_back(t.numel() == 1 && numel_ != 1 ? 0 : t.element_size());
      }
      if (numel_ == 1)
        for (int k = 0; k < n_; ++k) strides_[k][0] = 0;
      return;
    }
  }
  // Byte strides in the original (outer-first) order, 0 for broadcast dims.
  DimVector st[kMaxOperands];
  for (int k = 0; k < n_; ++k) {
    const Tensor& t = *ops_[k];
    int off = nd - static_cast<int>(t.dim());
    KILN_ASSERT(off >= 0, "operand has more dims than the iteration shape");
    st[k].assign(nd, 0);
    int64_t es = t.element_size();
    for (int d = 0; d < t.dim(); ++d) st[k][d + off] = t.sizes()[d] == 1 ? 0 : t.strides()[d] * es;
  }
  // Order dims innermost-first: by the first operand's stride, ties broken by later operands.
  DimVector perm(nd);
  std::iota(perm.begin(), perm.end(), 0);
  std::reverse(perm.begin(), perm.end());
  auto less = [&](int64_t a, int64_t b) {  // should dim a be more inner than dim b?
    for (int k = 0; k < n_; ++k) {
      int64_t sa = std::abs(st[k][a]), sb = std::abs(st[k][b]);
      if (sa == 0 || sb == 0) continue;
      if (sa != sb) return sa < sb;
    }
    return false;
  };
  // A stable insertion sort: nd is small, and std::stable_sort allocates a buffer.
  for (int i = 1; i < nd; ++i)
    for (int j = i; j > 0 && less(perm[j], perm[j - 1]); --j) std::swap(perm[j], perm[j - 1]);
  DimVector sh(nd);
  for (int i = 0; i < nd; ++i) sh[i] = shape[perm[i]];
  DimVector ps[kMaxOperands];
  for (int k = 0; k < n_; ++k) {
    ps[k].resize(nd);
    for (int i = 0; i < nd; ++i) ps[k][i] = st[k][perm[i]];
  }
  // Merge dim i+1 into dim i when every operand steps through them as one.
  for (int i = 0; i < nd; ++i) {
    if (sh[i] == 1 && nd > 1) continue;
    if (!shape_.empty()) {
      bool can = true;
      for (int k = 0; k < n_; ++k)
        if (ps[k][i] != strides_[k].back() * shape_.back()) can = false;
      if (can) {
        shape_.back() *= sh[i];
        continue;
      }
    }
    shape_.push_back(sh[i]);
    for (int k = 0; k < n_; ++k) strides_[k].push_back(ps[k][i]);
  }
  if (shape_.empty() && nd > 0) {  // every dim had size 1
    shape_.push_back(1);
    for (int k = 0; k < n_; ++k) strides_[k].push_back(0);
  }
}

}  // namespace kiln::cpu
