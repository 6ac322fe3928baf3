// Front ends of masked_fill, masked_select, masked_scatter, nonzero (argwhere, nonzero_numpy).
// Masks must be bool (PyTorch's rule); they broadcast with self.
#include "kiln/ops/indexing.h"
#include "ops/index_util.h"
#include "ops/infer.h"
#include "ops/run.h"
#include "ops/tensor_factory.h"

namespace kiln {

namespace {
void check_mask(const char* op, const Tensor& x, const Tensor& mask) {
  detail::check_index_defined(x, op, "self");
  detail::check_index_defined(mask, op, "mask");
  KILN_CHECK(mask.dtype() == DType::Bool, "[", op,
             "] only supports boolean masks, but got mask with dtype ", dtype_name(mask.dtype()));
  detail::check_same_device(op, x, {&mask});
}

// In-place: mask must broadcast to x's shape; out-of-place: both broadcast to a common shape.
DimVector mask_shape(const char* op, const Tensor& x, const Tensor& mask, bool inplace) {
  DimVector shape = detail::broadcast_shapes(op, x.sizes(), mask.sizes());
  if (inplace)
    KILN_CHECK(IntArrayRef(shape) == x.sizes(), "[", op, "] mask of shape ", mask.sizes(),
               " cannot be broadcast to the shape ", x.sizes(), " of the tensor written in place");
  return shape;
}
}  // namespace

namespace detail {

Tensor masked_fill_impl(const Tensor& x, const Tensor& mask, const Scalar& value, bool inplace) {
  const char* op = "masked_fill";
  check_mask(op, x, mask);
  KILN_CHECK(!(value.is_complex() && !is_complex(x.dtype())), "[", op, "] cannot fill a ",
             dtype_name(x.dtype()), " tensor with a complex value");
  DimVector shape = mask_shape(op, x, mask, inplace);
  OpCall c(OpId::MaskedFill);
  c.in = {x.expand(shape), mask.expand(shape)};
  c.attrs.s0 = value;
  c.attrs.has_s0 = true;
  if (inplace) {
    c.out.push_back(x);
    c.inplace = c.provided_out = true;
  } else {
    c.out.push_back(make_output(shape, x.dtype(), x.device(), x));
  }
  run(c);
  return inplace ? x : c.out[0];
}

Tensor masked_scatter_impl(const Tensor& x, const Tensor& mask, const Tensor& source,
                           bool inplace) {
  const char* op = "masked_scatter";
  check_mask(op, x, mask);
  check_index_defined(source, op, "source");
  KILN_CHECK(source.dtype() == x.dtype(), "[", op,
             "] expected self and source to have the same dtypes but got ", dtype_name(x.dtype()),
             " and ", dtype_name(source.dtype()));
  check_same_device(op, x, {&source});
  DimVector shape = mask_shape(op, x, mask, inplace);
  OpCall c(OpId::MaskedScatter);
  Tensor xe = x.expand(shape);
  c.in = {xe, mask.expand(shape), source.contiguous()};
  if (inplace) {
    c.out.push_back(x);
    c.inplace = c.provided_out = true;
  } else {
    c.out.push_back(make_output(shape, x.dtype(), x.device(), x));
  }
  run(c);
  return inplace ? x : c.out[0];
}

}  // namespace detail

Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value) {
  return detail::masked_fill_impl(x, mask, value, false);
}
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Tensor& value) {
  return detail::masked_fill_impl(x, mask, detail::value_scalar(value, "masked_fill"), false);
}

Tensor masked_select(const Tensor& x, const Tensor& mask) {
  const char* op = "masked_select";
  check_mask(op, x, mask);
  DimVector shape = mask_shape(op, x, mask, false);
  OpCall c(OpId::MaskedSelect);
  c.in = {x.expand(shape), mask.expand(shape)};
  c.out.push_back(detail::make_output({0}, x.dtype(), x.device()));
  return detail::run1(c);
}

Tensor masked_scatter(const Tensor& x, const Tensor& mask, const Tensor& source) {
  return detail::masked_scatter_impl(x, mask, source, false);
}

Tensor nonzero(const Tensor& x) {
  detail::check_index_defined(x, "nonzero", "self");
  OpCall c(OpId::Nonzero);
  c.in = {x};
  c.out.push_back(detail::make_output({0, x.dim()}, DType::Int64, x.device()));
  return detail::run1(c);
}

Tensor argwhere(const Tensor& x) { return nonzero(x); }

std::vector<Tensor> nonzero_numpy(const Tensor& x) {
  detail::check_index_defined(x, "nonzero", "self");
  Tensor nz = nonzero(x.dim() == 0 ? x.unsqueeze(0) : x);
  std::vector<Tensor> r;
  for (int64_t d = 0; d < nz.size(1); ++d) r.push_back(nz.select(1, d));
  return r;
}

}  // namespace kiln
