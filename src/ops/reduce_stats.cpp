// Front ends of var/std (composites of the var_mean/std_mean primitives), var_mean, std_mean,
// norm and linalg::vector_norm, and logsumexp.
#include <cmath>

#include "kiln/ops/reduce.h"
#include "ops/reduce_util.h"
#include "ops/run.h"

namespace kiln {

using detail::add_reduce_output;
using detail::reduce_call;
using detail::reduce_dims;
using detail::ReduceDims;

namespace {

std::tuple<Tensor, Tensor> var_mean_impl(bool take_sqrt, const char* op, const Tensor& x,
                                         IntArrayRef dim, const Scalar& correction, bool keepdim,
                                         Tensor* out) {
  ReduceDims rd = reduce_dims(x, dim, keepdim, op);
  KILN_CHECK(x.is_floating_point() || x.is_complex(), "[", op,
             "] only supports floating point and complex dtypes, got ", dtype_name(x.dtype()));
  KILN_CHECK(!correction.is_complex(), "[", op, "] correction must be real");
  OpCall c = reduce_call(take_sqrt ? OpId::StdMean : OpId::VarMean, x, rd, keepdim);
  c.attrs.s0 = correction;
  c.attrs.has_s0 = true;
  add_reduce_output(c, out, rd.shape, to_real(x.dtype()), to_real(x.dtype()));
  add_reduce_output(c, nullptr, rd.shape, x.dtype(), x.dtype());
  detail::run(c);
  return {c.out[0], c.out[1]};
}

Tensor norm_impl(const char* op, const Tensor& x, const Scalar& p, IntArrayRef dim, bool keepdim,
                 std::optional<DType> dtype, Tensor* out) {
  detail::check_defined(x, op);
  KILN_CHECK(!p.is_complex(), "[", op, "] the order p must be real");
  const DType d = dtype.value_or(x.dtype());
  KILN_CHECK(is_floating_point(d) || is_complex(d), "[", op,
             "] expected a floating point or complex tensor as input, got ", dtype_name(d));
  KILN_CHECK(!dtype || !x.is_complex() || is_complex(*dtype), "[", op, "] dtype ",
             dtype_name(*dtype), " cannot hold the complex input ", dtype_name(x.dtype()));
  ReduceDims rd = reduce_dims(x, dim, keepdim, op);
  const double pv = p.to<double>();
  if (pv < 0 || std::isinf(pv))
    KILN_CHECK(detail::reduced_numel(x, rd.dims) > 0, "[", op, "] cannot compute the ", p,
               " norm on an empty tensor because the operation does not have an identity");
  Tensor in = d != x.dtype() ? x.to(d) : x;
  OpCall c = reduce_call(OpId::Norm, in, rd, keepdim);
  c.attrs.s0 = Scalar(pv);
  c.attrs.has_s0 = true;
  add_reduce_output(c, out, rd.shape, to_real(d), to_real(d));
  return detail::run1(c);
}

Tensor logsumexp_impl(const Tensor& x, IntArrayRef dim, bool keepdim, Tensor* out) {
  detail::check_defined(x, "logsumexp");
  KILN_CHECK(!x.is_complex(), "[logsumexp] does not support complex inputs");
  ReduceDims rd = reduce_dims(x, dim, keepdim, "logsumexp");
  Tensor in = is_integral(x.dtype(), true) ? x.to(get_default_dtype()) : x;
  OpCall c = reduce_call(OpId::LogSumExp, in, rd, keepdim);
  add_reduce_output(c, out, rd.shape, in.dtype(), in.dtype());
  return detail::run1(c);
}

}  // namespace

std::tuple<Tensor, Tensor> var_mean(const Tensor& x, IntArrayRef dim, const Scalar& correction,
                                    bool keepdim) {
  return var_mean_impl(false, "var_mean", x, dim, correction, keepdim, nullptr);
}
std::tuple<Tensor, Tensor> std_mean(const Tensor& x, IntArrayRef dim, const Scalar& correction,
                                    bool keepdim) {
  return var_mean_impl(true, "std_mean", x, dim, correction, keepdim, nullptr);
}
// var/std: composites that drop the mean.
Tensor var(const Tensor& x, IntArrayRef dim, const Scalar& correction, bool keepdim) {
  return std::get<0>(var_mean_impl(false, "var", x, dim, correction, keepdim, nullptr));
}
Tensor std(const Tensor& x, IntArrayRef dim, const Scalar& correction, bool keepdim) {
  return std::get<0>(var_mean_impl(true, "std", x, dim, correction, keepdim, nullptr));
}
Tensor& var_out(Tensor& out, const Tensor& x, IntArrayRef dim, const Scalar& correction,
                bool keepdim) {
  var_mean_impl(false, "var", x, dim, correction, keepdim, &out);
  return out;
}
Tensor& std_out(Tensor& out, const Tensor& x, IntArrayRef dim, const Scalar& correction,
                bool keepdim) {
  var_mean_impl(true, "std", x, dim, correction, keepdim, &out);
  return out;
}

Tensor norm(const Tensor& x, const Scalar& p, IntArrayRef dim, bool keepdim,
            std::optional<DType> dtype) {
  return norm_impl("norm", x, p, dim, keepdim, dtype, nullptr);
}
namespace detail {
Tensor norm_str(const Tensor& x, std::string_view p, IntArrayRef dim, bool keepdim) {
  KILN_CHECK(p != "nuc", "[norm] the nuclear norm ('nuc') is not implemented");
  KILN_CHECK(p == "fro", "[norm] unknown norm type '", std::string(p),
             "' (expected 'fro' or a number)");
  return norm_impl("norm", x, 2, dim, keepdim, std::nullopt, nullptr);
}
}  // namespace detail
Tensor& norm_out(Tensor& out, const Tensor& x, const Scalar& p, IntArrayRef dim, bool keepdim) {
  norm_impl("norm", x, p, dim, keepdim, std::nullopt, &out);
  return out;
}
namespace linalg {
Tensor vector_norm(const Tensor& x, const Scalar& ord, IntArrayRef dim, bool keepdim,
                   std::optional<DType> dtype) {
  return norm_impl("linalg.vector_norm", x, ord, dim, keepdim, dtype, nullptr);
}
}  // namespace linalg

Tensor logsumexp(const Tensor& x, IntArrayRef dim, bool keepdim) {
  return logsumexp_impl(x, dim, keepdim, nullptr);
}
Tensor& logsumexp_out(Tensor& out, const Tensor& x, IntArrayRef dim, bool keepdim) {
  logsumexp_impl(x, dim, keepdim, &out);
  return out;
}

}  // namespace kiln
