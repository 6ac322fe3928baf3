// Front ends of sum, nansum, mean, nanmean, prod, any, all and count_nonzero (free functions
// and out= forms). dtype= casts the input first, as PyTorch does.
#include "kiln/ops/reduce.h"

#include "kiln/ops/elementwise.h"
#include "ops/reduce_util.h"
#include "ops/run.h"

namespace kiln {

using detail::add_reduce_output;
using detail::reduce_call;
using detail::reduce_dims;
using detail::ReduceDims;

namespace {

// The dtype the computation uses: dtype=, else out='s dtype, else none (the input's rules).
std::optional<DType> compute_dtype(const char* op, std::optional<DType> dtype, const Tensor* out) {
  if (out == nullptr) return dtype;
  KILN_CHECK(out->defined(), "[", op, "] out= tensor is undefined");
  KILN_CHECK(!dtype || *dtype == out->dtype(), "[", op, "] expected out tensor to have dtype ",
             dtype_name(*dtype), ", but got ", dtype_name(out->dtype()), " instead");
  return out->dtype();
}

// sum / nansum / prod: bool and integers give int64 unless a dtype is requested.
Tensor sum_like(OpId id, const Tensor& x, IntArrayRef dim, bool keepdim, std::optional<DType> dtype,
                Tensor* out) {
  const char* op = op_name(id);
  detail::check_defined(x, op);
  dtype = compute_dtype(op, dtype, out);
  if (id == OpId::NanSum)
    KILN_CHECK(!is_complex(dtype.value_or(x.dtype())), "[nansum] does not support complex inputs");
  ReduceDims rd = reduce_dims(x, dim, keepdim, op);
  Tensor in = dtype && *dtype != x.dtype() ? x.to(*dtype) : x;
  const DType natural = is_integral(in.dtype(), true) ? DType::Int64 : in.dtype();
  OpCall c = reduce_call(id, in, rd, keepdim);
  c.attrs.dtype = dtype;
  add_reduce_output(c, out, rd.shape, natural, dtype.value_or(natural));
  return detail::run1(c);
}

// mean / nanmean: floating (and, for mean, complex) dtypes only.
Tensor mean_like(OpId id, const Tensor& x, IntArrayRef dim, bool keepdim,
                 std::optional<DType> dtype, Tensor* out) {
  const char* op = op_name(id);
  detail::check_defined(x, op);
  dtype = compute_dtype(op, dtype, out);
  const DType d = dtype.value_or(x.dtype());
  const bool ok = is_floating_point(d) || (id == OpId::Mean && is_complex(d));
  if (!ok && !dtype)
    KILN_ERROR("[", op, "] could not infer output dtype. Input dtype must be either a floating ",
               "point", (id == OpId::Mean ? " or complex" : ""), " dtype. Got: ", dtype_name(d),
               " (pass dtype= to compute in a floating type)");
  KILN_CHECK(ok, "[", op, "] could not infer output dtype. Optional dtype must be either a ",
             "floating point", (id == OpId::Mean ? " or complex" : ""),
             " dtype. Got: ", dtype_name(d));
  ReduceDims rd = reduce_dims(x, dim, keepdim, op);
  Tensor in = d != x.dtype() ? x.to(d) : x;
  OpCall c = reduce_call(id, in, rd, keepdim);
  c.attrs.dtype = dtype;
  add_reduce_output(c, out, rd.shape, d, d);
  return detail::run1(c);
}

Tensor any_all(OpId id, const Tensor& x, IntArrayRef dim, bool keepdim, Tensor* out) {
  const char* op = op_name(id);
  ReduceDims rd = reduce_dims(x, dim, keepdim, op);
  DType natural = x.dtype() == DType::UInt8 ? DType::UInt8 : DType::Bool;
  if (out != nullptr) {
    KILN_CHECK(out->defined(), "[", op, "] out= tensor is undefined");
    KILN_CHECK(out->dtype() == DType::Bool || out->dtype() == DType::UInt8, "[", op,
               "] only supports bool and uint8 tensors for the result, got ",
               dtype_name(out->dtype()));
    natural = out->dtype();
  }
  OpCall c = reduce_call(id, x, rd, keepdim);
  add_reduce_output(c, out, rd.shape, natural, natural);
  return detail::run1(c);
}

}  // namespace

Tensor sum(const Tensor& x, std::optional<DType> dtype) {
  return sum_like(OpId::Sum, x, {}, false, dtype, nullptr);
}
Tensor sum(const Tensor& x, IntArrayRef dim, bool keepdim, std::optional<DType> dtype) {
  return sum_like(OpId::Sum, x, dim, keepdim, dtype, nullptr);
}
Tensor& sum_out(Tensor& out, const Tensor& x, IntArrayRef dim, bool keepdim,
                std::optional<DType> dtype) {
  sum_like(OpId::Sum, x, dim, keepdim, dtype, &out);
  return out;
}
Tensor nansum(const Tensor& x, std::optional<DType> dtype) {
  return sum_like(OpId::NanSum, x, {}, false, dtype, nullptr);
}
Tensor nansum(const Tensor& x, IntArrayRef dim, bool keepdim, std::optional<DType> dtype) {
  return sum_like(OpId::NanSum, x, dim, keepdim, dtype, nullptr);
}
Tensor& nansum_out(Tensor& out, const Tensor& x, IntArrayRef dim, bool keepdim,
                   std::optional<DType> dtype) {
  sum_like(OpId::NanSum, x, dim, keepdim, dtype, &out);
  return out;
}
Tensor prod(const Tensor& x, std::optional<DType> dtype) {
  return sum_like(OpId::Prod, x, {}, false, dtype, nullptr);
}
Tensor prod(const Tensor& x, int64_t dim, bool keepdim, std::optional<DType> dtype) {
  return sum_like(OpId::Prod, x, dim, keepdim, dtype, nullptr);
}
Tensor& prod_out(Tensor& out, const Tensor& x, int64_t dim, bool keepdim,
                 std::optional<DType> dtype) {
  sum_like(OpId::Prod, x, dim, keepdim, dtype, &out);
  return out;
}

Tensor mean(const Tensor& x, std::optional<DType> dtype) {
  return mean_like(OpId::Mean, x, {}, false, dtype, nullptr);
}
Tensor mean(const Tensor& x, IntArrayRef dim, bool keepdim, std::optional<DType> dtype) {
  return mean_like(OpId::Mean, x, dim, keepdim, dtype, nullptr);
}
Tensor& mean_out(Tensor& out, const Tensor& x, IntArrayRef dim, bool keepdim,
                 std::optional<DType> dtype) {
  mean_like(OpId::Mean, x, dim, keepdim, dtype, &out);
  return out;
}
Tensor nanmean(const Tensor& x, IntArrayRef dim, bool keepdim, std::optional<DType> dtype) {
  return mean_like(OpId::NanMean, x, dim, keepdim, dtype, nullptr);
}

Tensor any(const Tensor& x) { return any_all(OpId::Any, x, {}, false, nullptr); }
Tensor any(const Tensor& x, IntArrayRef dim, bool keepdim) {
  return any_all(OpId::Any, x, dim, keepdim, nullptr);
}
Tensor all(const Tensor& x) { return any_all(OpId::All, x, {}, false, nullptr); }
Tensor all(const Tensor& x, IntArrayRef dim, bool keepdim) {
  return any_all(OpId::All, x, dim, keepdim, nullptr);
}
Tensor& any_out(Tensor& out, const Tensor& x, IntArrayRef dim, bool keepdim) {
  any_all(OpId::Any, x, dim, keepdim, &out);
  return out;
}
Tensor& all_out(Tensor& out, const Tensor& x, IntArrayRef dim, bool keepdim) {
  any_all(OpId::All, x, dim, keepdim, &out);
  return out;
}

// Composite: nonzero elements as bools (|z| for complex: the copy to bool reads the real part),
// summed to int64.
Tensor count_nonzero(const Tensor& x, IntArrayRef dim) {
  detail::check_defined(x, "count_nonzero");
  reduce_dims(x, dim, false, "count_nonzero");  // errors name count_nonzero
  const Tensor nz = (x.is_complex() ? abs(x) : x).to(DType::Bool);
  return sum(nz, dim);
}

}  // namespace kiln
