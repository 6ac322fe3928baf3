// Per-element math of the fused optimizer steps, written once for the CPU loops
// (kernels/cpu/foreach_kernels.cpp) and the GPU kernels (kernels/gpu/foreach_kernels.cu).
// Each formula follows the single-tensor step op by op (src/optim/sgd.cpp, adam.cpp).
#pragma once

#include <cmath>

#include "kiln/macros.h"

namespace kiln::detail::foreach_math {

template <class A>
KILN_HD inline A sqrt_of(A x) {
  if constexpr (sizeof(A) == sizeof(float))
    return ::sqrtf(x);
  else
    return ::sqrt(x);
}

template <class A>
KILN_HD inline bool finite(A x) {
  return x - x == A(0);  // false for inf (inf - inf = NaN) and NaN
}

// Scalars of one Adam step in the compute type A (cast from the host's doubles).
template <class A>
struct AdamConsts {
  A beta1, one_minus_beta1, beta2, one_minus_beta2, eps, weight_decay, decay;  // decay = 1 - lr*wd
  bool decoupled, amsgrad, maximize;
};

// One element of Adam/AdamW: p, m, v (and vmax with amsgrad) are updated in place; g is the
// gradient (already unscaled). neg_step = -lr / (1 - beta1^t), bc2_sqrt = sqrt(1 - beta2^t).
template <class A>
KILN_HD inline void adam_element(A& p, A g, A& m, A& v, A* vmax, const AdamConsts<A>& c, A neg_step,
                                 A bc2_sqrt) {
  if (c.maximize) g = -g;
  if (c.decoupled)
    p = p * c.decay;
  else if (c.weight_decay != A(0))
    g = g + c.weight_decay * p;
  // m = lerp(m, g, 1 - beta1), with the lerp functor's two-sided formula.
  const A diff = g - m;
  m = c.one_minus_beta1 < A(0.5) ? m + c.one_minus_beta1 * diff
                                 : g - diff * (A(1) - c.one_minus_beta1);
  v = v * c.beta2 + c.one_minus_beta2 * g * g;
  A vv = v;
  if (c.amsgrad) {
    const A cur = *vmax;
    *vmax = cur < v || v != v ? v : cur;
    vv = *vmax;
  }
  const A denom = sqrt_of(vv) / bc2_sqrt + c.eps;
  p = p + neg_step * m / denom;
}

template <class A>
struct SgdConsts {
  A neg_lr, momentum, one_minus_dampening, weight_decay;
  bool nesterov, maximize, has_momentum;
};

// One element of SGD; buf is the momentum buffer (has_momentum), first: it is new (buf = g).
template <class A>
KILN_HD inline void sgd_element(A& p, A g, A* buf, bool first, const SgdConsts<A>& c) {
  if (c.maximize) g = -g;
  if (c.weight_decay != A(0)) g = g + c.weight_decay * p;
  if (c.has_momentum) {
    const A b = first ? g : *buf * c.momentum + c.one_minus_dampening * g;
    *buf = b;
    g = c.nesterov ? g + c.momentum * b : b;
  }
  p = p + c.neg_lr * g;
}

}  // namespace kiln::detail::foreach_math
