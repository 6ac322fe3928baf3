// Front ends of the unary elementwise ops: free functions, out= forms and Tensor methods.
// Argument checks PyTorch makes before its kernels are here; dtype rules are in unary.def.
#include <limits>

#include "kiln/ops/elementwise.h"
#include "kiln/ops/factories.h"
#include "ops/elementwise_call.h"

namespace kiln {

using detail::EwScalars;
using detail::unary_op;
using detail::unary_op_;
using detail::unary_op_out;

// f(x), f_out(out, x), x.f(), x.f_() for an op without arguments.
#define KILN_UNARY_OP(name, Id)                                                               \
  Tensor name(const Tensor& x) { return unary_op(OpId::Id, x); }                              \
  Tensor& name##_out(Tensor& out, const Tensor& x) { return unary_op_out(OpId::Id, out, x); } \
  Tensor Tensor::name() const { return unary_op(OpId::Id, *this); }                           \
  Tensor& Tensor::name##_() { return unary_op_(OpId::Id, *this); }

KILN_UNARY_OP(neg, Neg)
KILN_UNARY_OP(sgn, Sgn)
KILN_UNARY_OP(exp, Exp)
KILN_UNARY_OP(exp2, Exp2)
KILN_UNARY_OP(expm1, Expm1)
KILN_UNARY_OP(log, Log)
KILN_UNARY_OP(log2, Log2)
KILN_UNARY_OP(log10, Log10)
KILN_UNARY_OP(log1p, Log1p)
KILN_UNARY_OP(sqrt, Sqrt)
KILN_UNARY_OP(rsqrt, Rsqrt)
KILN_UNARY_OP(reciprocal, Reciprocal)
KILN_UNARY_OP(sin, Sin)
KILN_UNARY_OP(cos, Cos)
KILN_UNARY_OP(tan, Tan)
KILN_UNARY_OP(asin, Asin)
KILN_UNARY_OP(acos, Acos)
KILN_UNARY_OP(atan, Atan)
KILN_UNARY_OP(sinh, Sinh)
KILN_UNARY_OP(cosh, Cosh)
KILN_UNARY_OP(tanh, Tanh)
KILN_UNARY_OP(asinh, Asinh)
KILN_UNARY_OP(acosh, Acosh)
KILN_UNARY_OP(atanh, Atanh)
KILN_UNARY_OP(sigmoid, Sigmoid)
KILN_UNARY_OP(erf, Erf)
KILN_UNARY_OP(erfc, Erfc)
KILN_UNARY_OP(erfinv, Erfinv)
KILN_UNARY_OP(lgamma, Lgamma)
KILN_UNARY_OP(digamma, Digamma)
KILN_UNARY_OP(floor, Floor)
KILN_UNARY_OP(ceil, Ceil)
KILN_UNARY_OP(round, Round)
KILN_UNARY_OP(trunc, Trunc)
KILN_UNARY_OP(frac, Frac)
KILN_UNARY_OP(logical_not, LogicalNot)
KILN_UNARY_OP(bitwise_not, BitwiseNot)
#undef KILN_UNARY_OP

// ---- ops with checks or arguments ----

Tensor abs(const Tensor& x) { return unary_op(OpId::Abs, x); }
Tensor& abs_out(Tensor& out, const Tensor& x) { return unary_op_out(OpId::Abs, out, x); }
Tensor Tensor::abs() const { return kiln::abs(*this); }
Tensor& Tensor::abs_() {
  KILN_CHECK(!is_complex(), "[abs_] in-place abs is not supported for complex tensors (got ",
             dtype_name(dtype()), "); use abs()");
  return unary_op_(OpId::Abs, *this);
}

namespace {
void check_sign_input(const Tensor& x) {
  KILN_CHECK(!x.defined() || !x.is_complex(),
             "[sign] unlike NumPy, sign is not intended to support complex numbers; use sgn "
             "(got ",
             dtype_name(x.dtype()), ")");
}
}  // namespace
Tensor sign(const Tensor& x) {
  check_sign_input(x);
  return unary_op(OpId::Sign, x);
}
Tensor& sign_out(Tensor& out, const Tensor& x) {
  check_sign_input(x);
  return unary_op_out(OpId::Sign, out, x);
}
Tensor Tensor::sign() const { return kiln::sign(*this); }
Tensor& Tensor::sign_() {
  check_sign_input(*this);
  return unary_op_(OpId::Sign, *this);
}

// square(bool) is pow(bool, 2): int64, as PyTorch.
namespace {
Tensor square_input(const Tensor& x) {
  return x.defined() && x.dtype() == DType::Bool ? x.to(DType::Int64) : x;
}
}  // namespace
Tensor square(const Tensor& x) { return unary_op(OpId::Square, square_input(x)); }
Tensor& square_out(Tensor& out, const Tensor& x) {
  return unary_op_out(OpId::Square, out, square_input(x));
}
Tensor Tensor::square() const { return kiln::square(*this); }
Tensor& Tensor::square_() {
  KILN_CHECK(dtype() != DType::Bool,
             "[square_] result type int64 can't be cast to the desired output type bool");
  return unary_op_(OpId::Square, *this);
}

// eps < 0 is the kernel's "no clamp" (Note in fn::Logit).
namespace {
EwScalars logit_args(std::optional<double> eps) { return {Scalar(eps ? *eps : -1.0), {}}; }
}  // namespace
Tensor logit(const Tensor& x, std::optional<double> eps) {
  return unary_op(OpId::Logit, x, logit_args(eps));
}
Tensor& logit_out(Tensor& out, const Tensor& x, std::optional<double> eps) {
  return unary_op_out(OpId::Logit, out, x, logit_args(eps));
}
Tensor Tensor::logit(std::optional<double> eps) const { return kiln::logit(*this, eps); }
Tensor& Tensor::logit_(std::optional<double> eps) {
  return unary_op_(OpId::Logit, *this, logit_args(eps));
}

Tensor round(const Tensor& x, int64_t decimals) {
  if (decimals == 0) return unary_op(OpId::Round, x);
  return unary_op(OpId::RoundDecimals, x, {Scalar(decimals), {}});
}
Tensor& round_out(Tensor& out, const Tensor& x, int64_t decimals) {
  if (decimals == 0) return unary_op_out(OpId::Round, out, x);
  return unary_op_out(OpId::RoundDecimals, out, x, {Scalar(decimals), {}});
}
Tensor Tensor::round(int64_t decimals) const { return kiln::round(*this, decimals); }
Tensor& Tensor::round_(int64_t decimals) {
  if (decimals == 0) return unary_op_(OpId::Round, *this);
  return unary_op_(OpId::RoundDecimals, *this, {Scalar(decimals), {}});
}

// ---- activations ----
namespace {
void check_relu_input(const Tensor& x) {
  KILN_CHECK(!x.defined() || x.dtype() != DType::Bool,
             "[relu] boolean inputs are not supported for relu");
}
OpId gelu_id(std::string_view approximate) {
  if (approximate == "none") return OpId::Gelu;
  KILN_CHECK(approximate == "tanh",
             "[gelu] approximate argument must be either \"none\" or \"tanh\", got \"", approximate,
             "\"");
  return OpId::GeluTanh;
}
}  // namespace
Tensor relu(const Tensor& x) {
  check_relu_input(x);
  return unary_op(OpId::Relu, x);
}
Tensor& relu_out(Tensor& out, const Tensor& x) {
  check_relu_input(x);
  return unary_op_out(OpId::Relu, out, x);
}
Tensor Tensor::relu() const { return kiln::relu(*this); }
Tensor& Tensor::relu_() {
  check_relu_input(*this);
  return unary_op_(OpId::Relu, *this);
}
Tensor gelu(const Tensor& x, std::string_view approximate) {
  return unary_op(gelu_id(approximate), x);
}
Tensor& gelu_out(Tensor& out, const Tensor& x, std::string_view approximate) {
  return unary_op_out(gelu_id(approximate), out, x);
}
Tensor silu(const Tensor& x) { return unary_op(OpId::Silu, x); }
Tensor& silu_out(Tensor& out, const Tensor& x) { return unary_op_out(OpId::Silu, out, x); }
Tensor softplus(const Tensor& x, const Scalar& beta, const Scalar& threshold) {
  return unary_op(OpId::Softplus, x, {beta, threshold});
}
Tensor& softplus_out(Tensor& out, const Tensor& x, const Scalar& beta, const Scalar& threshold) {
  return unary_op_out(OpId::Softplus, out, x, {beta, threshold});
}

// ---- predicates ----
#define KILN_UNARY_PREDICATE(name, Id)                                                        \
  Tensor name(const Tensor& x) { return unary_op(OpId::Id, x); }                              \
  Tensor& name##_out(Tensor& out, const Tensor& x) { return unary_op_out(OpId::Id, out, x); } \
  Tensor Tensor::name() const { return unary_op(OpId::Id, *this); }
KILN_UNARY_PREDICATE(isnan, Isnan)
KILN_UNARY_PREDICATE(isinf, Isinf)
KILN_UNARY_PREDICATE(isfinite, Isfinite)
KILN_UNARY_PREDICATE(isposinf, Isposinf)
KILN_UNARY_PREDICATE(isneginf, Isneginf)
#undef KILN_UNARY_PREDICATE

// ---- nan_to_num ----
namespace {
// The three replacement values packed for fn::NanToNum: s0 = (nan, posinf) as a complex,
// s1 = neginf. Missing infinities become the largest / lowest finite value of x's real dtype.
EwScalars nan_to_num_args(const Tensor& x, std::optional<double> nan, std::optional<double> posinf,
                          std::optional<double> neginf) {
  double big = 0;
  switch (to_real(x.dtype())) {
    case DType::Float16:
      big = static_cast<float>(std::numeric_limits<Half>::max());
      break;
    case DType::BFloat16:
      big = static_cast<float>(std::numeric_limits<BFloat16>::max());
      break;
    case DType::Float32:
      big = std::numeric_limits<float>::max();
      break;
    default:
      big = std::numeric_limits<double>::max();
  }
  return {Scalar(complex<double>(nan.value_or(0.0), posinf.value_or(big))),
          Scalar(neginf.value_or(-big))};
}
}  // namespace
Tensor nan_to_num(const Tensor& x, std::optional<double> nan, std::optional<double> posinf,
                  std::optional<double> neginf) {
  return unary_op(OpId::NanToNum, x, nan_to_num_args(x, nan, posinf, neginf));
}
Tensor& nan_to_num_out(Tensor& out, const Tensor& x, std::optional<double> nan,
                       std::optional<double> posinf, std::optional<double> neginf) {
  return unary_op_out(OpId::NanToNum, out, x, nan_to_num_args(x, nan, posinf, neginf));
}
Tensor Tensor::nan_to_num(std::optional<double> nan, std::optional<double> posinf,
                          std::optional<double> neginf) const {
  return kiln::nan_to_num(*this, nan, posinf, neginf);
}
Tensor& Tensor::nan_to_num_(std::optional<double> nan, std::optional<double> posinf,
                            std::optional<double> neginf) {
  return unary_op_(OpId::NanToNum, *this, nan_to_num_args(*this, nan, posinf, neginf));
}

// ---- complex parts ----
Tensor real(const Tensor& x) { return x.is_complex() ? x.real() : x; }
Tensor imag(const Tensor& x) {
  KILN_CHECK(x.is_complex(),
             "[imag] imag is not implemented for tensors with non-complex dtypes (got ",
             dtype_name(x.dtype()), ")");
  return x.imag();
}
Tensor conj(const Tensor& x) { return x.is_complex() ? unary_op(OpId::ConjPhysical, x) : x; }
Tensor conj_physical(const Tensor& x) { return conj(x); }
Tensor& conj_physical_out(Tensor& out, const Tensor& x) {
  return unary_op_out(OpId::ConjPhysical, out, x);
}
Tensor Tensor::conj() const { return kiln::conj(*this); }
Tensor Tensor::conj_physical() const { return kiln::conj(*this); }
Tensor& Tensor::conj_physical_() {
  if (!is_complex()) return *this;
  return unary_op_(OpId::ConjPhysical, *this);
}
Tensor angle(const Tensor& x) { return unary_op(OpId::Angle, x); }
Tensor& angle_out(Tensor& out, const Tensor& x) { return unary_op_out(OpId::Angle, out, x); }
Tensor Tensor::angle() const { return kiln::angle(*this); }

// Composite (a kernel writing complex from real inputs needs a float -> complex dtype rule).
Tensor polar(const Tensor& abs, const Tensor& angle) {
  KILN_CHECK(abs.dtype() == angle.dtype(),
             "[polar] expected abs and angle to have the same dtype, got ", dtype_name(abs.dtype()),
             " and ", dtype_name(angle.dtype()));
  KILN_CHECK(abs.dtype() == DType::Float32 || abs.dtype() == DType::Float64,
             "[polar] only float32 and float64 inputs are supported, got ",
             dtype_name(abs.dtype()));
  Tensor re = mul(abs, cos(angle));
  Tensor im = mul(abs, sin(angle));
  Tensor out = empty(re.sizes(), TensorOptions(to_complex(abs.dtype())).device(re.device()));
  out.real().copy_(re);
  out.imag().copy_(im);
  return out;
}

}  // namespace kiln
