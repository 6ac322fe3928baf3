// Front ends of the binary arithmetic ops (add ... copysign): free functions, out= forms and
// Tensor methods, with the argument checks PyTorch makes (alpha, rounding_mode, pow exponents).
#include "kiln/ops/elementwise.h"
#include "kiln/type_promotion.h"
#include "ops/elementwise_call.h"

namespace kiln {

using detail::binary_op;
using detail::binary_op_;
using detail::binary_op_out;
using detail::EwScalars;
using detail::wrap_scalar;

// ---- add / sub ----
namespace {
// PyTorch's alpha rules, checked against the promoted dtype.
void check_alpha(const char* op, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  if (alpha.is_integral()) return;
  DType dt = result_type(a, b);
  KILN_CHECK(!alpha.is_bool() || dt == DType::Bool, "[", op,
             "] boolean alpha is only supported for boolean results (result type ", dtype_name(dt),
             ")");
  KILN_CHECK(is_floating_point(dt) || is_complex(dt) || alpha.is_bool(), "[", op,
             "] for integral input tensors, argument alpha must not be a floating point number "
             "(got ",
             alpha, ")");
  KILN_CHECK(is_complex(dt) || !alpha.is_complex(), "[", op,
             "] for non-complex input tensors, argument alpha must not be a complex number (got ",
             alpha, ")");
}
}  // namespace

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  check_alpha("add", a, b, alpha);
  return binary_op(OpId::Add, a, b, {alpha, {}});
}
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  return add(a, wrap_scalar(b), alpha);
}
Tensor& add_out(Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  check_alpha("add", a, b, alpha);
  return binary_op_out(OpId::Add, out, a, b, {alpha, {}});
}
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  check_alpha("sub", a, b, alpha);
  return binary_op(OpId::Sub, a, b, {alpha, {}});
}
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  return sub(a, wrap_scalar(b), alpha);
}
Tensor& sub_out(Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  check_alpha("sub", a, b, alpha);
  return binary_op_out(OpId::Sub, out, a, b, {alpha, {}});
}
Tensor Tensor::add(const Tensor& o, const Scalar& alpha) const {
  return kiln::add(*this, o, alpha);
}
Tensor Tensor::add(const Scalar& o, const Scalar& alpha) const {
  return kiln::add(*this, o, alpha);
}
Tensor& Tensor::add_(const Tensor& o, const Scalar& alpha) {
  check_alpha("add_", *this, o, alpha);
  return binary_op_(OpId::Add, *this, o, {alpha, {}});
}
Tensor& Tensor::add_(const Scalar& o, const Scalar& alpha) { return add_(wrap_scalar(o), alpha); }
Tensor Tensor::sub(const Tensor& o, const Scalar& alpha) const {
  return kiln::sub(*this, o, alpha);
}
Tensor Tensor::sub(const Scalar& o, const Scalar& alpha) const {
  return kiln::sub(*this, o, alpha);
}
Tensor& Tensor::sub_(const Tensor& o, const Scalar& alpha) {
  check_alpha("sub_", *this, o, alpha);
  return binary_op_(OpId::Sub, *this, o, {alpha, {}});
}
Tensor& Tensor::sub_(const Scalar& o, const Scalar& alpha) { return sub_(wrap_scalar(o), alpha); }

// ---- mul / div ----
KILN_EW_BINARY_OP(mul, Mul)
KILN_EW_BINARY_OP(div, Div)
KILN_EW_BINARY_METHODS(true_divide, Div)
KILN_EW_BINARY_METHODS(floor_divide, DivFloor)
Tensor true_divide(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor floor_divide(const Tensor& a, const Tensor& b) { return binary_op(OpId::DivFloor, a, b); }
Tensor floor_divide(const Tensor& a, const Scalar& b) {
  return binary_op(OpId::DivFloor, a, wrap_scalar(b));
}
Tensor& floor_divide_out(Tensor& out, const Tensor& a, const Tensor& b) {
  return binary_op_out(OpId::DivFloor, out, a, b);
}

namespace {
OpId div_mode(std::string_view mode) {
  if (mode == "trunc") return OpId::DivTrunc;
  if (mode == "floor") return OpId::DivFloor;
  KILN_ERROR("[div] expected rounding_mode to be one of None, 'trunc', or 'floor' but found '",
             mode, "'");
}
}  // namespace
Tensor div(const Tensor& a, const Tensor& b, std::string_view rounding_mode) {
  return binary_op(div_mode(rounding_mode), a, b);
}
Tensor div(const Tensor& a, const Scalar& b, std::string_view rounding_mode) {
  return binary_op(div_mode(rounding_mode), a, wrap_scalar(b));
}
Tensor& div_out(Tensor& out, const Tensor& a, const Tensor& b, std::string_view rounding_mode) {
  return binary_op_out(div_mode(rounding_mode), out, a, b);
}
Tensor Tensor::div(const Tensor& o, std::string_view rounding_mode) const {
  return kiln::div(*this, o, rounding_mode);
}
Tensor Tensor::div(const Scalar& o, std::string_view rounding_mode) const {
  return kiln::div(*this, o, rounding_mode);
}
Tensor& Tensor::div_(const Tensor& o, std::string_view rounding_mode) {
  return binary_op_(div_mode(rounding_mode), *this, o);
}
Tensor& Tensor::div_(const Scalar& o, std::string_view rounding_mode) {
  return binary_op_(div_mode(rounding_mode), *this, wrap_scalar(o));
}

// ---- remainder / fmod ----
KILN_EW_BINARY_OP(remainder, Remainder)
KILN_EW_BINARY_OP(fmod, Fmod)
Tensor remainder(const Scalar& a, const Tensor& b) {
  return binary_op(OpId::Remainder, wrap_scalar(a), b);
}

// ---- pow ----
// Note [pow shortcuts]
// As PyTorch, a floating or complex base raised to the real scalar 0.5, -0.5, 2, 3, -1 or -2 is
// computed as sqrt, rsqrt, x*x, x*x*x, 1/x or 1/(x*x) rather than by pow: faster, and exact
// where pow would round (x^2 is one multiplication; complex x^2 has no log/exp error). So, as in
// PyTorch, pow(-inf, 0.5) is NaN (sqrt's value), not C pow's +inf. Integer bases keep pow,
// which is exact (power by squaring).
namespace {
enum class PowShortcut { None, Sqrt, Rsqrt, Square, Cube, Reciprocal, InvSquare };

PowShortcut pow_shortcut(const Tensor& base, const Scalar& e) {
  if (!(base.is_floating_point() || base.is_complex()) || e.is_complex() || e.is_bool())
    return PowShortcut::None;
  const double v = e.to_double();
  if (v == 0.5) return PowShortcut::Sqrt;
  if (v == -0.5) return PowShortcut::Rsqrt;
  if (v == 2) return PowShortcut::Square;
  if (v == -1) return PowShortcut::Reciprocal;
  // Two-op forms would round twice in 16-bit floats; pow rounds once there.
  const bool reduced = base.dtype() == DType::Float16 || base.dtype() == DType::BFloat16;
  if (v == 3 && !reduced) return PowShortcut::Cube;
  if (v == -2 && !reduced) return PowShortcut::InvSquare;
  return PowShortcut::None;
}

void check_pow_exponent(const Tensor& base, const Scalar& e) {
  KILN_CHECK(!(is_integral(base.dtype(), true) && e.is_integral() && e.to_int() < 0),
             "[pow] integers to negative integer powers are not allowed (base dtype ",
             dtype_name(base.dtype()), ", exponent ", e, ")");
}
}  // namespace

Tensor pow(const Tensor& a, const Tensor& b) { return binary_op(OpId::Pow, a, b); }
Tensor pow(const Tensor& a, const Scalar& b) {
  check_pow_exponent(a, b);
  switch (pow_shortcut(a, b)) {
    case PowShortcut::Sqrt:
      return sqrt(a);
    case PowShortcut::Rsqrt:
      return rsqrt(a);
    case PowShortcut::Square:
      return square(a);
    case PowShortcut::Cube:
      return mul(square(a), a);
    case PowShortcut::Reciprocal:
      return reciprocal(a);
    case PowShortcut::InvSquare:
      return reciprocal(square(a));
    case PowShortcut::None:
      break;
  }
  return binary_op(OpId::Pow, a, wrap_scalar(b));
}
Tensor pow(const Scalar& a, const Tensor& b) { return binary_op(OpId::Pow, wrap_scalar(a), b); }
Tensor& pow_out(Tensor& out, const Tensor& a, const Tensor& b) {
  return binary_op_out(OpId::Pow, out, a, b);
}
Tensor& pow_out(Tensor& out, const Tensor& a, const Scalar& b) {
  check_pow_exponent(a, b);
  switch (pow_shortcut(a, b)) {
    case PowShortcut::Sqrt:
      return sqrt_out(out, a);
    case PowShortcut::Rsqrt:
      return rsqrt_out(out, a);
    case PowShortcut::Square:
      return square_out(out, a);
    case PowShortcut::Cube:
      return mul_out(out, square(a), a);
    case PowShortcut::Reciprocal:
      return reciprocal_out(out, a);
    case PowShortcut::InvSquare:
      return reciprocal_out(out, square(a));
    case PowShortcut::None:
      break;
  }
  return binary_op_out(OpId::Pow, out, a, wrap_scalar(b));
}
Tensor Tensor::pow(const Tensor& o) const { return kiln::pow(*this, o); }
Tensor Tensor::pow(const Scalar& o) const { return kiln::pow(*this, o); }
Tensor& Tensor::pow_(const Tensor& o) { return binary_op_(OpId::Pow, *this, o); }
Tensor& Tensor::pow_(const Scalar& o) {
  check_pow_exponent(*this, o);
  switch (pow_shortcut(*this, o)) {
    case PowShortcut::Sqrt:
      return sqrt_();
    case PowShortcut::Rsqrt:
      return rsqrt_();
    case PowShortcut::Square:
      return square_();
    case PowShortcut::Cube:
      return mul_(kiln::square(*this));
    case PowShortcut::Reciprocal:
      return reciprocal_();
    case PowShortcut::InvSquare:
      return square_().reciprocal_();
    case PowShortcut::None:
      break;
  }
  return binary_op_(OpId::Pow, *this, wrap_scalar(o));
}

// float_power: pow computed in float64 / complex128.
namespace {
DType float_power_dtype(bool complex) { return complex ? DType::Complex128 : DType::Float64; }
}  // namespace
Tensor float_power(const Tensor& a, const Tensor& b) {
  DType d = float_power_dtype(a.is_complex() || b.is_complex());
  return pow(a.to(d), b.to(d));
}
Tensor float_power(const Tensor& a, const Scalar& b) {
  DType d = float_power_dtype(a.is_complex() || b.is_complex());
  return binary_op(OpId::Pow, a.to(d), wrap_scalar(b));
}
Tensor float_power(const Scalar& a, const Tensor& b) {
  DType d = float_power_dtype(a.is_complex() || b.is_complex());
  return binary_op(OpId::Pow, wrap_scalar(a), b.to(d));
}
Tensor& float_power_out(Tensor& out, const Tensor& a, const Tensor& b) {
  DType d = float_power_dtype(a.is_complex() || b.is_complex());
  KILN_CHECK(out.dtype() == d, "[float_power] the output given to float_power has dtype ",
             dtype_name(out.dtype()), " but the operation's result requires dtype ", dtype_name(d));
  return binary_op_out(OpId::Pow, out, a.to(d), b.to(d));
}
Tensor Tensor::float_power(const Tensor& o) const { return kiln::float_power(*this, o); }
Tensor Tensor::float_power(const Scalar& o) const { return kiln::float_power(*this, o); }
Tensor& Tensor::float_power_(const Tensor& o) {
  DType d = float_power_dtype(is_complex() || o.is_complex());
  KILN_CHECK(dtype() == d, "[float_power_] the base given to float_power_ has dtype ",
             dtype_name(dtype()), " but the operation's result requires dtype ", dtype_name(d));
  return binary_op_(OpId::Pow, *this, o.to(d));
}
Tensor& Tensor::float_power_(const Scalar& o) {
  DType d = float_power_dtype(is_complex() || o.is_complex());
  KILN_CHECK(dtype() == d, "[float_power_] the base given to float_power_ has dtype ",
             dtype_name(dtype()), " but the operation's result requires dtype ", dtype_name(d));
  return binary_op_(OpId::Pow, *this, wrap_scalar(o));
}

// ---- atan2 / hypot / copysign ----
KILN_EW_BINARY_METHODS(atan2, Atan2)
KILN_EW_BINARY_METHODS(hypot, Hypot)
KILN_EW_BINARY_OP(copysign, Copysign)
Tensor atan2(const Tensor& a, const Tensor& b) { return binary_op(OpId::Atan2, a, b); }
Tensor& atan2_out(Tensor& out, const Tensor& a, const Tensor& b) {
  return binary_op_out(OpId::Atan2, out, a, b);
}
Tensor hypot(const Tensor& a, const Tensor& b) { return binary_op(OpId::Hypot, a, b); }
Tensor& hypot_out(Tensor& out, const Tensor& a, const Tensor& b) {
  return binary_op_out(OpId::Hypot, out, a, b);
}

}  // namespace kiln
