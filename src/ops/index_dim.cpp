// Front ends of the along-one-dim index ops: index_select gather scatter scatter_add
// scatter_reduce index_add index_copy index_fill take take_along_dim (checks as PyTorch's).
#include "core/wrap_dim.h"
#include "kiln/ops/indexing.h"
#include "ops/index_util.h"
#include "ops/infer.h"
#include "ops/run.h"
#include "ops/tensor_factory.h"

namespace kiln {

namespace detail {

void check_index_defined(const Tensor& t, const char* op, const char* what) {
  KILN_CHECK(t.defined(), "[", op, "] ", what, " is an undefined tensor");
}

void check_index_dtype(const Tensor& index, const char* op, bool allow_int32) {
  const DType d = index.dtype();
  KILN_CHECK(d == DType::Int64 || (allow_int32 && d == DType::Int32), "[", op, "] expected dtype ",
             (allow_int32 ? "int32 or int64" : "int64"), " for index, but got ", dtype_name(d));
}

void check_same_device(const char* op, const Tensor& x,
                       std::initializer_list<const Tensor*> others) {
  for (const Tensor* t : others)
    KILN_CHECK(t->device() == x.device(), "[", op, "] expected all tensors on ", x.device().str(),
               " but found one on ", t->device().str());
}

int64_t size_or_1(const Tensor& t, int64_t d) { return t.dim() == 0 ? 1 : t.size(d); }

void set_scatter_output(OpCall& c, const Tensor& x, bool inplace) {
  if (inplace) {
    c.out.push_back(x);
    c.inplace = c.provided_out = true;
  } else {
    c.out.push_back(make_output(x.sizes(), x.dtype(), x.device(), x));
  }
}

Scalar value_scalar(const Tensor& value, const char* op) {
  check_index_defined(value, op, "value");
  KILN_CHECK(value.dim() == 0, "[", op,
             "] only supports a 0-dimensional value tensor, but got tensor with ", value.dim(),
             " dimension(s)");
  return value.item();
}

namespace {

// The checks shared by gather and scatter: index has x's number of dims (0-dim counts as 1-D)
// and is no larger than x apart from dim (and no larger than src anywhere).
void check_gather_scatter_shapes(const char* op, const Tensor& x, int64_t dim, const Tensor& index,
                                 const Tensor* src, bool is_scatter) {
  const int64_t nd = std::max<int64_t>(x.dim(), 1);
  const int64_t ni = std::max<int64_t>(index.dim(), 1);
  KILN_CHECK(ni == nd, "[", op,
             "] index tensor must have the same number of dimensions as the input tensor (index ",
             index.sizes(), ", input ", x.sizes(), ")");
  if (src != nullptr)
    KILN_CHECK(std::max<int64_t>(src->dim(), 1) == nd, "[", op,
               "] index tensor must have the same number of dimensions as src tensor (index ",
               index.sizes(), ", src ", src->sizes(), ")");
  if (index.numel() == 0) return;
  for (int64_t d = 0; d < nd; ++d) {
    const int64_t is = size_or_1(index, d);
    if (d != dim)
      KILN_CHECK(is <= size_or_1(x, d), "[", op, "] size does not match at dimension ", d,
                 ": expected index ", index.sizes(), " to be no larger than ",
                 (is_scatter ? "self " : "input "), x.sizes(), " apart from dimension ", dim);
    if (src != nullptr)
      KILN_CHECK(is <= size_or_1(*src, d), "[", op, "] expected index ", index.sizes(),
                 " to be no larger than src ", src->sizes(), " at dimension ", d);
  }
}

void check_scatter_common(const char* op, const Tensor& x, int64_t dim, const Tensor& index,
                          const Tensor* src) {
  check_index_defined(x, op, "self");
  check_index_defined(index, op, "index");
  check_index_dtype(index, op, false);
  if (src != nullptr) {
    check_index_defined(*src, op, "src");
    KILN_CHECK(src->dtype() == x.dtype(), "[", op, "] expected self.dtype to be equal to ",
               "src.dtype, but got ", dtype_name(x.dtype()), " and ", dtype_name(src->dtype()));
    check_same_device(op, x, {&index, src});
  } else {
    check_same_device(op, x, {&index});
  }
  check_gather_scatter_shapes(op, x, dim, index, src, true);
}

// Index as 0-dim-aware: a 0-dim x with a 0-dim index is fine; views keep the kernels uniform.
Tensor run_scatter(OpCall& c, const Tensor& x, bool inplace) {
  set_scatter_output(c, x, inplace);
  run(c);
  return inplace ? x : c.out[0];
}

// The reductions scatter_reduce accepts, as the row's i1 code.
int64_t scatter_reduce_code(std::string_view reduce) {
  static constexpr std::string_view kNames[] = {"sum", "prod", "mean", "amax", "amin"};
  for (int64_t i = 0; i < 5; ++i)
    if (reduce == kNames[i]) return i;
  KILN_ERROR("[scatter_reduce] reduce argument must be either sum, prod, mean, amax or amin, got ",
             reduce);
}

void check_reduction_dtype(const char* op, DType d, bool minmax, bool arithmetic) {
  KILN_CHECK(!(minmax && is_complex(d)), "[", op,
             "] amax/amin reductions do not support complex tensors");
  KILN_CHECK(!(arithmetic && is_float8(d)), "[", op, "] does not support ", dtype_name(d),
             " with a reduction");
}

void check_index_1d_source(const char* op, const Tensor& x, int64_t dim, const Tensor& index,
                           const Tensor& source) {
  KILN_CHECK(index.dim() <= 1, "[", op, "] index should have dimension 1 or 0 (got ", index.dim(),
             ")");
  KILN_CHECK(source.dtype() == x.dtype(), "[", op, "] self (", dtype_name(x.dtype()),
             ") and source (", dtype_name(source.dtype()), ") must have the same scalar type");
  KILN_CHECK(std::max<int64_t>(source.dim(), 1) == std::max<int64_t>(x.dim(), 1), "[", op,
             "] source ", source.sizes(), " and self ", x.sizes(),
             " must have the same number of dimensions");
  KILN_CHECK(index.numel() == size_or_1(source, dim), "[", op, "] number of indices (",
             index.numel(), ") should be equal to source.size(dim) (", size_or_1(source, dim), ")");
  for (int64_t d = 0; d < x.dim(); ++d)
    if (d != dim)
      KILN_CHECK(x.size(d) == source.size(d), "[", op, "] source ", source.sizes(), " and self ",
                 x.sizes(), " must match in every dimension but dim ", dim);
  check_same_device(op, x, {&index, &source});
}

}  // namespace

Tensor scatter_impl(const Tensor& x, int64_t dim, const Tensor& index, const Tensor* src,
                    const Scalar* value, std::string_view reduce, bool inplace) {
  const char* op = "scatter";
  check_scatter_common(op, x, dim, index, src);
  dim = wrap_dim(dim, x.dim(), op);
  int64_t code = 0;
  if (!reduce.empty()) {
    KILN_CHECK(reduce == "add" || reduce == "multiply", "[", op,
               "] reduce argument must be either add or multiply, got ", reduce);
    code = reduce == "add" ? 1 : 2;
    check_reduction_dtype(op, x.dtype(), false, true);
  }
  OpCall c(src != nullptr ? OpId::Scatter : OpId::ScatterValue);
  c.in.push_back(x);
  c.in.push_back(index);
  if (src != nullptr) {
    c.in.push_back(*src);
  } else {
    c.attrs.s0 = *value;
    c.attrs.has_s0 = true;
  }
  c.attrs.i0 = dim;
  c.attrs.i1 = code;
  return run_scatter(c, x, inplace);
}

Tensor scatter_add_impl(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                        bool inplace) {
  const char* op = "scatter_add";
  check_scatter_common(op, x, dim, index, &src);
  check_reduction_dtype(op, x.dtype(), false, true);
  OpCall c(OpId::ScatterAdd);
  c.in = {x, index, src};
  c.attrs.i0 = wrap_dim(dim, x.dim(), op);
  return run_scatter(c, x, inplace);
}

Tensor scatter_reduce_impl(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                           std::string_view reduce, bool include_self, bool inplace) {
  const char* op = "scatter_reduce";
  check_scatter_common(op, x, dim, index, &src);
  const int64_t code = scatter_reduce_code(reduce);
  check_reduction_dtype(op, x.dtype(), code >= 3, true);
  OpCall c(OpId::ScatterReduce);
  c.in = {x, index, src};
  c.attrs.i0 = wrap_dim(dim, x.dim(), op);
  c.attrs.i1 = code;
  c.attrs.flag = include_self;
  return run_scatter(c, x, inplace);
}

Tensor index_add_impl(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source,
                      const Scalar& alpha, bool inplace) {
  const char* op = "index_add";
  check_index_defined(x, op, "self");
  check_index_defined(index, op, "index");
  check_index_defined(source, op, "source");
  dim = wrap_dim(dim, x.dim(), op);
  check_index_dtype(index, op, true);
  check_index_1d_source(op, x, dim, index, source);
  check_reduction_dtype(op, x.dtype(), false, true);
  KILN_CHECK(!(is_integral(x.dtype(), true) && (alpha.is_floating_point() || alpha.is_complex())),
             "[", op, "] for integral input tensors, argument alpha must not be a floating point ",
             "number");
  OpCall c(OpId::IndexAdd);
  c.in = {x, index, source};
  c.attrs.i0 = dim;
  c.attrs.s0 = alpha;
  c.attrs.has_s0 = true;
  return run_scatter(c, x, inplace);
}

Tensor index_copy_impl(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source,
                       bool inplace) {
  const char* op = "index_copy";
  check_index_defined(x, op, "self");
  check_index_defined(index, op, "index");
  check_index_defined(source, op, "source");
  dim = wrap_dim(dim, x.dim(), op);
  check_index_dtype(index, op, false);
  check_index_1d_source(op, x, dim, index, source);
  OpCall c(OpId::IndexCopy);
  c.in = {x, index, source};
  c.attrs.i0 = dim;
  return run_scatter(c, x, inplace);
}

Tensor index_fill_impl(const Tensor& x, int64_t dim, const Tensor& index, const Scalar& value,
                       bool inplace) {
  const char* op = "index_fill";
  check_index_defined(x, op, "self");
  check_index_defined(index, op, "index");
  dim = wrap_dim(dim, x.dim(), op);
  check_index_dtype(index, op, false);
  KILN_CHECK(index.dim() <= 1, "[", op, "] index has to be a vector or a scalar (got ", index.dim(),
             " dims)");
  check_same_device(op, x, {&index});
  KILN_CHECK(!(value.is_complex() && !is_complex(x.dtype())), "[", op, "] cannot fill a ",
             dtype_name(x.dtype()), " tensor with a complex value");
  OpCall c(OpId::IndexFill);
  c.in = {x, index};
  c.attrs.i0 = dim;
  c.attrs.s0 = value;
  c.attrs.has_s0 = true;
  return run_scatter(c, x, inplace);
}

}  // namespace detail

// ---- index_select / gather ----
namespace {
Tensor index_select_call(const Tensor& x, int64_t dim, const Tensor& index, Tensor* out) {
  const char* op = "index_select";
  detail::check_index_defined(x, op, "self");
  detail::check_index_defined(index, op, "index");
  dim = detail::wrap_dim(dim, x.dim(), op);
  detail::check_index_dtype(index, op, true);
  KILN_CHECK(index.dim() <= 1, "[", op, "] index is supposed to be a vector (got ", index.dim(),
             " dims)");
  KILN_CHECK(x.dim() > 0 || index.numel() == 1, "[", op,
             "] index to a 0-dim tensor can have only 1 value, got ", index.numel(), " value(s)");
  detail::check_same_device(op, x, {&index});
  DimVector shape(x.sizes().begin(), x.sizes().end());
  if (x.dim() > 0) shape[dim] = index.numel();
  OpCall c(OpId::IndexSelect);
  c.in = {x, index};
  c.attrs.i0 = dim;
  if (out != nullptr) {
    KILN_CHECK(out->defined(), "[", op, "] out= tensor is undefined");
    KILN_CHECK(out->dtype() == x.dtype(), "[", op, "] expected out to have dtype ",
               dtype_name(x.dtype()), " but got ", dtype_name(out->dtype()));
    c.provided_out = true;
    c.out.push_back(detail::check_provided_out(c, *out, shape, x.dtype(), x.device()));
  } else {
    c.out.push_back(detail::make_output(shape, x.dtype(), x.device()));
  }
  return detail::run1(c);
}
}  // namespace

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  return index_select_call(x, dim, index, nullptr);
}

Tensor& index_select_out(Tensor& out, const Tensor& x, int64_t dim, const Tensor& index) {
  index_select_call(x, dim, index, &out);
  return out;
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index, bool sparse_grad) {
  (void)sparse_grad;
  const char* op = "gather";
  detail::check_index_defined(x, op, "self");
  detail::check_index_defined(index, op, "index");
  dim = detail::wrap_dim(dim, x.dim(), op);
  detail::check_index_dtype(index, op, false);
  detail::check_same_device(op, x, {&index});
  detail::check_gather_scatter_shapes(op, x, dim, index, nullptr, false);
  OpCall c(OpId::Gather);
  c.in = {x, index};
  c.attrs.i0 = dim;
  c.out.push_back(detail::make_output(index.sizes(), x.dtype(), x.device()));
  return detail::run1(c);
}

// ---- scatter family (out-of-place) ----
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  return detail::scatter_impl(x, dim, index, &src, nullptr, {}, false);
}
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Scalar& value) {
  return detail::scatter_impl(x, dim, index, nullptr, &value, {}, false);
}
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
               std::string_view reduce) {
  KILN_CHECK(!reduce.empty(), "[scatter] reduce argument must be either add or multiply");
  return detail::scatter_impl(x, dim, index, &src, nullptr, reduce, false);
}
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Scalar& value,
               std::string_view reduce) {
  KILN_CHECK(!reduce.empty(), "[scatter] reduce argument must be either add or multiply");
  return detail::scatter_impl(x, dim, index, nullptr, &value, reduce, false);
}
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  return detail::scatter_add_impl(x, dim, index, src, false);
}
Tensor scatter_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                      std::string_view reduce, bool include_self) {
  return detail::scatter_reduce_impl(x, dim, index, src, reduce, include_self, false);
}
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source,
                 const Scalar& alpha) {
  return detail::index_add_impl(x, dim, index, source, alpha, false);
}
Tensor index_copy(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source) {
  return detail::index_copy_impl(x, dim, index, source, false);
}
Tensor index_fill(const Tensor& x, int64_t dim, const Tensor& index, const Scalar& value) {
  return detail::index_fill_impl(x, dim, index, value, false);
}
Tensor index_fill(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& value) {
  return detail::index_fill_impl(x, dim, index, detail::value_scalar(value, "index_fill"), false);
}

// ---- take / take_along_dim (composites) ----
namespace {
// t as a 1-D tensor (a view when possible); a 0-dim t becomes [1].
Tensor flat_1d(const Tensor& t) { return t.dim() == 0 ? t.unsqueeze(0) : t.reshape({-1}); }
}  // namespace

Tensor take(const Tensor& x, const Tensor& index) {
  const char* op = "take";
  detail::check_index_defined(x, op, "self");
  detail::check_index_defined(index, op, "index");
  detail::check_index_dtype(index, op, false);
  detail::check_same_device(op, x, {&index});
  KILN_CHECK(x.numel() > 0 || index.numel() == 0, "[", op, "] tried to take from an empty tensor");
  Tensor flat = flat_1d(x);
  try {
    return index_select(flat, 0, flat_1d(index)).reshape(index.sizes());
  } catch (const Error& e) {
    // Name this op, not the primitive it runs on.
    std::string m = e.what();
    const std::string from = "[index_select]";
    if (m.rfind(from, 0) == 0) m = "[take]" + m.substr(from.size());
    throw Error(m);
  }
}

Tensor take_along_dim(const Tensor& x, const Tensor& indices, std::optional<int64_t> dim) {
  const char* op = "take_along_dim";
  detail::check_index_defined(x, op, "self");
  detail::check_index_defined(indices, op, "indices");
  KILN_CHECK(indices.dtype() == DType::Int64, "[", op,
             "] dtype of indices should be int64 but got ", dtype_name(indices.dtype()));
  detail::check_same_device(op, x, {&indices});
  if (!dim) return gather(flat_1d(x), 0, flat_1d(indices));
  KILN_CHECK(x.dim() == indices.dim(), "[", op,
             "] input and indices should have the same number of dimensions, but got ", x.dim(),
             " dimensions and ", indices.dim(), " dimensions");
  const int64_t d = detail::wrap_dim(*dim, x.dim(), op);
  if (x.dim() == 0) return gather(x, d, indices);
  DimVector xs(x.sizes().begin(), x.sizes().end()),
      is(indices.sizes().begin(), indices.sizes().end());
  xs[d] = indices.size(d);
  DimVector ib = detail::broadcast_shapes(op, xs, indices.sizes());
  is[d] = x.size(d);
  DimVector xb = detail::broadcast_shapes(op, is, x.sizes());
  return gather(x.expand(xb), d, indices.expand(ib));
}

}  // namespace kiln
