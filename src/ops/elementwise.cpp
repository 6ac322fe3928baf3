// Front ends of the elementwise ops: free functions, Tensor methods and C++ operators.
#include "kiln/ops/elementwise.h"

#include "ops/elementwise_call.h"

namespace kiln {

using detail::binary_op;
using detail::binary_op_;
using detail::unary_op;
using detail::unary_op_;
using detail::wrap_scalar;

Tensor abs(const Tensor& x) { return unary_op(OpId::Abs, x); }
Tensor neg(const Tensor& x) { return unary_op(OpId::Neg, x); }
Tensor exp(const Tensor& x) { return unary_op(OpId::Exp, x); }

Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return binary_op(OpId::Add, a, b, alpha);
}
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  return binary_op(OpId::Add, a, wrap_scalar(b), alpha);
}
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return binary_op(OpId::Sub, a, b, alpha);
}
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  return binary_op(OpId::Sub, a, wrap_scalar(b), alpha);
}
Tensor mul(const Tensor& a, const Tensor& b) { return binary_op(OpId::Mul, a, b); }
Tensor mul(const Tensor& a, const Scalar& b) { return binary_op(OpId::Mul, a, wrap_scalar(b)); }
Tensor div(const Tensor& a, const Tensor& b) { return binary_op(OpId::Div, a, b); }
Tensor div(const Tensor& a, const Scalar& b) { return binary_op(OpId::Div, a, wrap_scalar(b)); }

Tensor& add_out(Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return detail::binary_op_out(OpId::Add, out, a, b, alpha);
}
Tensor& mul_out(Tensor& out, const Tensor& a, const Tensor& b) {
  return detail::binary_op_out(OpId::Mul, out, a, b);
}

// ---- methods ----
Tensor Tensor::add(const Tensor& o, const Scalar& alpha) const {
  return kiln::add(*this, o, alpha);
}
Tensor Tensor::add(const Scalar& o, const Scalar& alpha) const {
  return kiln::add(*this, o, alpha);
}
Tensor& Tensor::add_(const Tensor& o, const Scalar& alpha) {
  return binary_op_(OpId::Add, *this, o, alpha);
}
Tensor& Tensor::add_(const Scalar& o, const Scalar& alpha) {
  return binary_op_(OpId::Add, *this, wrap_scalar(o), alpha);
}
Tensor Tensor::sub(const Tensor& o, const Scalar& alpha) const {
  return kiln::sub(*this, o, alpha);
}
Tensor Tensor::sub(const Scalar& o, const Scalar& alpha) const {
  return kiln::sub(*this, o, alpha);
}
Tensor& Tensor::sub_(const Tensor& o, const Scalar& alpha) {
  return binary_op_(OpId::Sub, *this, o, alpha);
}
Tensor& Tensor::sub_(const Scalar& o, const Scalar& alpha) {
  return binary_op_(OpId::Sub, *this, wrap_scalar(o), alpha);
}
Tensor Tensor::mul(const Tensor& o) const { return kiln::mul(*this, o); }
Tensor Tensor::mul(const Scalar& o) const { return kiln::mul(*this, o); }
Tensor& Tensor::mul_(const Tensor& o) { return binary_op_(OpId::Mul, *this, o); }
Tensor& Tensor::mul_(const Scalar& o) { return binary_op_(OpId::Mul, *this, wrap_scalar(o)); }
Tensor Tensor::div(const Tensor& o) const { return kiln::div(*this, o); }
Tensor Tensor::div(const Scalar& o) const { return kiln::div(*this, o); }
Tensor& Tensor::div_(const Tensor& o) { return binary_op_(OpId::Div, *this, o); }
Tensor& Tensor::div_(const Scalar& o) { return binary_op_(OpId::Div, *this, wrap_scalar(o)); }
Tensor Tensor::exp() const { return kiln::exp(*this); }
Tensor& Tensor::exp_() { return unary_op_(OpId::Exp, *this); }
Tensor Tensor::neg() const { return kiln::neg(*this); }
Tensor& Tensor::neg_() { return unary_op_(OpId::Neg, *this); }

Tensor& Tensor::operator+=(const Tensor& o) { return add_(o); }
Tensor& Tensor::operator+=(const Scalar& o) { return add_(o); }
Tensor& Tensor::operator-=(const Tensor& o) { return sub_(o); }
Tensor& Tensor::operator-=(const Scalar& o) { return sub_(o); }
Tensor& Tensor::operator*=(const Tensor& o) { return mul_(o); }
Tensor& Tensor::operator*=(const Scalar& o) { return mul_(o); }
Tensor& Tensor::operator/=(const Tensor& o) { return div_(o); }
Tensor& Tensor::operator/=(const Scalar& o) { return div_(o); }

// ---- operators ----
Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator+(const Tensor& a, const Scalar& b) { return add(a, b); }
Tensor operator+(const Scalar& a, const Tensor& b) { return add(b, a); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator-(const Tensor& a, const Scalar& b) { return sub(a, b); }
Tensor operator-(const Scalar& a, const Tensor& b) { return sub(wrap_scalar(a), b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator*(const Tensor& a, const Scalar& b) { return mul(a, b); }
Tensor operator*(const Scalar& a, const Tensor& b) { return mul(b, a); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator/(const Tensor& a, const Scalar& b) { return div(a, b); }
Tensor operator/(const Scalar& a, const Tensor& b) { return div(wrap_scalar(a), b); }
Tensor operator-(const Tensor& a) { return neg(a); }

}  // namespace kiln
