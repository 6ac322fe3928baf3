// Front ends of the ternary elementwise ops (where, clamp family, lerp, addcmul, addcdiv) and
// their PyTorch argument checks.
#include "kiln/ops/elementwise.h"
#include "ops/elementwise_call.h"

namespace kiln {

using detail::binary_call;
using detail::ew_run;
using detail::ew_run_inplace;
using detail::ew_run_out;
using detail::ternary_call;
using detail::wrap_scalar;

// ---- where ----
namespace {
OpCall where_call(const Tensor& cond, const Tensor& a, const Tensor& b) {
  KILN_CHECK(cond.defined(), "[where] condition is an undefined tensor");
  Tensor c = cond;
  if (c.dtype() == DType::UInt8) c = c.to(DType::Bool);  // PyTorch's deprecated uint8 form
  KILN_CHECK(c.dtype() == DType::Bool,
             "[where] expected condition to be a boolean tensor, but got a tensor with dtype ",
             dtype_name(cond.dtype()));
  OpCall call = ternary_call(OpId::Where, c, a, b);
  call.promote_from = 1;  // the condition takes no part in type promotion
  return call;
}
}  // namespace

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  OpCall c = where_call(cond, a, b);
  return ew_run(c);
}
Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b) {
  return where(cond, wrap_scalar(a), b);
}
Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b) {
  return where(cond, a, wrap_scalar(b));
}
Tensor where(const Tensor& cond, const Scalar& a, const Scalar& b) {
  return where(cond, wrap_scalar(a), wrap_scalar(b));
}
Tensor& where_out(Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  OpCall c = where_call(cond, a, b);
  return ew_run_out(c, out);
}
Tensor Tensor::where(const Tensor& cond, const Tensor& other) const {
  return kiln::where(cond, *this, other);
}
Tensor Tensor::where(const Tensor& cond, const Scalar& other) const {
  return kiln::where(cond, *this, other);
}

// ---- clamp ----
namespace {
Tensor bound(const std::optional<Scalar>& s) { return s ? wrap_scalar(*s) : Tensor(); }
Tensor bound(const std::optional<Tensor>& t) { return t ? *t : Tensor(); }

// Both bounds: the Clamp primitive; one bound: ClampMin / ClampMax (undefined = absent).
OpCall clamp_call(const Tensor& x, const Tensor& lo, const Tensor& hi) {
  if (lo.defined() && hi.defined()) return ternary_call(OpId::Clamp, x, lo, hi);
  if (lo.defined()) return binary_call(OpId::ClampMin, x, lo);
  KILN_CHECK(hi.defined(), "[clamp] at least one of 'min' or 'max' must not be None");
  return binary_call(OpId::ClampMax, x, hi);
}
}  // namespace

Tensor clamp(const Tensor& x, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  OpCall c = clamp_call(x, bound(min), bound(max));
  return ew_run(c);
}
Tensor clamp(const Tensor& x, const std::optional<Tensor>& min, const std::optional<Tensor>& max) {
  OpCall c = clamp_call(x, bound(min), bound(max));
  return ew_run(c);
}
Tensor& clamp_out(Tensor& out, const Tensor& x, const std::optional<Scalar>& min,
                  const std::optional<Scalar>& max) {
  OpCall c = clamp_call(x, bound(min), bound(max));
  return ew_run_out(c, out);
}
Tensor& clamp_out(Tensor& out, const Tensor& x, const std::optional<Tensor>& min,
                  const std::optional<Tensor>& max) {
  OpCall c = clamp_call(x, bound(min), bound(max));
  return ew_run_out(c, out);
}
Tensor clip(const Tensor& x, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  return clamp(x, min, max);
}
Tensor clamp_min(const Tensor& x, const Scalar& min) { return clamp(x, min, std::nullopt); }
Tensor clamp_min(const Tensor& x, const Tensor& min) {
  return clamp(x, std::optional<Tensor>(min), std::nullopt);
}
Tensor clamp_max(const Tensor& x, const Scalar& max) {
  return clamp(x, std::optional<Scalar>(), max);
}
Tensor clamp_max(const Tensor& x, const Tensor& max) {
  return clamp(x, std::optional<Tensor>(), std::optional<Tensor>(max));
}

Tensor Tensor::clamp(const std::optional<Scalar>& min, const std::optional<Scalar>& max) const {
  return kiln::clamp(*this, min, max);
}
Tensor Tensor::clamp(const std::optional<Tensor>& min, const std::optional<Tensor>& max) const {
  return kiln::clamp(*this, min, max);
}
Tensor& Tensor::clamp_(const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  OpCall c = clamp_call(*this, bound(min), bound(max));
  return ew_run_inplace(c, *this);
}
Tensor& Tensor::clamp_(const std::optional<Tensor>& min, const std::optional<Tensor>& max) {
  OpCall c = clamp_call(*this, bound(min), bound(max));
  return ew_run_inplace(c, *this);
}
Tensor Tensor::clip(const std::optional<Scalar>& min, const std::optional<Scalar>& max) const {
  return kiln::clamp(*this, min, max);
}
Tensor& Tensor::clip_(const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  return clamp_(min, max);
}
Tensor Tensor::clamp_min(const Scalar& min) const { return kiln::clamp_min(*this, min); }
Tensor Tensor::clamp_min(const Tensor& min) const { return kiln::clamp_min(*this, min); }
Tensor& Tensor::clamp_min_(const Scalar& min) { return clamp_(min, std::nullopt); }
Tensor& Tensor::clamp_min_(const Tensor& min) {
  return clamp_(std::optional<Tensor>(min), std::nullopt);
}
Tensor Tensor::clamp_max(const Scalar& max) const { return kiln::clamp_max(*this, max); }
Tensor Tensor::clamp_max(const Tensor& max) const { return kiln::clamp_max(*this, max); }
Tensor& Tensor::clamp_max_(const Scalar& max) { return clamp_(std::optional<Scalar>(), max); }
Tensor& Tensor::clamp_max_(const Tensor& max) {
  return clamp_(std::optional<Tensor>(), std::optional<Tensor>(max));
}

// ---- lerp ----
namespace {
OpCall lerp_call(const Tensor& start, const Tensor& end, const Tensor& weight, bool scalar_weight) {
  KILN_CHECK(start.dtype() == end.dtype(), "[lerp] expected dtype ", dtype_name(start.dtype()),
             " for `end` but got dtype ", dtype_name(end.dtype()));
  KILN_CHECK(start.is_floating_point() || start.is_complex(),
             "[lerp] is only supported for floating point and complex tensors, got ",
             dtype_name(start.dtype()));
  if (scalar_weight) {
    KILN_CHECK(!weight.is_complex() || start.is_complex(), "[lerp] a complex weight needs complex ",
               "start and end tensors (got ", dtype_name(start.dtype()), ")");
  } else {
    KILN_CHECK(start.dtype() == weight.dtype(), "[lerp] expected dtype ", dtype_name(start.dtype()),
               " for `weight` but got dtype ", dtype_name(weight.dtype()));
  }
  return ternary_call(OpId::Lerp, start, end, weight);
}
}  // namespace

Tensor lerp(const Tensor& start, const Tensor& end, const Scalar& weight) {
  OpCall c = lerp_call(start, end, wrap_scalar(weight), true);
  return ew_run(c);
}
Tensor lerp(const Tensor& start, const Tensor& end, const Tensor& weight) {
  OpCall c = lerp_call(start, end, weight, false);
  return ew_run(c);
}
Tensor& lerp_out(Tensor& out, const Tensor& start, const Tensor& end, const Scalar& weight) {
  OpCall c = lerp_call(start, end, wrap_scalar(weight), true);
  return ew_run_out(c, out);
}
Tensor& lerp_out(Tensor& out, const Tensor& start, const Tensor& end, const Tensor& weight) {
  OpCall c = lerp_call(start, end, weight, false);
  return ew_run_out(c, out);
}
Tensor Tensor::lerp(const Tensor& end, const Scalar& weight) const {
  return kiln::lerp(*this, end, weight);
}
Tensor Tensor::lerp(const Tensor& end, const Tensor& weight) const {
  return kiln::lerp(*this, end, weight);
}
Tensor& Tensor::lerp_(const Tensor& end, const Scalar& weight) {
  OpCall c = lerp_call(*this, end, wrap_scalar(weight), true);
  return ew_run_inplace(c, *this);
}
Tensor& Tensor::lerp_(const Tensor& end, const Tensor& weight) {
  OpCall c = lerp_call(*this, end, weight, false);
  return ew_run_inplace(c, *this);
}

// ---- addcmul / addcdiv ----
namespace {
OpCall addc_call(OpId id, const Tensor& self, const Tensor& t1, const Tensor& t2,
                 const Scalar& value) {
  if (id == OpId::Addcdiv)
    KILN_CHECK(!(is_integral(t1.dtype(), true) && is_integral(t2.dtype(), true)),
               "[addcdiv] integer division with addcdiv is no longer supported (got ",
               dtype_name(t1.dtype()), " and ", dtype_name(t2.dtype()),
               "); use (input + value * trunc(tensor1 / tensor2)).to(input.dtype()) for the old "
               "behaviour or input + value * tensor1 / tensor2 with floating tensors");
  return ternary_call(id, self, t1, t2, {value, {}});
}
}  // namespace

Tensor addcmul(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  OpCall c = addc_call(OpId::Addcmul, self, t1, t2, value);
  return ew_run(c);
}
Tensor& addcmul_out(Tensor& out, const Tensor& self, const Tensor& t1, const Tensor& t2,
                    const Scalar& value) {
  OpCall c = addc_call(OpId::Addcmul, self, t1, t2, value);
  return ew_run_out(c, out);
}
Tensor addcdiv(const Tensor& self, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  OpCall c = addc_call(OpId::Addcdiv, self, t1, t2, value);
  return ew_run(c);
}
Tensor& addcdiv_out(Tensor& out, const Tensor& self, const Tensor& t1, const Tensor& t2,
                    const Scalar& value) {
  OpCall c = addc_call(OpId::Addcdiv, self, t1, t2, value);
  return ew_run_out(c, out);
}
Tensor Tensor::addcmul(const Tensor& t1, const Tensor& t2, const Scalar& value) const {
  return kiln::addcmul(*this, t1, t2, value);
}
Tensor& Tensor::addcmul_(const Tensor& t1, const Tensor& t2, const Scalar& value) {
  OpCall c = addc_call(OpId::Addcmul, *this, t1, t2, value);
  return ew_run_inplace(c, *this);
}
Tensor Tensor::addcdiv(const Tensor& t1, const Tensor& t2, const Scalar& value) const {
  return kiln::addcdiv(*this, t1, t2, value);
}
Tensor& Tensor::addcdiv_(const Tensor& t1, const Tensor& t2, const Scalar& value) {
  OpCall c = addc_call(OpId::Addcdiv, *this, t1, t2, value);
  return ew_run_inplace(c, *this);
}

}  // namespace kiln
