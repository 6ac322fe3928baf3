// Adagrad and RMSprop updates (PyTorch's single-tensor algorithms).
#include "kiln/optim/adagrad.h"

#include "kiln/ops/factories.h"
#include "optim/optim_util.h"

namespace kiln::optim {

Adagrad::Adagrad(std::vector<ParamGroup> groups, AdagradOptions defaults)
    : Optimizer(std::move(groups), std::move(defaults), "Adagrad") {
  for (auto& g : param_groups()) {
    const auto& o = g.options;
    KILN_CHECK(o.get("lr_decay") >= 0, "[Adagrad] invalid lr_decay value: ", o.get("lr_decay"));
    KILN_CHECK(o.get("weight_decay") >= 0,
               "[Adagrad] invalid weight_decay value: ", o.get("weight_decay"));
    KILN_CHECK(
        o.get("initial_accumulator_value") >= 0,
        "[Adagrad] invalid initial_accumulator_value value: ", o.get("initial_accumulator_value"));
    KILN_CHECK(o.get("eps") >= 0, "[Adagrad] invalid epsilon value: ", o.get("eps"));
  }
}

void Adagrad::step_group(ParamGroup& group) {
  const auto& o = group.options;
  const double lr = o.lr(), lr_decay = o.get("lr_decay"), wd = o.get("weight_decay");
  const double init = o.get("initial_accumulator_value"), eps = o.get("eps");
  const bool maximize = o.get("maximize") != 0;
  for (auto& p : group.params) {
    if (!p.grad().defined()) continue;
    ParamState& st = state(p);
    if (!st.has("sum")) st["sum"] = kiln::full_like(p, init);
    Tensor g = impl::effective_grad(p, maximize, wd);
    st.step += 1;
    const double clr = lr / (1 + static_cast<double>(st.step - 1) * lr_decay);
    Tensor& sum = st["sum"];
    sum.addcmul_(g, g, 1);
    Tensor denom = sum.sqrt().add_(eps);
    p.addcdiv_(g, denom, -clr);
  }
}

RMSprop::RMSprop(std::vector<ParamGroup> groups, RMSpropOptions defaults)
    : Optimizer(std::move(groups), std::move(defaults), "RMSprop") {
  for (auto& g : param_groups()) {
    const auto& o = g.options;
    KILN_CHECK(o.get("eps") >= 0, "[RMSprop] invalid epsilon value: ", o.get("eps"));
    KILN_CHECK(o.get("momentum") >= 0, "[RMSprop] invalid momentum value: ", o.get("momentum"));
    KILN_CHECK(o.get("weight_decay") >= 0,
               "[RMSprop] invalid weight_decay value: ", o.get("weight_decay"));
    KILN_CHECK(o.get("alpha") >= 0, "[RMSprop] invalid alpha value: ", o.get("alpha"));
  }
}

void RMSprop::step_group(ParamGroup& group) {
  const auto& o = group.options;
  const double lr = o.lr(), alpha = o.get("alpha"), eps = o.get("eps");
  const double wd = o.get("weight_decay"), momentum = o.get("momentum");
  const bool centered = o.get("centered") != 0, maximize = o.get("maximize") != 0;
  for (auto& p : group.params) {
    if (!p.grad().defined()) continue;
    ParamState& st = state(p);
    Tensor g = impl::effective_grad(p, maximize, wd);
    st.step += 1;
    Tensor& sq = impl::zeros_state(st, "square_avg", p);
    sq.mul_(alpha).addcmul_(g, g, 1 - alpha);
    Tensor avg;
    if (centered) {
      Tensor& ga = impl::zeros_state(st, "grad_avg", p);
      ga.lerp_(g, 1 - alpha);
      avg = sq.addcmul(ga, ga, -1).sqrt_();
    } else {
      avg = sq.sqrt();
    }
    avg.add_(eps);
    if (momentum > 0) {
      Tensor& buf = impl::zeros_state(st, "momentum_buffer", p);
      buf.mul_(momentum).addcdiv_(g, avg);
      p.add_(buf, -lr);
    } else {
      p.addcdiv_(g, avg, -lr);
    }
  }
}

}  // namespace kiln::optim
