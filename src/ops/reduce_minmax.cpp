// Front ends of amax, amin, max/min (all elements, or values+indices over a dim), argmax,
// argmin and the composite aminmax. Reducing an empty dim is an error (no identity).
#include "core/wrap_dim.h"
#include "kiln/ops/reduce.h"
#include "ops/reduce_util.h"
#include "ops/run.h"

namespace kiln {

using detail::add_reduce_output;
using detail::reduce_call;
using detail::reduce_dims;
using detail::ReduceDims;

namespace {

void check_real(const Tensor& x, const char* op) {
  KILN_CHECK(!x.is_complex(), "[", op, "] does not support complex input (got ",
             dtype_name(x.dtype()), ")");
}

// For amax/amin over `dim` (empty: all dims), reported as `op`.
Tensor extreme(OpId id, const char* op, const Tensor& x, IntArrayRef dim, bool keepdim,
               Tensor* out) {
  ReduceDims rd = reduce_dims(x, dim, keepdim, op);
  check_real(x, op);
  detail::check_nonempty(x, rd.dims, op);
  if (out != nullptr) {
    KILN_CHECK(out->defined(), "[", op, "] out= tensor is undefined");
    KILN_CHECK(out->dtype() == x.dtype(), "[", op,
               "] expected the dtype for input and out to match, but got ", dtype_name(x.dtype()),
               " for input's dtype and ", dtype_name(out->dtype()), " for out's dtype");
  }
  OpCall c = reduce_call(id, x, rd, keepdim);
  add_reduce_output(c, out, rd.shape, x.dtype(), x.dtype());
  return detail::run1(c);
}

void check_full_nonempty(const Tensor& x, const char* op) {
  KILN_CHECK(x.numel() > 0, "[", op,
             "] Expected reduction dim to be specified for input.numel() == 0. Specify the "
             "reduction dim with the 'dim' argument.");
}

std::tuple<Tensor, Tensor> with_indices(OpId id, const char* op, const Tensor& x, int64_t dim,
                                        bool keepdim, Tensor* values, Tensor* indices) {
  detail::check_defined(x, op);
  check_real(x, op);
  ReduceDims rd = reduce_dims(x, dim, keepdim, op);
  detail::check_nonempty(x, rd.dims, op);
  if (values != nullptr) {
    KILN_CHECK(values->defined() && indices->defined(), "[", op, "] out= tensor is undefined");
    KILN_CHECK(values->dtype() == x.dtype(), "[", op,
               "] expected the values out tensor to have dtype ", dtype_name(x.dtype()),
               ", but got ", dtype_name(values->dtype()));
    KILN_CHECK(indices->dtype() == DType::Int64, "[", op,
               "] expected the indices out tensor to have dtype int64, but got ",
               dtype_name(indices->dtype()));
  }
  OpCall c = reduce_call(id, x, rd, keepdim);
  add_reduce_output(c, values, rd.shape, x.dtype(), x.dtype());
  add_reduce_output(c, indices, rd.shape, DType::Int64, DType::Int64);
  detail::run(c);
  return {c.out[0], c.out[1]};
}

Tensor arg(OpId id, const char* op, const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  detail::check_defined(x, op);
  check_real(x, op);
  ReduceDims rd;
  if (dim) {
    rd = reduce_dims(x, *dim, keepdim, op);
    detail::check_nonempty(x, rd.dims, op);
  } else {
    check_full_nonempty(x, op);
    rd = reduce_dims(x, {}, keepdim, op);
  }
  OpCall c = reduce_call(id, x, rd, keepdim);
  add_reduce_output(c, nullptr, rd.shape, DType::Int64, DType::Int64);
  return detail::run1(c);
}

}  // namespace

Tensor amax(const Tensor& x, IntArrayRef dim, bool keepdim) {
  return extreme(OpId::Amax, "amax", x, dim, keepdim, nullptr);
}
Tensor amin(const Tensor& x, IntArrayRef dim, bool keepdim) {
  return extreme(OpId::Amin, "amin", x, dim, keepdim, nullptr);
}
Tensor& amax_out(Tensor& out, const Tensor& x, IntArrayRef dim, bool keepdim) {
  extreme(OpId::Amax, "amax", x, dim, keepdim, &out);
  return out;
}
Tensor& amin_out(Tensor& out, const Tensor& x, IntArrayRef dim, bool keepdim) {
  extreme(OpId::Amin, "amin", x, dim, keepdim, &out);
  return out;
}

Tensor max(const Tensor& x) {
  detail::check_defined(x, "max");
  check_full_nonempty(x, "max");
  return extreme(OpId::Amax, "max", x, {}, false, nullptr);
}
Tensor min(const Tensor& x) {
  detail::check_defined(x, "min");
  check_full_nonempty(x, "min");
  return extreme(OpId::Amin, "min", x, {}, false, nullptr);
}

std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim) {
  return with_indices(OpId::MaxDim, "max", x, dim, keepdim, nullptr, nullptr);
}
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim) {
  return with_indices(OpId::MinDim, "min", x, dim, keepdim, nullptr, nullptr);
}
std::tuple<Tensor&, Tensor&> max_out(Tensor& values, Tensor& indices, const Tensor& x, int64_t dim,
                                     bool keepdim) {
  with_indices(OpId::MaxDim, "max", x, dim, keepdim, &values, &indices);
  return {values, indices};
}
std::tuple<Tensor&, Tensor&> min_out(Tensor& values, Tensor& indices, const Tensor& x, int64_t dim,
                                     bool keepdim) {
  with_indices(OpId::MinDim, "min", x, dim, keepdim, &values, &indices);
  return {values, indices};
}

Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return arg(OpId::ArgMax, "argmax", x, dim, keepdim);
}
Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return arg(OpId::ArgMin, "argmin", x, dim, keepdim);
}

// Composite: two passes (amin, amax).
std::tuple<Tensor, Tensor> aminmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  detail::check_defined(x, "aminmax");
  if (!dim) check_full_nonempty(x, "aminmax");
  DimVector d;
  if (dim) d.push_back(*dim);
  return {extreme(OpId::Amin, "aminmax", x, d, keepdim, nullptr),
          extreme(OpId::Amax, "aminmax", x, d, keepdim, nullptr)};
}

}  // namespace kiln
