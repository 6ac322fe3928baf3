// CPU kernels of the shape op family (cat, flip, tril/triu, diag_embed, repeat_interleave) and
// their registration. These only move elements: they dispatch on the element size, not the dtype.
#include <algorithm>
#include <cstring>

#include "dispatch/registry.h"
#include "kernels/cpu/scan_lines.h"
#include "ops/tensor_factory.h"

namespace kiln::cpu {

namespace {

// Each input is copied (converting dtype) into its slice of the output along dim.
void cat_kernel(OpCall& c) {
  const Tensor& out = c.out[0];
  const int64_t dim = c.attrs.i0;
  int64_t pos = 0;
  for (const Tensor& t : c.in) {
    const int64_t n = t.size(dim);
    if (n > 0 && t.numel() > 0) copy_into(out.narrow(dim, pos, n), t);
    pos += n;
  }
}

// A view of x with negative strides over the flipped dims, copied into the output.
void flip_kernel(OpCall& c) {
  const Tensor& x = c.in[0];
  if (x.numel() == 0) return;
  DimVector st(x.strides());
  int64_t off = x.storage_offset();
  for (int64_t d : c.attrs.ints) {
    off += (x.size(d) - 1) * st[d];
    st[d] = -st[d];
  }
  copy_into(c.out[0], detail::make_view(x, x.sizes(), st, off));
}

// Keeps element (i, j) of each matrix when j - i <= k (tril) or >= k (triu); zeros the rest.
template <bool kLower>
void tri_kernel(OpCall& c) {
  const Tensor& x = c.in[0];
  const Tensor& out = c.out[0];
  const int64_t nd = x.dim(), rows = x.size(nd - 2), cols = x.size(nd - 1), k = c.attrs.i0;
  if (x.numel() == 0) return;
  const bool same = x.data_ptr() == out.data_ptr() && x.strides() == out.strides();
  if (!same) copy_into(out, x);
  // Lines along the last dim are the rows; line l is row l % rows of its matrix.
  LineIter it(out, nd - 1);
  it.add(out);
  dispatch_by_size(out.element_size(), [&]<class U>() {
    const int64_t sc = it.stride(0);
    it.for_lines(cols, [&](int64_t b, int64_t e) {
      U zero;
      std::memset(&zero, 0, sizeof(U));
      for (int64_t l = b; l < e; ++l) {
        const int64_t i = l % rows;
        U* row = it.data<U>(0, l);
        // zero j > i + k (tril) or j < i + k (triu)
        const int64_t lo = kLower ? std::clamp<int64_t>(i + k + 1, 0, cols) : 0;
        const int64_t hi = kLower ? cols : std::clamp<int64_t>(i + k, 0, cols);
        for (int64_t j = lo; j < hi; ++j) row[j * sc] = zero;
      }
    });
  });
}

// Zeros, then x into the (dim1, dim2) diagonal at offset.
void diag_embed_kernel(OpCall& c) {
  const Tensor& out = c.out[0];
  if (out.numel() == 0) return;
  std::memset(out.data_ptr(), 0, out.nbytes());  // out is a fresh contiguous tensor
  const int64_t d1 = c.attrs.i1 / 64, d2 = c.attrs.i1 % 64;
  copy_into(out.diagonal(c.attrs.i0, d1, d2), c.in[0]);
}

// out slices along dim: slice j of x repeated repeats[j] times.
void repeat_interleave_kernel(OpCall& c) {
  const Tensor x = c.in[0].contiguous();
  const Tensor& out = c.out[0];
  const int64_t* rp = c.in[1].data_ptr<int64_t>();
  const int64_t dim = c.attrs.i0, n = x.size(dim);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= x.size(d);
  for (int64_t d = dim + 1; d < x.dim(); ++d) inner *= x.size(d);
  const int64_t total = out.size(dim), es = x.element_size();
  if (out.numel() == 0) return;
  std::vector<int64_t> src(total);  // source slice of each output slice
  for (int64_t j = 0, p = 0; j < n; ++j)
    for (int64_t r = 0; r < rp[j]; ++r) src[p++] = j;
  const char* xp = static_cast<const char*>(x.data_ptr());
  char* op = static_cast<char*>(out.data_ptr());
  const int64_t bytes = inner * es;
  parallel_for(0, outer * total, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(inner, 1)),
               [&](int64_t b, int64_t e) {
                 for (int64_t k = b; k < e; ++k) {
                   const int64_t o = k / total, p = k % total;
                   std::memcpy(op + k * bytes, xp + (o * n + src[p]) * bytes, bytes);
                 }
               });
}

}  // namespace

void register_shape_kernels(detail::KernelRegistry& r) {
  r.set(OpId::Cat, kCPU, &cat_kernel);
  r.set(OpId::Flip, kCPU, &flip_kernel);
  r.set(OpId::Tril, kCPU, &tri_kernel<true>);
  r.set(OpId::Triu, kCPU, &tri_kernel<false>);
  r.set(OpId::DiagEmbed, kCPU, &diag_embed_kernel);
  r.set(OpId::RepeatInterleave, kCPU, &repeat_interleave_kernel);
}

}  // namespace kiln::cpu
