// SGD update: PyTorch's single-tensor algorithm, its fused multi-tensor form (fused=1) and
// float32 master weights (Note [Fused optimizer steps] in kiln/optim/optimizer.h).
#include "kiln/optim/sgd.h"

#include <map>

#include "optim/multi_tensor.h"
#include "optim/optim_util.h"

namespace kiln::optim {

namespace {

void fused_sgd_group(Optimizer& opt, ParamGroup& group, double inv_scale) {
  const auto& o = group.options;
  std::vector<Tensor> ps = impl::fused_params(group, "SGD");
  const double momentum = o.get("momentum");
  // One batch per (dtype, master weights): the kernels take one storage combination per call.
  std::map<std::pair<DType, bool>, detail::FusedSgdArgs> batches;
  for (const Tensor& p : ps) {
    ParamState& st = opt.state(p);
    const bool master = impl::uses_master(o, p);
    detail::FusedSgdArgs& b = batches[{p.dtype(), master}];
    const Tensor w = master ? impl::master_of(st, p) : p;
    b.params.push_back(p);
    b.grads.push_back(p.grad());
    if (master) b.masters.push_back(w);
    if (momentum != 0) {
      const bool first = !st.has("momentum_buffer");
      if (first) st["momentum_buffer"] = kiln::zeros_like(w);
      b.momentum_buffers.push_back(st["momentum_buffer"]);
      b.first.push_back(first ? 1 : 0);
    }
  }
  for (auto& [key, b] : batches) {
    b.lr = o.lr();
    b.momentum = momentum;
    b.dampening = o.get("dampening");
    b.weight_decay = o.get("weight_decay");
    b.nesterov = o.get("nesterov") != 0;
    b.maximize = o.get("maximize") != 0;
    b.inv_grad_scale = inv_scale;
    detail::foreach_fused_sgd(b);
  }
}

}  // namespace

SGD::SGD(std::vector<ParamGroup> groups, SGDOptions defaults)
    : Optimizer(std::move(groups), std::move(defaults), "SGD") {
  for (auto& g : param_groups()) {
    const auto& o = g.options;
    KILN_CHECK(o.get("momentum") >= 0, "[SGD] invalid momentum value: ", o.get("momentum"));
    KILN_CHECK(o.get("weight_decay") >= 0,
               "[SGD] invalid weight_decay value: ", o.get("weight_decay"));
    KILN_CHECK(!o.get("nesterov") || (o.get("momentum") > 0 && o.get("dampening") == 0),
               "[SGD] Nesterov momentum requires a momentum and zero dampening");
  }
}

bool SGD::supports_grad_scale() const {
  for (auto& g : param_groups())
    if (g.options.get("fused") == 0) return false;
  return true;
}

void SGD::step_group(ParamGroup& group) {
  const auto& o = group.options;
  const double lr = o.lr(), momentum = o.get("momentum"), dampening = o.get("dampening");
  const double wd = o.get("weight_decay");
  const bool nesterov = o.get("nesterov") != 0, maximize = o.get("maximize") != 0;
  KILN_CHECK(!nesterov || (momentum > 0 && dampening == 0),
             "[SGD] Nesterov momentum requires a momentum and zero dampening");
  if (o.get("fused") != 0) return fused_sgd_group(*this, group, inv_grad_scale_);
  for (auto& p : group.params) {
    if (!p.grad().defined()) continue;
    const bool master = impl::uses_master(o, p);
    ParamState* st = master || momentum != 0 ? &state(p) : nullptr;
    Tensor w = master ? impl::master_of(*st, p) : p;
    Tensor g = impl::effective_grad(w, p.grad(), maximize, wd);
    if (momentum != 0) {
      if (!st->has("momentum_buffer")) {
        (*st)["momentum_buffer"] = g.clone();
      } else {
        (*st)["momentum_buffer"].mul_(momentum).add_(g, 1 - dampening);
      }
      const Tensor& buf = (*st)["momentum_buffer"];
      g = nesterov ? g.add(buf, momentum) : buf;
    }
    w.add_(g, -lr);
    if (master) p.copy_(w);
  }
}

}  // namespace kiln::optim
