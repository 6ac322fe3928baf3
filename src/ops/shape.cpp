// Front ends of the shape primitives (cat, flip, tril/triu, diag_embed, repeat_interleave) and
// the joins built on cat (stack, hstack, vstack, dstack, column_stack).
#include "kiln/ops/shape.h"

#include "core/wrap_dim.h"
#include "kiln/ops/factories.h"
#include "kiln/type_promotion.h"
#include "ops/infer.h"
#include "ops/run.h"
#include "ops/shape_util.h"

namespace kiln {

using detail::wrap_dim;

namespace detail {

void check_same_device(const std::vector<Tensor>& ts, const char* op) {
  for (size_t i = 1; i < ts.size(); ++i)
    KILN_CHECK(ts[i].device() == ts[0].device(), "[", op,
               "] expected all tensors to be on the same device, but found at least two devices, ",
               ts[0].device().str(), " and ", ts[i].device().str());
}

void check_defined_list(const std::vector<Tensor>& ts, const char* op) {
  for (size_t i = 0; i < ts.size(); ++i)
    KILN_CHECK(ts[i].defined(), "[", op, "] tensor at position ", i, " is undefined");
}

}  // namespace detail

namespace {

// Note [cat of empty tensors]: as PyTorch, 1-D tensors of shape [0] are skipped (a legacy rule
// that lets `cat({empty, x})` grow x); every other input must match in all dims but `dim`. The
// result dtype is result_type over all inputs, skipped ones included.
Tensor cat_impl(const std::vector<Tensor>& tensors, int64_t dim, Tensor* out) {
  KILN_CHECK(!tensors.empty(), "[cat] expected a non-empty list of Tensors");
  detail::check_defined_list(tensors, "cat");
  detail::check_same_device(tensors, "cat");
  detail::ResultTypeState rs;
  for (const Tensor& t : tensors) rs.add(t);
  const DType dtype = rs.result();
  const Tensor* ref = nullptr;
  for (size_t i = 0; i < tensors.size(); ++i) {
    KILN_CHECK(tensors[i].dim() > 0, "[cat] zero-dimensional tensor (at position ", i,
               ") cannot be concatenated");
    if (!(tensors[i].dim() == 1 && tensors[i].size(0) == 0) && ref == nullptr) ref = &tensors[i];
  }
  OpCall c(OpId::Cat);
  DimVector shape{0};
  if (ref != nullptr) {
    const int64_t nd = ref->dim();
    dim = wrap_dim(dim, nd, "cat");
    shape = DimVector(ref->sizes());
    shape[dim] = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
      const Tensor& t = tensors[i];
      if (t.dim() == 1 && t.size(0) == 0) continue;
      KILN_CHECK(t.dim() == nd, "[cat] tensors must have same number of dimensions: got ", nd,
                 " and ", t.dim());
      for (int64_t d = 0; d < nd; ++d)
        KILN_CHECK(d == dim || t.size(d) == ref->size(d),
                   "[cat] sizes of tensors must match except in dimension ", dim,
                   ". Expected size ", ref->size(d), " but got size ", t.size(d),
                   " for tensor number ", i, " in the list (shapes ", ref->sizes(), " and ",
                   t.sizes(), ")");
      shape[dim] += t.size(dim);
      c.in.push_back(t);
    }
  } else {
    dim = 0;
  }
  c.attrs.i0 = dim;
  c.compute = dtype;
  const Device dev = tensors[0].device();
  if (out != nullptr) {
    KILN_CHECK(out->defined(), "[cat] out= tensor is undefined");
    for (const Tensor& t : tensors)
      KILN_CHECK(t.numel() == 0 || out->numel() == 0 || t.data_ptr() != out->data_ptr(),
                 "[cat] unsupported operation: the out= tensor overlaps an input");
    c.provided_out = true;
    c.out.push_back(detail::check_provided_out(c, *out, shape, dtype, dev));
  } else {
    c.out.push_back(detail::make_output(shape, dtype, dev));
  }
  return detail::run1(c);
}

std::vector<Tensor> map(const std::vector<Tensor>& ts, Tensor (*f)(const Tensor&)) {
  std::vector<Tensor> r;
  r.reserve(ts.size());
  for (const Tensor& t : ts) r.push_back(f(t));
  return r;
}

}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  return cat_impl(tensors, dim, nullptr);
}

Tensor& cat_out(Tensor& out, const std::vector<Tensor>& tensors, int64_t dim) {
  cat_impl(tensors, dim, &out);
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  KILN_CHECK(!tensors.empty(), "[stack] expects a non-empty TensorList");
  detail::check_defined_list(tensors, "stack");
  for (size_t i = 1; i < tensors.size(); ++i)
    KILN_CHECK(tensors[i].sizes() == tensors[0].sizes(),
               "[stack] expects each tensor to be equal size, but got ", tensors[0].sizes(),
               " at entry 0 and ", tensors[i].sizes(), " at entry ", i);
  dim = wrap_dim(dim, tensors[0].dim() + 1, "stack");
  std::vector<Tensor> us;
  us.reserve(tensors.size());
  for (const Tensor& t : tensors) us.push_back(t.unsqueeze(dim));
  return cat(us, dim);
}

Tensor hstack(const std::vector<Tensor>& tensors) {
  KILN_CHECK(!tensors.empty(), "[hstack] expects a non-empty TensorList");
  detail::check_defined_list(tensors, "hstack");
  std::vector<Tensor> r = atleast_1d(tensors);
  return cat(r, r[0].dim() == 1 ? 0 : 1);
}

Tensor vstack(const std::vector<Tensor>& tensors) {
  KILN_CHECK(!tensors.empty(), "[vstack] expects a non-empty TensorList");
  detail::check_defined_list(tensors, "vstack");
  return cat(atleast_2d(tensors), 0);
}

Tensor dstack(const std::vector<Tensor>& tensors) {
  KILN_CHECK(!tensors.empty(), "[dstack] expects a non-empty TensorList");
  detail::check_defined_list(tensors, "dstack");
  return cat(atleast_3d(tensors), 2);
}

Tensor column_stack(const std::vector<Tensor>& tensors) {
  KILN_CHECK(!tensors.empty(), "[column_stack] expects a non-empty TensorList");
  detail::check_defined_list(tensors, "column_stack");
  std::vector<Tensor> r;
  for (const Tensor& t : tensors)
    r.push_back(t.dim() <= 1 ? detail::reshape_any(t, {t.numel(), 1}) : t);
  return cat(r, 1);
}

Tensor atleast_1d(const Tensor& x) {
  detail::check_defined(x, "atleast_1d");
  return x.dim() == 0 ? x.unsqueeze(0) : x;
}
Tensor atleast_2d(const Tensor& x) {
  detail::check_defined(x, "atleast_2d");
  if (x.dim() == 0) return x.unsqueeze(0).unsqueeze(0);
  return x.dim() == 1 ? x.unsqueeze(0) : x;
}
Tensor atleast_3d(const Tensor& x) {
  detail::check_defined(x, "atleast_3d");
  if (x.dim() == 0) return x.unsqueeze(0).unsqueeze(0).unsqueeze(0);
  if (x.dim() == 1) return x.unsqueeze(0).unsqueeze(-1);
  return x.dim() == 2 ? x.unsqueeze(-1) : x;
}
std::vector<Tensor> atleast_1d(const std::vector<Tensor>& xs) {
  return map(xs, [](const Tensor& t) { return atleast_1d(t); });
}
std::vector<Tensor> atleast_2d(const std::vector<Tensor>& xs) {
  return map(xs, [](const Tensor& t) { return atleast_2d(t); });
}
std::vector<Tensor> atleast_3d(const std::vector<Tensor>& xs) {
  return map(xs, [](const Tensor& t) { return atleast_3d(t); });
}

// ---- flip ----
Tensor flip(const Tensor& x, IntArrayRef dims) {
  detail::check_defined(x, "flip");
  OpCall c(OpId::Flip);
  c.attrs.ints = detail::wrap_dims(dims, x.dim(), "flip");
  c.in.push_back(x);
  c.compute = x.dtype();
  c.out.push_back(detail::make_output(x.sizes(), x.dtype(), x.device()));
  return detail::run1(c);
}
Tensor fliplr(const Tensor& x) {
  detail::check_defined(x, "fliplr");
  KILN_CHECK(x.dim() >= 2, "[fliplr] input must be >= 2-d, got a ", x.dim(), "-d tensor");
  return flip(x, {1});
}
Tensor flipud(const Tensor& x) {
  detail::check_defined(x, "flipud");
  KILN_CHECK(x.dim() >= 1, "[flipud] input must be >= 1-d, got a 0-d tensor");
  return flip(x, {0});
}

// ---- triangles ----
namespace {
Tensor tri_impl(OpId id, const Tensor& x, int64_t diagonal, Tensor* inplace) {
  const char* op = op_name(id);
  detail::check_defined(x, op);
  KILN_CHECK(x.dim() >= 2, "[", op, "] input tensor must have at least 2 dimensions, got ",
             x.dim());
  OpCall c(id);
  c.attrs.i0 = diagonal;
  c.in.push_back(x);
  c.compute = x.dtype();
  if (inplace != nullptr) {
    c.out.push_back(*inplace);
    c.provided_out = c.inplace = true;
  } else {
    c.out.push_back(detail::make_output(x.sizes(), x.dtype(), x.device()));
  }
  return detail::run1(c);
}

Tensor tri_indices(bool lower, int64_t row, int64_t col, int64_t offset,
                   const TensorOptions& options) {
  const char* op = lower ? "tril_indices" : "triu_indices";
  KILN_CHECK(row >= 0, "[", op, "] row must be non-negative, got ", row);
  KILN_CHECK(col >= 0, "[", op, "] col must be non-negative, got ", col);
  std::vector<int64_t> rs, cs;
  for (int64_t i = 0; i < row; ++i)
    for (int64_t j = 0; j < col; ++j)
      if (lower ? j - i <= offset : j - i >= offset) rs.push_back(i), cs.push_back(j);
  const int64_t n = static_cast<int64_t>(rs.size());
  rs.insert(rs.end(), cs.begin(), cs.end());
  const DType dt = options.dtype_.value_or(DType::Int64);
  KILN_CHECK(dt == DType::Int64 || dt == DType::Int32, "[", op,
             "] only int32 and int64 outputs are supported, got ", dtype_name(dt));
  Tensor r = from_vector(rs, {2, n}, TensorOptions(DType::Int64));
  if (dt != DType::Int64) r = r.to(dt);
  return options.device_.is_cpu() ? r : r.to(options.device_);
}
}  // namespace

Tensor tril(const Tensor& x, int64_t diagonal) {
  return tri_impl(OpId::Tril, x, diagonal, nullptr);
}
Tensor triu(const Tensor& x, int64_t diagonal) {
  return tri_impl(OpId::Triu, x, diagonal, nullptr);
}
Tensor tril_indices(int64_t row, int64_t col, int64_t offset, const TensorOptions& options) {
  return tri_indices(true, row, col, offset, options);
}
Tensor triu_indices(int64_t row, int64_t col, int64_t offset, const TensorOptions& options) {
  return tri_indices(false, row, col, offset, options);
}

// ---- diagonals ----
Tensor diag_embed(const Tensor& x, int64_t offset, int64_t dim1, int64_t dim2) {
  detail::check_defined(x, "diag_embed");
  const int64_t nd = x.dim() + 1;
  KILN_CHECK(x.dim() >= 1, "[diag_embed] expects an input with at least 1 dimension, got 0");
  dim1 = wrap_dim(dim1, nd, "diag_embed");
  dim2 = wrap_dim(dim2, nd, "diag_embed");
  KILN_CHECK(dim1 != dim2, "[diag_embed] diagonal dimensions cannot be identical ", dim1, ", ",
             dim2);
  const int64_t n = x.size(-1) + (offset < 0 ? -offset : offset);
  DimVector shape;
  int64_t k = 0;
  for (int64_t d = 0; d < nd; ++d) shape.push_back(d == dim1 || d == dim2 ? n : x.size(k++));
  OpCall c(OpId::DiagEmbed);
  c.attrs.i0 = offset;
  c.attrs.i1 = dim1 * 64 + dim2;
  c.in.push_back(x);
  c.compute = x.dtype();
  c.out.push_back(detail::make_output(shape, x.dtype(), x.device()));
  return detail::run1(c);
}

Tensor diag(const Tensor& x, int64_t diagonal) {
  detail::check_defined(x, "diag");
  KILN_CHECK(x.dim() == 1 || x.dim() == 2, "[diag] supports 1D or 2D tensors, got ", x.dim(), "D");
  if (x.dim() == 1) return diag_embed(x, diagonal, 0, 1);
  return x.diagonal(diagonal, 0, 1).clone();
}

// ---- repeat_interleave ----
Tensor repeat_interleave(const Tensor& x, const Tensor& repeats, std::optional<int64_t> dim,
                         std::optional<int64_t> output_size) {
  detail::check_defined(x, "repeat_interleave");
  detail::check_defined(repeats, "repeat_interleave");
  KILN_CHECK(repeats.dim() <= 1, "[repeat_interleave] repeats must be 0-dim or 1-dim tensor, got ",
             repeats.dim(), " dims");
  KILN_CHECK(repeats.dtype() == DType::Int64 || repeats.dtype() == DType::Int32,
             "[repeat_interleave] repeats has to be Long or Int tensor, got ",
             dtype_name(repeats.dtype()));
  Tensor in = dim ? x : detail::reshape_any(x, {-1});
  const int64_t d = dim ? wrap_dim(*dim, std::max<int64_t>(x.dim(), 1), "repeat_interleave") : 0;
  if (in.dim() == 0) in = in.unsqueeze(0);
  const int64_t n = in.size(d);
  Tensor reps = repeats.to(DType::Int64).contiguous();
  if (reps.dim() == 0 || reps.numel() == 1)
    reps = detail::reshape_any(reps, {1}).expand({n}).contiguous();
  KILN_CHECK(reps.size(0) == n,
             "[repeat_interleave] repeats must have the same size as input along dim, but got "
             "repeats.size(0) = ",
             reps.size(0), " and input.size(", d, ") = ", n);
  reps = reps.to(Device(kCPU));
  const int64_t* rp = reps.data_ptr<int64_t>();
  int64_t total = 0;
  for (int64_t i = 0; i < n; ++i) {
    KILN_CHECK(rp[i] >= 0, "[repeat_interleave] repeats can not be negative, got ", rp[i],
               " at position ", i);
    total += rp[i];
  }
  KILN_CHECK(!output_size || *output_size == total, "[repeat_interleave] output_size ",
             output_size.value_or(0), " does not match the sum of repeats ", total);
  DimVector shape(in.sizes());
  shape[d] = total;
  OpCall c(OpId::RepeatInterleave);
  c.attrs.i0 = d;
  c.in.push_back(in);
  c.in.push_back(reps);
  c.compute = x.dtype();
  c.out.push_back(detail::make_output(shape, x.dtype(), x.device()));
  return detail::run1(c);
}

Tensor repeat_interleave(const Tensor& x, int64_t repeats, std::optional<int64_t> dim,
                         std::optional<int64_t> output_size) {
  detail::check_defined(x, "repeat_interleave");
  KILN_CHECK(repeats >= 0, "[repeat_interleave] repeats can not be negative, got ", repeats);
  Tensor in = dim ? x : detail::reshape_any(x, {-1});
  if (in.dim() == 0) in = in.unsqueeze(0);
  const int64_t d = wrap_dim(dim.value_or(0), in.dim(), "repeat_interleave");
  KILN_CHECK(!output_size || *output_size == in.size(d) * repeats,
             "[repeat_interleave] output_size ", output_size.value_or(0),
             " does not match the repeated size ", in.size(d) * repeats);
  DimVector es(in.sizes()), shape(in.sizes());
  es.insert(es.begin() + d + 1, repeats);
  shape[d] *= repeats;
  return in.unsqueeze(d + 1).expand(es).reshape(shape).contiguous();
}

Tensor repeat_interleave(const Tensor& repeats, std::optional<int64_t> output_size) {
  detail::check_defined(repeats, "repeat_interleave");
  KILN_CHECK(repeats.dim() == 1, "[repeat_interleave] repeats must be a 1-dim tensor, got ",
             repeats.dim(), " dims");
  Tensor idx = arange(repeats.size(0), TensorOptions(DType::Int64).device(repeats.device()));
  return repeat_interleave(idx, repeats, 0, output_size);
}

// ---- Tensor methods ----
Tensor Tensor::flip(IntArrayRef dims) const { return kiln::flip(*this, dims); }
Tensor Tensor::fliplr() const { return kiln::fliplr(*this); }
Tensor Tensor::flipud() const { return kiln::flipud(*this); }
Tensor Tensor::tril(int64_t diagonal) const { return kiln::tril(*this, diagonal); }
Tensor Tensor::triu(int64_t diagonal) const { return kiln::triu(*this, diagonal); }
Tensor& Tensor::tril_(int64_t diagonal) {
  tri_impl(OpId::Tril, *this, diagonal, this);
  return *this;
}
Tensor& Tensor::triu_(int64_t diagonal) {
  tri_impl(OpId::Triu, *this, diagonal, this);
  return *this;
}
Tensor Tensor::diag(int64_t diagonal) const { return kiln::diag(*this, diagonal); }
Tensor Tensor::diag_embed(int64_t offset, int64_t dim1, int64_t dim2) const {
  return kiln::diag_embed(*this, offset, dim1, dim2);
}
Tensor Tensor::repeat_interleave(int64_t repeats, std::optional<int64_t> dim,
                                 std::optional<int64_t> output_size) const {
  return kiln::repeat_interleave(*this, repeats, dim, output_size);
}
Tensor Tensor::repeat_interleave(const Tensor& repeats, std::optional<int64_t> dim,
                                 std::optional<int64_t> output_size) const {
  return kiln::repeat_interleave(*this, repeats, dim, output_size);
}

}  // namespace kiln
