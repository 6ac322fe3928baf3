// Helpers that build an OpCall for an elementwise primitive and run it functionally, in place
// or into an out= tensor. Scalar arguments (alpha, bounds, eps, ...) go to attrs.s0 / s1.
#pragma once

#include <optional>

#include "ops/op.h"
#include "ops/run.h"

namespace kiln::detail {

// Scalar arguments of one call (both optional).
struct EwScalars {
  std::optional<Scalar> s0, s1;
};

inline void set_scalars(OpCall& c, const EwScalars& s) {
  if (s.s0) {
    c.attrs.s0 = *s.s0;
    c.attrs.has_s0 = true;
  }
  if (s.s1) {
    c.attrs.s1 = *s.s1;
    c.attrs.has_s1 = true;
  }
}

// Runs c functionally (allocating the output).
inline Tensor ew_run(OpCall& c) { return run1(c); }
// Runs c into `out` (out= semantics: an empty out is resized; its dtype may differ).
inline Tensor& ew_run_out(OpCall& c, Tensor& out) {
  c.out.clear();
  c.out.push_back(out);
  c.provided_out = true;
  run(c);
  return out;
}
// Runs c in place on `self` (self is also c.in[0] or another input).
inline Tensor& ew_run_inplace(OpCall& c, Tensor& self) {
  c.out.clear();
  c.out.push_back(self);
  c.provided_out = c.inplace = true;
  run(c);
  return self;
}

inline OpCall unary_call(OpId id, const Tensor& x, const EwScalars& s = {}) {
  OpCall c(id);
  c.in.push_back(x);
  set_scalars(c, s);
  return c;
}
inline OpCall binary_call(OpId id, const Tensor& a, const Tensor& b, const EwScalars& s = {}) {
  OpCall c(id);
  c.in.push_back(a);
  c.in.push_back(b);
  set_scalars(c, s);
  return c;
}
inline OpCall ternary_call(OpId id, const Tensor& a, const Tensor& b, const Tensor& t,
                           const EwScalars& s = {}) {
  OpCall c(id);
  c.in.push_back(a);
  c.in.push_back(b);
  c.in.push_back(t);
  set_scalars(c, s);
  return c;
}

// ---- the common shapes of call ----
inline Tensor unary_op(OpId id, const Tensor& x, const EwScalars& s = {}) {
  OpCall c = unary_call(id, x, s);
  return ew_run(c);
}
inline Tensor& unary_op_(OpId id, Tensor& self, const EwScalars& s = {}) {
  OpCall c = unary_call(id, self, s);
  return ew_run_inplace(c, self);
}
inline Tensor& unary_op_out(OpId id, Tensor& out, const Tensor& x, const EwScalars& s = {}) {
  OpCall c = unary_call(id, x, s);
  return ew_run_out(c, out);
}

inline Tensor binary_op(OpId id, const Tensor& a, const Tensor& b, const EwScalars& s = {}) {
  OpCall c = binary_call(id, a, b, s);
  return ew_run(c);
}
inline Tensor& binary_op_(OpId id, Tensor& self, const Tensor& b, const EwScalars& s = {}) {
  OpCall c = binary_call(id, self, b, s);
  return ew_run_inplace(c, self);
}
inline Tensor& binary_op_out(OpId id, Tensor& out, const Tensor& a, const Tensor& b,
                             const EwScalars& s = {}) {
  OpCall c = binary_call(id, a, b, s);
  return ew_run_out(c, out);
}

}  // namespace kiln::detail

// Defines, for a binary op without extra arguments, the free functions f(a, b), f(a, scalar),
// f_out(out, a, b) and the methods x.f(b), x.f(scalar), x.f_(b), x.f_(scalar).
#define KILN_EW_BINARY_OP(name, Id)                                                \
  Tensor name(const Tensor& a, const Tensor& b) {                                  \
    return ::kiln::detail::binary_op(OpId::Id, a, b);                              \
  }                                                                                \
  Tensor name(const Tensor& a, const Scalar& b) {                                  \
    return ::kiln::detail::binary_op(OpId::Id, a, ::kiln::detail::wrap_scalar(b)); \
  }                                                                                \
  Tensor& name##_out(Tensor& out, const Tensor& a, const Tensor& b) {              \
    return ::kiln::detail::binary_op_out(OpId::Id, out, a, b);                     \
  }                                                                                \
  KILN_EW_BINARY_METHODS(name, Id)

#define KILN_EW_BINARY_METHODS(name, Id)                                                \
  Tensor Tensor::name(const Tensor& o) const {                                          \
    return ::kiln::detail::binary_op(OpId::Id, *this, o);                               \
  }                                                                                     \
  Tensor Tensor::name(const Scalar& o) const {                                          \
    return ::kiln::detail::binary_op(OpId::Id, *this, ::kiln::detail::wrap_scalar(o));  \
  }                                                                                     \
  Tensor& Tensor::name##_(const Tensor& o) {                                            \
    return ::kiln::detail::binary_op_(OpId::Id, *this, o);                              \
  }                                                                                     \
  Tensor& Tensor::name##_(const Scalar& o) {                                            \
    return ::kiln::detail::binary_op_(OpId::Id, *this, ::kiln::detail::wrap_scalar(o)); \
  }
