// SGD update (PyTorch's single-tensor algorithm).
#include "kiln/optim/sgd.h"

#include "optim/optim_util.h"

namespace kiln::optim {

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

void SGD::step_group(ParamGroup& group) {
  const auto& o = group.options;
  const double lr = o.lr(), momentum = o.get("momentum"), dampening = o.get("dampening");
  const double wd = o.get("weight_decay");
  const bool nesterov = o.get("nesterov") != 0, maximize = o.get("maximize") != 0;
  KILN_CHECK(!nesterov || (momentum > 0 && dampening == 0),
             "[SGD] Nesterov momentum requires a momentum and zero dampening");
  for (auto& p : group.params) {
    if (!p.grad().defined()) continue;
    Tensor g = impl::effective_grad(p, maximize, wd);
    if (momentum != 0) {
      ParamState& st = state(p);
      if (!st.has("momentum_buffer")) {
        st["momentum_buffer"] = g.clone();
      } else {
        st["momentum_buffer"].mul_(momentum).add_(g, 1 - dampening);
      }
      const Tensor& buf = st["momentum_buffer"];
      g = nesterov ? g.add(buf, momentum) : buf;
    }
    p.add_(g, -lr);
  }
}

}  // namespace kiln::optim
