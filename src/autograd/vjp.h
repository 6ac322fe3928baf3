// VjpContext: what an op's vjp sees (saved inputs/outputs, attrs, output gradients) and where it
// writes the input gradients; helpers shared by the vjp_<family>.cpp files.
#pragma once

#include "autograd/node_state.h"
#include "kiln/ops.h"
#include "ops/op.h"
#include "ops/run.h"

namespace kiln {

struct VjpContext {
  VjpContext(detail::OpNode& node, std::vector<Tensor>& grads)
      : node_(node), grads_(grads), result(node.state().next.size()) {}

  OpId op() const { return node_.op_; }
  const OpAttrs& attrs() const { return node_.attrs_; }
  DType compute() const { return node_.compute_; }
  int n_in() const { return static_cast<int>(node_.state().next.size()); }
  int n_out() const { return static_cast<int>(grads_.size()); }
  // Whether input i needs a gradient.
  bool needs(int i) const { return node_.state().next[i].fn != nullptr; }
  // Saved input i / output j (the vjp must have declared it in its saves mask).
  Tensor in(int i) const {
    return node_.saved_in_[i].unpack(node_.shared_from_this(), 0, op_name(node_.op_));
  }
  Tensor out(int j) const {
    return node_.saved_out_[j].unpack(node_.shared_from_this(), static_cast<uint32_t>(j),
                                      op_name(node_.op_));
  }
  // Metadata of input i / output j (always available).
  const detail::TensorMeta& in_meta(int i) const { return node_.state().in_meta[i]; }
  const detail::TensorMeta& out_meta(int j) const { return node_.state().out_meta[j]; }
  bool has_grad(int j) const { return grads_[j].defined(); }
  // Gradient w.r.t. output j; zeros when the output got none.
  Tensor grad(int j = 0) const {
    if (!grads_[j].defined()) grads_[j] = node_.state().out_meta[j].zeros();
    return grads_[j];
  }
  // Sets the gradient of input i (the engine sums it down to the input's shape and casts it to
  // the input's dtype; complex -> real inputs take the real part).
  void set(int i, Tensor g) {
    if (needs(i)) result[i] = std::move(g);
  }

  detail::OpNode& node_;
  std::vector<Tensor>& grads_;
  std::vector<Tensor> result;
};

namespace detail {

// Saves mask bits: input i -> 1 << i; output j -> 1 << (16 + j).
constexpr uint32_t kIn0 = 1u, kIn1 = 2u, kIn2 = 4u, kOut0 = 1u << 16, kOut1 = 1u << 17;

// Installs fn as the vjp of id (src/autograd/vjp_registry.cpp).
void set_vjp(OpId id, VjpFn fn, uint32_t saves);

// Scalar helpers used by vjps.
inline Tensor scalar_like(const Scalar& s) { return wrap_scalar(s); }
// conj() for complex tensors, identity otherwise (Wirtinger: grad_in = grad * conj(df/dz)).
inline Tensor conj_if(const Tensor& t) { return t.is_complex() ? kiln::conj_physical(t) : t; }

inline Scalar conj_scalar(const Scalar& s) {
  if (!s.is_complex()) return s;
  auto z = s.to<complex<double>>();
  return Scalar(complex<double>(z.real(), -z.imag()));
}

// True when multiplying by s changes nothing (a real 1: the alpha/beta that a + b, linear and
// matmul pass); vjps skip that multiply, a kernel launch over the whole gradient.
inline bool is_one(const Scalar& s) { return !s.is_complex() && s.to<double>() == 1.0; }
inline Tensor times(const Tensor& g, const Scalar& s) { return is_one(s) ? g : g * s; }
// Re-inserts reduced dims (attrs.ints, keepdim=false) so g broadcasts against the input.
Tensor unsqueeze_reduced(const Tensor& g, IntArrayRef dims, int64_t in_dim, bool keepdim);

void register_unary_vjps();
void register_binary_vjps();
void register_reduce_vjps();
void register_core_vjps();
void register_linalg_vjps();
void register_ternary_vjps();

}  // namespace detail
}  // namespace kiln
