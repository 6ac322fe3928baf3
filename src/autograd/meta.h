// AutogradMeta: per-tensor autograd state (requires_grad, grad, grad_fn). Filled in by autograd.
#pragma once

#include "kiln/tensor.h"

namespace kiln {

struct AutogradMeta {
  bool requires_grad = false;
  Tensor grad;
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
}  // namespace detail

}  // namespace kiln
