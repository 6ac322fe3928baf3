// AutogradMeta: per-tensor autograd state (requires_grad, grad, grad_fn, hooks, view base).
// A TensorImpl holds one only when autograd needs it (null otherwise: the fast path).
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "kiln/autograd.h"
#include "kiln/tensor.h"

namespace kiln {

struct AutogradMeta {
  // True for leaves marked by the user and for outputs of recorded ops (print shows it).
  bool requires_grad = false;
  Tensor grad;  // leaves (and retained non-leaves: see retained)
  std::shared_ptr<AutogradNode> grad_fn;
  uint32_t output_nr = 0;
  // Leaves: the AccumulateGrad node (weak, as PyTorch: the graph owns it).
  std::weak_ptr<AutogradNode> grad_accumulator;
  // retain_grad(): the non-leaf's gradient cell, shared with the hook on grad_fn.
  std::shared_ptr<Tensor> retained;
  // Tensor hooks (handle, hook); post-accumulate hooks for leaves.
  std::vector<std::pair<unsigned, std::shared_ptr<Tensor::GradHook>>> hooks;
  std::vector<std::pair<unsigned, std::shared_ptr<Tensor::GradHook>>> post_hooks;
  // Views: the base whose history an in-place op on this view rewrites (CopySlices), and the
  // storage version at which grad_fn was last computed (a different version regenerates it).
  bool is_view = false;
  Tensor base;
  uint32_t attr_version = 0;
  bool view_dtype_change = false;  // real/imag/view(dtype): no as_strided regeneration
  bool is_inference = false;
};

namespace detail {
// Marks a tensor as requiring grad (creating its AutogradMeta on first use).
inline void set_requires_grad(const Tensor& t, bool r) {
  if (!t.impl()->autograd_meta()) {
    if (!r) return;
    t.impl()->set_autograd_meta(new AutogradMeta());
  }
  t.impl()->autograd_meta()->requires_grad = r;
}
inline AutogradMeta* meta_of(const Tensor& t) {
  return t.defined() ? t.impl()->autograd_meta() : nullptr;
}
inline AutogradMeta& ensure_meta(const Tensor& t) {
  if (!t.impl()->autograd_meta()) t.impl()->set_autograd_meta(new AutogradMeta());
  return *t.impl()->autograd_meta();
}
// Fast test used by the op path.
inline bool requires_grad_fast(const Tensor& t) {
  const AutogradMeta* m = meta_of(t);
  return m != nullptr && m->requires_grad;
}
}  // namespace detail

}  // namespace kiln
