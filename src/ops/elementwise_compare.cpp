// Front ends of min/max, comparisons, logical and bitwise binary ops, and the composites
// isclose / allclose / equal.
#include "kiln/ops/elementwise.h"
#include "kiln/ops/reduce.h"
#include "ops/elementwise_call.h"

namespace kiln {

using detail::binary_op;
using detail::binary_op_;
using detail::binary_op_out;
using detail::wrap_scalar;

// ---- min / max ----
#define KILN_MINMAX_OP(name, Id)                                                      \
  Tensor name(const Tensor& a, const Tensor& b) { return binary_op(OpId::Id, a, b); } \
  Tensor& name##_out(Tensor& out, const Tensor& a, const Tensor& b) {                 \
    return binary_op_out(OpId::Id, out, a, b);                                        \
  }                                                                                   \
  Tensor Tensor::name(const Tensor& o) const { return binary_op(OpId::Id, *this, o); }
KILN_MINMAX_OP(maximum, Maximum)
KILN_MINMAX_OP(minimum, Minimum)
KILN_MINMAX_OP(fmax, Fmax)
KILN_MINMAX_OP(fmin, Fmin)
#undef KILN_MINMAX_OP

// ---- comparisons ----
#define KILN_COMPARISON_OP(name, Id)                                  \
  KILN_EW_BINARY_OP(name, Id)                                         \
  Tensor& name##_out(Tensor& out, const Tensor& a, const Scalar& b) { \
    return binary_op_out(OpId::Id, out, a, wrap_scalar(b));           \
  }
KILN_COMPARISON_OP(eq, Eq)
KILN_COMPARISON_OP(ne, Ne)
KILN_COMPARISON_OP(lt, Lt)
KILN_COMPARISON_OP(le, Le)
KILN_COMPARISON_OP(gt, Gt)
KILN_COMPARISON_OP(ge, Ge)
#undef KILN_COMPARISON_OP

// ---- logical ----
#define KILN_LOGICAL_OP(name, Id)                                                     \
  Tensor name(const Tensor& a, const Tensor& b) { return binary_op(OpId::Id, a, b); } \
  Tensor& name##_out(Tensor& out, const Tensor& a, const Tensor& b) {                 \
    return binary_op_out(OpId::Id, out, a, b);                                        \
  }                                                                                   \
  KILN_EW_BINARY_METHODS(name, Id)
KILN_LOGICAL_OP(logical_and, LogicalAnd)
KILN_LOGICAL_OP(logical_or, LogicalOr)
KILN_LOGICAL_OP(logical_xor, LogicalXor)
#undef KILN_LOGICAL_OP

// ---- bitwise ----
#define KILN_BITWISE_OP(name, Id) \
  KILN_EW_BINARY_OP(name, Id)     \
  Tensor name(const Scalar& a, const Tensor& b) { return binary_op(OpId::Id, wrap_scalar(a), b); }
KILN_BITWISE_OP(bitwise_and, BitwiseAnd)
KILN_BITWISE_OP(bitwise_or, BitwiseOr)
KILN_BITWISE_OP(bitwise_xor, BitwiseXor)
KILN_BITWISE_OP(bitwise_left_shift, BitwiseLeftShift)
KILN_BITWISE_OP(bitwise_right_shift, BitwiseRightShift)
#undef KILN_BITWISE_OP

// ---- composites ----

// PyTorch's isclose: a == b, or (equal_nan) both NaN, or |a - b| finite and within
// atol + |rtol * b|; integer and bool inputs are compared in the default float dtype.
Tensor isclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  KILN_CHECK(a.dtype() == b.dtype(), "[isclose] expected both inputs to have the same dtype, got ",
             dtype_name(a.dtype()), " and ", dtype_name(b.dtype()));
  KILN_CHECK(rtol >= 0, "[isclose] rtol must be greater than or equal to zero, but got ", rtol);
  KILN_CHECK(atol >= 0, "[isclose] atol must be greater than or equal to zero, but got ", atol);
  Tensor close = eq(a, b);
  bool floating = a.is_floating_point() || a.is_complex();
  if (equal_nan && floating) close = logical_or(close, logical_and(isnan(a), isnan(b)));
  if (rtol == 0 && atol == 0) return close;
  Tensor fa = floating ? a : a.to(get_default_dtype());
  Tensor fb = floating ? b : b.to(get_default_dtype());
  Tensor allowed = add(abs(mul(fb, rtol)), atol);
  Tensor actual = abs(sub(fa, fb));
  return logical_or(close, logical_and(isfinite(actual), le(actual, allowed)));
}
Tensor Tensor::isclose(const Tensor& o, double rtol, double atol, bool equal_nan) const {
  return kiln::isclose(*this, o, rtol, atol, equal_nan);
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  return all(isclose(a, b, rtol, atol, equal_nan)).item<bool>();
}
bool Tensor::allclose(const Tensor& o, double rtol, double atol, bool equal_nan) const {
  return kiln::allclose(*this, o, rtol, atol, equal_nan);
}

bool equal(const Tensor& a, const Tensor& b) {
  KILN_CHECK(a.dtype() == b.dtype(), "[equal] expected both inputs to have the same dtype, got ",
             dtype_name(a.dtype()), " and ", dtype_name(b.dtype()));
  KILN_CHECK(a.device() == b.device(), "[equal] expected both inputs on the same device, got ",
             a.device().str(), " and ", b.device().str());
  if (a.sizes() != b.sizes()) return false;
  if (a.numel() == 0) return true;
  return all(eq(a, b)).item<bool>();
}
bool Tensor::equal(const Tensor& o) const { return kiln::equal(*this, o); }

}  // namespace kiln
