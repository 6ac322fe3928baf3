// Helpers shared by the optimizer updates: the gradient after maximize and coupled weight decay,
// and zero-initialized state buffers.
#pragma once

#include "kiln/ops/factories.h"
#include "kiln/optim/optimizer.h"

namespace kiln::optim::impl {

// -grad when maximizing, plus weight_decay * p (coupled L2 decay) when weight_decay != 0. Never
// modifies p.grad().
inline Tensor effective_grad(const Tensor& p, bool maximize, double weight_decay) {
  Tensor g = p.grad();
  if (maximize) g = g.neg();
  if (weight_decay != 0) g = g.add(p, weight_decay);
  return g;
}

// The buffer `key` of st, created as zeros like p when absent.
inline Tensor& zeros_state(ParamState& st, const std::string& key, const Tensor& p) {
  auto it = st.buffers.find(key);
  if (it == st.buffers.end()) it = st.buffers.emplace(key, kiln::zeros_like(p)).first;
  return it->second;
}

}  // namespace kiln::optim::impl
