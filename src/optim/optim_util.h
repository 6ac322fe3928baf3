// Helpers shared by the optimizer updates: the gradient after maximize and coupled weight decay,
// zero-initialized state buffers, master weights and the checks of the fused steps.
#pragma once

#include <vector>

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

// effective_grad for an update of w (p itself or its float32 master copy) with gradient g.
inline Tensor effective_grad(const Tensor& w, Tensor g, bool maximize, double weight_decay) {
  if (g.dtype() != w.dtype()) g = g.to(w.dtype());
  if (maximize) g = g.neg();
  if (weight_decay != 0) g = g.add(w, weight_decay);
  return g;
}

// True when the group keeps a float32 master copy of p (Note [Fused optimizer steps]).
inline bool uses_master(const OptimizerOptions& o, const Tensor& p) {
  return o.has("master_weights") && o.get("master_weights") != 0 &&
         (p.dtype() == DType::Float16 || p.dtype() == DType::BFloat16);
}

// The float32 master copy of p in st ("master_param"), made from p on first use.
inline Tensor& master_of(ParamState& st, const Tensor& p) {
  auto it = st.buffers.find("master_param");
  if (it == st.buffers.end())
    it = st.buffers.emplace("master_param", p.detach().to(DType::Float32).contiguous()).first;
  return it->second;
}

// The parameters of a group that have a gradient, checked for a fused step: one device with
// multi-tensor kernels, float16/bfloat16/float32/float64, gradients of the same dtype, device
// and shape. Throws before anything changes.
std::vector<Tensor> fused_params(const ParamGroup& group, const char* name);

// The buffer `key` of st, created as zeros like p when absent.
inline Tensor& zeros_state(ParamState& st, const std::string& key, const Tensor& p) {
  auto it = st.buffers.find(key);
  if (it == st.buffers.end()) it = st.buffers.emplace(key, kiln::zeros_like(p)).first;
  return it->second;
}

}  // namespace kiln::optim::impl
