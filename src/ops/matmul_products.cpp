// Composite products over mm and mul: outer/ger, inner, tensordot, kron, and their Tensor methods.
#include <algorithm>

#include "core/wrap_dim.h"
#include "kiln/ops/elementwise.h"
#include "kiln/ops/linalg.h"
#include "ops/matmul_call.h"
#include "ops/tensor_factory.h"

namespace kiln {

Tensor outer(const Tensor& a, const Tensor& b) {
  KILN_CHECK(a.defined() && b.defined(), "[outer] got an undefined tensor");
  KILN_CHECK(a.dim() == 1 && b.dim() == 1, "[outer] expected 1-D arguments, but got ", a.dim(),
             "-D and ", b.dim(), "-D tensors");
  return mul(a.unsqueeze(1), b.unsqueeze(0));
}

Tensor ger(const Tensor& a, const Tensor& b) { return outer(a, b); }

Tensor tensordot(const Tensor& a, const Tensor& b, IntArrayRef dims_a, IntArrayRef dims_b) {
  const char* op = "tensordot";
  detail::check_gemm_operands(op, a, b);
  KILN_CHECK(dims_a.size() == dims_b.size(), "[", op,
             "] both dimension lists should have same length, but got ", dims_a, " and ", dims_b);
  DimVector da = detail::wrap_dims(dims_a, a.dim(), op),
            db = detail::wrap_dims(dims_b, b.dim(), op);
  Tensor x = a, y = b;
  for (size_t i = 0; i < da.size(); ++i) {
    int64_t sa = x.size(da[i]), sb = y.size(db[i]);
    if (sa == sb) continue;
    // A size-1 side broadcasts: the other side's dim is summed out (as PyTorch).
    KILN_CHECK(sa == 1 || sb == 1, "[", op,
               "] contracted dimensions need to match, but first has size ", sa, " in dim ", da[i],
               " and second has size ", sb, " in dim ", db[i]);
    if (sb == 1)
      x = detail::sum_keepdim(op, x, IntArrayRef(da[i]));
    else
      y = detail::sum_keepdim(op, y, IntArrayRef(db[i]));
  }
  DimVector perm_a, perm_b, shape;
  int64_t p = 1, q = 1, k = 1;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (std::find(da.begin(), da.end(), d) == da.end()) {
      perm_a.push_back(d);
      shape.push_back(x.size(d));
      p *= x.size(d);
    }
  for (int64_t d : da) {
    perm_a.push_back(d);
    k *= x.size(d);
  }
  for (int64_t d : db) perm_b.push_back(d);
  for (int64_t d = 0; d < y.dim(); ++d)
    if (std::find(db.begin(), db.end(), d) == db.end()) {
      perm_b.push_back(d);
      shape.push_back(y.size(d));
      q *= y.size(d);
    }
  Tensor x2 = detail::merge_reshape(x.permute(perm_a), {p, k});
  Tensor y2 = detail::merge_reshape(y.permute(perm_b), {k, q});
  return detail::addmm_core(op, Tensor(), x2, y2, 0, 1).view(shape);
}

Tensor tensordot(const Tensor& a, const Tensor& b, int64_t dims) {
  KILN_CHECK(a.defined() && b.defined(), "[tensordot] got an undefined tensor");
  KILN_CHECK(dims >= 0, "[tensordot] expects dims >= 0, but got dims=", dims);
  KILN_CHECK(dims <= a.dim() && dims <= b.dim(),
             "[tensordot] expects dims <= the number of dims "
             "of both tensors, but got dims=",
             dims, " for shapes ", a.sizes(), " and ", b.sizes());
  DimVector da, db;
  for (int64_t i = 0; i < dims; ++i) {
    da.push_back(a.dim() - dims + i);
    db.push_back(i);
  }
  return tensordot(a, b, da, db);
}

Tensor inner(const Tensor& a, const Tensor& b) {
  KILN_CHECK(a.defined() && b.defined(), "[inner] got an undefined tensor");
  if (a.dim() == 0 || b.dim() == 0) return mul(a, b);
  KILN_CHECK(a.size(-1) == b.size(-1),
             "[inner] the last dimension must match on both input "
             "tensors but got shapes ",
             a.sizes(), " and ", b.sizes());
  return tensordot(a, b, IntArrayRef(int64_t(-1)), IntArrayRef(int64_t(-1)));
}

Tensor kron(const Tensor& a, const Tensor& b) {
  KILN_CHECK(a.defined() && b.defined(), "[kron] got an undefined tensor");
  int64_t nd = std::max(a.dim(), b.dim());
  // a as [a0, 1, a1, 1, ...] and b as [1, b0, 1, b1, ...] (after padding both to nd dims): their
  // broadcast product laid out as [a0, b0, a1, b1, ...] is the Kronecker product.
  DimVector sa(2 * nd, 1), ta(2 * nd, 0), sb(2 * nd, 1), tb(2 * nd, 0), shape(nd);
  for (int64_t i = 0; i < nd; ++i) {
    int64_t ia = i - (nd - a.dim()), ib = i - (nd - b.dim());
    if (ia >= 0) {
      sa[2 * i] = a.size(ia);
      ta[2 * i] = a.stride(ia);
    }
    if (ib >= 0) {
      sb[2 * i + 1] = b.size(ib);
      tb[2 * i + 1] = b.stride(ib);
    }
    shape[i] = sa[2 * i] * sb[2 * i + 1];
  }
  Tensor av = detail::make_view(a, sa, ta, a.storage_offset());
  Tensor bv = detail::make_view(b, sb, tb, b.storage_offset());
  return detail::merge_reshape(mul(av, bv), shape);
}

// ---- methods ----
Tensor Tensor::outer(const Tensor& o) const { return kiln::outer(*this, o); }
Tensor Tensor::ger(const Tensor& o) const { return kiln::outer(*this, o); }
Tensor Tensor::inner(const Tensor& o) const { return kiln::inner(*this, o); }
Tensor Tensor::kron(const Tensor& o) const { return kiln::kron(*this, o); }

}  // namespace kiln
