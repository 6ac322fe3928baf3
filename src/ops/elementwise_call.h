// Helpers that build an OpCall for an elementwise primitive and run it (functional, in-place,
// out=).
#pragma once

#include "ops/op.h"
#include "ops/run.h"

namespace kiln::detail {

inline Tensor unary_op(OpId id, const Tensor& x) {
  OpCall c(id);
  c.in.push_back(x);
  return run1(c);
}

inline Tensor& unary_op_(OpId id, Tensor& self) {
  OpCall c(id);
  c.in.push_back(self);
  c.out.push_back(self);
  c.provided_out = c.inplace = true;
  run(c);
  return self;
}

inline Tensor binary_op(OpId id, const Tensor& a, const Tensor& b) {
  OpCall c(id);
  c.in.push_back(a);
  c.in.push_back(b);
  return run1(c);
}

// With a scalar parameter (alpha, ...).
inline Tensor binary_op(OpId id, const Tensor& a, const Tensor& b, const Scalar& p) {
  OpCall c(id);
  c.in.push_back(a);
  c.in.push_back(b);
  c.attrs.s0 = p;
  c.attrs.has_s0 = true;
  return run1(c);
}

inline Tensor& binary_op_(OpId id, Tensor& self, const Tensor& b,
                          std::optional<Scalar> p = std::nullopt) {
  OpCall c(id);
  c.in.push_back(self);
  c.in.push_back(b);
  if (p) {
    c.attrs.s0 = *p;
    c.attrs.has_s0 = true;
  }
  c.out.push_back(self);
  c.provided_out = c.inplace = true;
  run(c);
  return self;
}

inline Tensor& binary_op_out(OpId id, Tensor& out, const Tensor& a, const Tensor& b,
                             std::optional<Scalar> p = std::nullopt) {
  OpCall c(id);
  c.in.push_back(a);
  c.in.push_back(b);
  if (p) {
    c.attrs.s0 = *p;
    c.attrs.has_s0 = true;
  }
  c.out.push_back(out);
  c.provided_out = true;
  run(c);
  return out;
}

}  // namespace kiln::detail
