// Advanced indexing: index / index_put with optional index tensors (aten::index semantics) and
// PyTorch's C++ tensor indexing (TensorIndex lists: ints, slices, None, Ellipsis, bools, tensors).
// Note [Advanced index result shape]: after bool masks become their nonzero() columns, the
// index tensors broadcast to one shape B. If the indexed dims are adjacent, B replaces them in
// place; otherwise the indexed dims are moved to the front (a permuted view) and B comes first.
// The Index/IndexPut rows then always see adjacent indexed dims starting at attrs.i0.
#include "amp/autocast_state.h"
#include "core/wrap_dim.h"
#include "kiln/ops/factories.h"
#include "kiln/ops/indexing.h"
#include "ops/index_util.h"
#include "ops/infer.h"
#include "ops/run.h"
#include "ops/tensor_factory.h"

namespace kiln {

TensorIndex::TensorIndex(const char* s) : kind_(Kind::Ellipsis) {
  KILN_CHECK(s != nullptr && std::string_view(s) == "...", "[index] expected \"...\" to ",
             "represent an ellipsis index, but got \"", (s ? s : "(null)"), "\"");
}

namespace {

// The canonical form of an index list: x permuted so the indexed dims are adjacent from `first`,
// and the (broadcast, int64/int32) index tensors for those dims.
struct AdvancedIndex {
  Tensor x;  // possibly a permuted view
  int64_t first = 0;
  std::vector<Tensor> idx;    // all of shape B (expanded views)
  DimVector result_shape;     // x.shape[:first] + B + x.shape[first+m:]
  std::vector<int64_t> perm;  // the permutation applied to x (empty: none)
};

AdvancedIndex make_advanced(const Tensor& x, const std::vector<std::optional<Tensor>>& indices,
                            const char* op) {
  // Bool/uint8 masks become one int64 index per dim they cover.
  std::vector<std::optional<Tensor>> list;
  int64_t dim = 0;
  for (const auto& oi : indices) {
    if (!oi || !oi->defined()) {
      list.emplace_back(std::nullopt);
      ++dim;
      continue;
    }
    const Tensor& t = *oi;
    detail::check_same_device(op, x, {&t});
    if (t.dtype() == DType::Bool || t.dtype() == DType::UInt8) {
      Tensor mask = t.dtype() == DType::Bool ? t : t.to(DType::Bool);
      KILN_CHECK(dim + t.dim() <= x.dim(), "[", op, "] too many indices for tensor of dimension ",
                 x.dim());
      for (int64_t j = 0; j < t.dim(); ++j)
        KILN_CHECK(t.size(j) == x.size(dim + j), "[", op, "] the shape of the mask ", t.sizes(),
                   " at index ", j, " does not match the shape of the indexed tensor ", x.sizes(),
                   " at index ", dim + j);
      Tensor nz = nonzero(mask);
      for (int64_t j = 0; j < t.dim(); ++j) list.emplace_back(nz.select(1, j));
      dim += t.dim();
      continue;
    }
    KILN_CHECK(t.dtype() == DType::Int64 || t.dtype() == DType::Int32, "[", op,
               "] tensors used as indices must be int64, int32, uint8 or bool tensors, got ",
               dtype_name(t.dtype()));
    list.emplace_back(t);
    ++dim;
  }
  KILN_CHECK(static_cast<int64_t>(list.size()) <= x.dim(), "[", op,
             "] too many indices for tensor of dimension ", x.dim(), " (got ", list.size(), ")");
  AdvancedIndex a;
  DimVector bshape;
  bool any = false;
  int64_t lo = -1, hi = -1;
  for (size_t k = 0; k < list.size(); ++k) {
    if (!list[k]) continue;
    if (any) {
      IntArrayRef a = bshape, b = list[k]->sizes();
      const size_t n = std::max(a.size(), b.size());
      DimVector r(n, 1);
      for (size_t i = 0; i < n; ++i) {
        const int64_t sa = i < n - a.size() ? 1 : a[i - (n - a.size())];
        const int64_t sb = i < n - b.size() ? 1 : b[i - (n - b.size())];
        KILN_CHECK(sa == sb || sa == 1 || sb == 1, "[", op,
                   "] shape mismatch: indexing tensors could not be broadcast together with ",
                   "shapes ", a, " and ", b);
        r[i] = sa == 1 ? sb : sa;
      }
      bshape = r;
    } else {
      bshape = DimVector(list[k]->sizes().begin(), list[k]->sizes().end());
    }
    any = true;
    if (lo < 0) lo = static_cast<int64_t>(k);
    hi = static_cast<int64_t>(k);
  }
  KILN_ASSERT(any, "make_advanced without an index tensor");
  bool adjacent = true;
  for (int64_t k = lo; k <= hi; ++k)
    if (!list[k]) adjacent = false;
  a.x = x;
  std::vector<int64_t> dims;  // indexed dims of x, in order
  for (size_t k = 0; k < list.size(); ++k)
    if (list[k]) dims.push_back(static_cast<int64_t>(k));
  if (adjacent) {
    a.first = lo;
  } else {
    a.perm = dims;
    for (int64_t d = 0; d < x.dim(); ++d)
      if (d >= static_cast<int64_t>(list.size()) || !list[d]) a.perm.push_back(d);
    a.x = x.permute(a.perm);
    a.first = 0;
  }
  for (int64_t d : dims) a.idx.push_back(list[d]->expand(bshape));
  const int64_t m = static_cast<int64_t>(dims.size());
  for (int64_t d = 0; d < a.first; ++d) a.result_shape.push_back(a.x.size(d));
  for (int64_t s : bshape) a.result_shape.push_back(s);
  for (int64_t d = a.first + m; d < a.x.dim(); ++d) a.result_shape.push_back(a.x.size(d));
  return a;
}

bool has_tensor(const std::vector<std::optional<Tensor>>& indices) {
  for (const auto& t : indices)
    if (t && t->defined()) return true;
  return false;
}

// Drops leading size-1 dims of a value beyond `ndim` (PyTorch's slicePrefix1sDims), so a value
// of shape [1, 3] can be written into a [3] slot.
Tensor strip_leading_ones(const Tensor& v, int64_t ndim) {
  Tensor r = v;
  while (r.dim() > ndim && r.size(0) == 1) r = r.squeeze(0);
  return r;
}

}  // namespace

Tensor index(const Tensor& x, const std::vector<std::optional<Tensor>>& indices) {
  const char* op = "index";
  detail::check_index_defined(x, op, "self");
  if (!has_tensor(indices)) {
    KILN_CHECK(static_cast<int64_t>(indices.size()) <= x.dim(), "[", op,
               "] too many indices for tensor of dimension ", x.dim());
    return x;
  }
  AdvancedIndex a = make_advanced(x, indices, op);
  OpCall c(OpId::Index);
  c.in.push_back(a.x);
  for (auto& t : a.idx) c.in.push_back(t);
  c.attrs.i0 = a.first;
  c.out.push_back(detail::make_output(a.result_shape, x.dtype(), x.device()));
  return detail::run1(c);
}

namespace detail {

Tensor index_put_impl(const Tensor& x, const std::vector<std::optional<Tensor>>& indices,
                      const Tensor& values, bool accumulate, bool inplace) {
  const char* op = "index_put";
  check_index_defined(x, op, "self");
  check_index_defined(values, op, "values");
  // Under autocast the out-of-place form promotes to the wider of self and values (PyTorch's
  // promote list); the dtype check below runs on the promoted pair.
  if (!inplace && KILN_UNLIKELY(autocast_active())) {
    Tensor xx = x, vv = values;
    autocast_args(AutocastPolicy::Promote, {&xx, &vv});
    if (!xx.is_same(x) || !vv.is_same(values))
      return index_put_impl(xx, indices, vv, accumulate, false);
  }
  KILN_CHECK(values.dtype() == x.dtype(), "[", op,
             "] index put requires the source and destination dtypes match, got ",
             dtype_name(x.dtype()), " for the destination and ", dtype_name(values.dtype()),
             " for the source");
  check_same_device(op, x, {&values});
  KILN_CHECK(!(accumulate && is_float8(x.dtype())), "[", op, "] accumulate does not support ",
             dtype_name(x.dtype()));
  // Note [index_put autograd]: out of place = a recorded copy of x updated in place by
  // IndexPut, so gradients reach both x and values (an out= call would reject them). The copy is
  // a fresh tensor in the canonical (permuted) dim order, never a view, so the in-place record
  // lands on it even when x needs no gradient.
  if (!has_tensor(indices)) {  // x[:, :] = values
    KILN_CHECK(static_cast<int64_t>(indices.size()) <= x.dim(), "[", op,
               "] too many indices for tensor of dimension ", x.dim());
    Tensor out = inplace ? x : x.clone();
    Tensor v = strip_leading_ones(values, x.dim());
    if (accumulate)
      out.add_(v);
    else
      out.copy_(v);
    return out;
  }
  AdvancedIndex a = make_advanced(x, indices, op);
  Tensor v = strip_leading_ones(values, static_cast<int64_t>(a.result_shape.size()));
  bool fits = v.dim() <= static_cast<int64_t>(a.result_shape.size());
  for (int64_t j = 1; fits && j <= v.dim(); ++j) {
    const int64_t vs = v.size(-j), rs = a.result_shape[a.result_shape.size() - j];
    fits = vs == rs || vs == 1;
  }
  KILN_CHECK(fits, "[", op, "] shape mismatch: value tensor of shape ", values.sizes(),
             " cannot be broadcast to indexing result of shape ", IntArrayRef(a.result_shape));
  Tensor target = a.x;
  if (!inplace) {
    Tensor t = a.x.contiguous();
    target = t.is_same(a.x) ? a.x.clone() : t;
  }
  OpCall c(OpId::IndexPut);
  c.in.push_back(target);
  c.in.push_back(v.expand(a.result_shape));
  for (auto& t : a.idx) c.in.push_back(t);
  c.attrs.i0 = a.first;
  c.attrs.flag = accumulate;
  c.out.push_back(target);
  c.inplace = true;
  c.provided_out = true;
  run(c);
  if (inplace) return x;
  if (a.perm.empty()) return target;
  DimVector inv(a.perm.size());
  for (size_t i = 0; i < a.perm.size(); ++i) inv[a.perm[i]] = static_cast<int64_t>(i);
  return target.permute(inv);
}

}  // namespace detail

Tensor index_put(const Tensor& x, const std::vector<std::optional<Tensor>>& indices,
                 const Tensor& values, bool accumulate) {
  return detail::index_put_impl(x, indices, values, accumulate, false);
}

// ---- TensorIndex lists ----
namespace {

struct Sliced {
  Tensor view;                                 // x after ints, slices, None, Ellipsis, bools
  std::vector<std::optional<Tensor>> tensors;  // the advanced part, aligned with view's dims
};

Sliced apply_slicing(const Tensor& x, ArrayRef<TensorIndex> indices, const char* op) {
  detail::check_index_defined(x, op, "self");
  int64_t consumed = 0, ellipses = 0;
  for (const TensorIndex& i : indices) {
    if (i.is_integer() || i.is_slice()) {
      ++consumed;
    } else if (i.is_ellipsis()) {
      ++ellipses;
    } else if (i.is_tensor()) {
      detail::check_index_defined(i.tensor(), op, "an index");
      const Tensor& t = i.tensor();
      const bool mask = t.dtype() == DType::Bool || t.dtype() == DType::UInt8;
      consumed += mask ? t.dim() : 1;
    }
  }
  KILN_CHECK(ellipses <= 1, "[", op, "] an index can only have a single ellipsis ('...')");
  KILN_CHECK(consumed <= x.dim(), "[", op, "] too many indices for tensor of dimension ", x.dim(),
             " (got ", consumed, ")");
  Sliced s;
  s.view = x;
  int64_t dim = 0, covered = 0;
  auto record = [&](const Tensor& t, int64_t span) {
    while (covered < dim) s.tensors.emplace_back(std::nullopt), ++covered;
    s.tensors.emplace_back(t);
    covered += span;
    dim += span;
  };
  auto bool_index = [&](bool b) {
    s.view = s.view.unsqueeze(dim);
    Tensor t = b ? zeros({1}, TensorOptions(DType::Int64).device(x.device()))
                 : empty({0}, TensorOptions(DType::Int64).device(x.device()));
    record(t, 1);
  };
  auto select = [&](int64_t i) {
    const int64_t n = s.view.size(dim);
    KILN_CHECK(i >= -n && i < n, "[", op, "] index ", i, " is out of bounds for dimension ", dim,
               " with size ", n);
    s.view = s.view.select(dim, i);
  };
  for (const TensorIndex& i : indices) {
    switch (i.kind()) {
      case TensorIndex::Kind::Integer:
        select(i.integer());
        break;
      case TensorIndex::Kind::Slice: {
        const int64_t step = i.slice().step().value_or(1);
        KILN_CHECK(step > 0, "[", op, "] slice step must be greater than zero (got ", step, ")");
        s.view = s.view.slice(dim, i.slice().start(), i.slice().stop(), step);
        ++dim;
        break;
      }
      case TensorIndex::Kind::None:
        s.view = s.view.unsqueeze(dim);
        ++dim;
        break;
      case TensorIndex::Kind::Ellipsis:
        dim += x.dim() - consumed;
        break;
      case TensorIndex::Kind::Boolean:
        bool_index(i.boolean());
        break;
      case TensorIndex::Kind::Tensor: {
        const Tensor& t = i.tensor();
        const bool mask = t.dtype() == DType::Bool || t.dtype() == DType::UInt8;
        if (t.dim() == 0 && mask) {
          bool_index(t.item<bool>());
        } else if (t.dim() == 0 && is_integral(t.dtype(), false)) {
          select(t.item<int64_t>());
        } else {
          record(t, mask ? t.dim() : 1);
        }
        break;
      }
    }
  }
  return s;
}

}  // namespace

Tensor Tensor::index(ArrayRef<TensorIndex> indices) const {
  Sliced s = apply_slicing(*this, indices, "index");
  if (s.tensors.empty()) return s.view;
  return kiln::index(s.view, s.tensors);
}
Tensor Tensor::index(std::initializer_list<TensorIndex> indices) const {
  return index(ArrayRef<TensorIndex>(indices));
}

Tensor& Tensor::index_put_(ArrayRef<TensorIndex> indices, const Tensor& value) {
  const char* op = "index_put_";
  KILN_CHECK(value.defined(), "[", op, "] value is an undefined tensor");
  Sliced s = apply_slicing(*this, indices, op);
  Tensor v = value.dtype() == dtype() ? value : value.to(dtype());
  if (s.tensors.empty()) {
    s.view.copy_(strip_leading_ones(v, s.view.dim()));
    return *this;
  }
  detail::index_put_impl(s.view, s.tensors, v, false, true);
  return *this;
}
Tensor& Tensor::index_put_(ArrayRef<TensorIndex> indices, const Scalar& value) {
  Sliced s = apply_slicing(*this, indices, "index_put_");
  if (s.tensors.empty()) {
    s.view.fill_(value);
    return *this;
  }
  detail::index_put_impl(s.view, s.tensors, full({}, value, options()), false, true);
  return *this;
}
Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> indices, const Tensor& value) {
  return index_put_(ArrayRef<TensorIndex>(indices), value);
}
Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> indices, const Scalar& value) {
  return index_put_(ArrayRef<TensorIndex>(indices), value);
}

}  // namespace kiln
