// C++ operators on Tensors: arithmetic, comparison and bitwise binary operators (scalar on
// either side), unary - and ~, and the compound assignment forms.
#include "kiln/ops/elementwise.h"
#include "ops/elementwise_call.h"

namespace kiln {

using detail::binary_op;
using detail::binary_op_;
using detail::wrap_scalar;

// a op b for Tensor/Scalar operands; the Scalar side becomes a wrapped number.
#define KILN_BINARY_OPERATOR(op, Id)                                                         \
  Tensor operator op(const Tensor& a, const Tensor& b) { return binary_op(OpId::Id, a, b); } \
  Tensor operator op(const Tensor& a, const Scalar& b) {                                     \
    return binary_op(OpId::Id, a, wrap_scalar(b));                                           \
  }                                                                                          \
  Tensor operator op(const Scalar& a, const Tensor& b) {                                     \
    return binary_op(OpId::Id, wrap_scalar(a), b);                                           \
  }
KILN_BINARY_OPERATOR(*, Mul)
KILN_BINARY_OPERATOR(/, Div)
KILN_BINARY_OPERATOR(%, Remainder)
KILN_BINARY_OPERATOR(==, Eq)
KILN_BINARY_OPERATOR(!=, Ne)
KILN_BINARY_OPERATOR(<, Lt)
KILN_BINARY_OPERATOR(<=, Le)
KILN_BINARY_OPERATOR(>, Gt)
KILN_BINARY_OPERATOR(>=, Ge)
KILN_BINARY_OPERATOR(&, BitwiseAnd)
KILN_BINARY_OPERATOR(|, BitwiseOr)
KILN_BINARY_OPERATOR(^, BitwiseXor)
KILN_BINARY_OPERATOR(<<, BitwiseLeftShift)
KILN_BINARY_OPERATOR(>>, BitwiseRightShift)
#undef KILN_BINARY_OPERATOR

// + and - go through add/sub for their alpha-free checks.
Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator+(const Tensor& a, const Scalar& b) { return add(a, b); }
Tensor operator+(const Scalar& a, const Tensor& b) { return add(wrap_scalar(a), b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator-(const Tensor& a, const Scalar& b) { return sub(a, b); }
Tensor operator-(const Scalar& a, const Tensor& b) { return sub(wrap_scalar(a), b); }
Tensor operator-(const Tensor& a) { return neg(a); }
Tensor operator~(const Tensor& a) { return bitwise_not(a); }

// ---- compound assignment ----
Tensor& Tensor::operator+=(const Tensor& o) { return add_(o); }
Tensor& Tensor::operator+=(const Scalar& o) { return add_(o); }
Tensor& Tensor::operator-=(const Tensor& o) { return sub_(o); }
Tensor& Tensor::operator-=(const Scalar& o) { return sub_(o); }
Tensor& Tensor::operator*=(const Tensor& o) { return mul_(o); }
Tensor& Tensor::operator*=(const Scalar& o) { return mul_(o); }
Tensor& Tensor::operator/=(const Tensor& o) { return div_(o); }
Tensor& Tensor::operator/=(const Scalar& o) { return div_(o); }
#define KILN_COMPOUND_OPERATOR(op, Id)                                                    \
  Tensor& Tensor::operator op(const Tensor& o) { return binary_op_(OpId::Id, *this, o); } \
  Tensor& Tensor::operator op(const Scalar& o) {                                          \
    return binary_op_(OpId::Id, *this, wrap_scalar(o));                                   \
  }
KILN_COMPOUND_OPERATOR(%=, Remainder)
KILN_COMPOUND_OPERATOR(&=, BitwiseAnd)
KILN_COMPOUND_OPERATOR(|=, BitwiseOr)
KILN_COMPOUND_OPERATOR(^=, BitwiseXor)
KILN_COMPOUND_OPERATOR(<<=, BitwiseLeftShift)
KILN_COMPOUND_OPERATOR(>>=, BitwiseRightShift)
#undef KILN_COMPOUND_OPERATOR

}  // namespace kiln
