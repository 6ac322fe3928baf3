// LineIter and copy_into (see scan_lines.h).
#include "kernels/cpu/scan_lines.h"

#include "dispatch/registry.h"

namespace kiln::cpu {

void copy_into(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  OpCall c(OpId::Copy);
  c.in.push_back(src);
  c.out.push_back(dst);
  c.compute = dst.dtype();
  Kernel k = detail::find_kernel(OpId::Copy, kCPU);
  KILN_ASSERT(k != nullptr, "no CPU copy kernel");
  k(c);
}

LineIter::LineIter(const Tensor& t, int64_t dim) : dim_(t.dim() == 0 ? -1 : dim) {
  for (int64_t d = 0; d < t.dim(); ++d)
    if (d != dim_) {
      sizes_.push_back(t.size(d));
      lines_ *= t.size(d);
    }
}

void LineIter::add(const Tensor& t) {
  KILN_ASSERT(n_ < kMax, "LineIter: too many operands");
  data_[n_] = t.data_ptr();
  dim_stride_[n_] = dim_ < 0 ? 1 : t.stride(dim_);
  for (int64_t d = 0; d < t.dim(); ++d)
    if (d != dim_) strides_[n_].push_back(t.stride(d));
  ++n_;
}

}  // namespace kiln::cpu
