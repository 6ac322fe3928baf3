// Adam, AdamW, Adamax, NAdam, RAdam updates (PyTorch's single-tensor algorithms); Adam/AdamW also
// fused (multi-tensor kernels) and with float32 master weights (Note [Fused optimizer steps]).
#include "kiln/optim/adam.h"

#include <cmath>
#include <map>

#include "optim/multi_tensor.h"
#include "optim/optim_util.h"

namespace kiln::optim {

namespace {

void check_adam_like(const OptimizerOptions& o, const char* name) {
  KILN_CHECK(o.get("eps") >= 0, "[", name, "] invalid epsilon value: ", o.get("eps"));
  KILN_CHECK(o.get("beta1") >= 0 && o.get("beta1") < 1, "[", name,
             "] invalid beta parameter at index 0: ", o.get("beta1"));
  KILN_CHECK(o.get("beta2") >= 0 && o.get("beta2") < 1, "[", name,
             "] invalid beta parameter at index 1: ", o.get("beta2"));
  KILN_CHECK(o.get("weight_decay") >= 0, "[", name,
             "] invalid weight_decay value: ", o.get("weight_decay"));
}

void fused_adam_group(Optimizer& opt, ParamGroup& group, bool decoupled, double inv_scale) {
  const auto& o = group.options;
  const char* name = opt.name().c_str();
  std::vector<Tensor> ps = impl::fused_params(group, name);
  const double lr = o.lr(), b1 = o.get("beta1"), b2 = o.get("beta2");
  const bool amsgrad = o.get("amsgrad") != 0;
  std::map<std::pair<DType, bool>, detail::FusedAdamArgs> batches;
  for (const Tensor& p : ps) {
    ParamState& st = opt.state(p);
    const bool master = impl::uses_master(o, p);
    detail::FusedAdamArgs& b = batches[{p.dtype(), master}];
    const Tensor w = master ? impl::master_of(st, p) : p;
    st.step += 1;
    // Bias corrections of this parameter's own step count, in double on the host.
    const double t = static_cast<double>(st.step);
    b.neg_step.push_back(-lr / (1 - std::pow(b1, t)));
    b.bc2_sqrt.push_back(std::sqrt(1 - std::pow(b2, t)));
    b.params.push_back(p);
    b.grads.push_back(p.grad());
    if (master) b.masters.push_back(w);
    b.exp_avgs.push_back(impl::zeros_state(st, "exp_avg", w));
    b.exp_avg_sqs.push_back(impl::zeros_state(st, "exp_avg_sq", w));
    if (amsgrad) b.max_exp_avg_sqs.push_back(impl::zeros_state(st, "max_exp_avg_sq", w));
  }
  for (auto& [key, b] : batches) {
    b.lr = lr;
    b.beta1 = b1;
    b.beta2 = b2;
    b.eps = o.get("eps");
    b.weight_decay = o.get("weight_decay");
    b.decoupled = decoupled;
    b.amsgrad = amsgrad;
    b.maximize = o.get("maximize") != 0;
    b.inv_grad_scale = inv_scale;
    detail::foreach_fused_adam(b);
  }
}

// m = lerp(m, g, 1 - b1); v = b2 v + (1 - b2) g^2.
void update_moments(ParamState& st, const Tensor& p, const Tensor& g, double b1, double b2) {
  Tensor& m = impl::zeros_state(st, "exp_avg", p);
  Tensor& v = impl::zeros_state(st, "exp_avg_sq", p);
  m.lerp_(g, 1 - b1);
  v.mul_(b2).addcmul_(g, g.is_complex() ? g.conj() : g, 1 - b2);
}

}  // namespace

Adam::Adam(std::vector<ParamGroup> groups, OptimizerOptions defaults, std::string name,
           bool decoupled)
    : Optimizer(std::move(groups), std::move(defaults), std::move(name)), decoupled_(decoupled) {
  for (auto& g : param_groups()) check_adam_like(g.options, this->name().c_str());
}

Adam::Adam(std::vector<ParamGroup> groups, AdamOptions defaults)
    : Adam(std::move(groups), std::move(defaults), "Adam", false) {}

AdamW::AdamW(std::vector<ParamGroup> groups, AdamWOptions defaults)
    : Adam(std::move(groups), std::move(defaults), "AdamW", true) {}

bool Adam::supports_grad_scale() const {
  for (auto& g : param_groups())
    if (g.options.get("fused") == 0) return false;
  return true;
}

void Adam::step_group(ParamGroup& group) {
  const auto& o = group.options;
  const double lr = o.lr(), b1 = o.get("beta1"), b2 = o.get("beta2"), eps = o.get("eps");
  const double wd = o.get("weight_decay");
  const bool amsgrad = o.get("amsgrad") != 0, maximize = o.get("maximize") != 0;
  if (o.get("fused") != 0) return fused_adam_group(*this, group, decoupled_, inv_grad_scale_);
  for (auto& p : group.params) {
    if (!p.grad().defined()) continue;
    ParamState& st = state(p);
    const bool master = impl::uses_master(o, p);
    Tensor w = master ? impl::master_of(st, p) : p;
    Tensor g = impl::effective_grad(w, p.grad(), maximize, decoupled_ ? 0.0 : wd);
    if (decoupled_ && wd != 0) w.mul_(1 - lr * wd);
    st.step += 1;
    update_moments(st, w, g, b1, b2);
    const double t = static_cast<double>(st.step);
    const double bc1 = 1 - std::pow(b1, t), bc2_sqrt = std::sqrt(1 - std::pow(b2, t));
    Tensor v = st["exp_avg_sq"];
    if (amsgrad) {
      Tensor& vmax = impl::zeros_state(st, "max_exp_avg_sq", w);
      vmax.copy_(vmax.maximum(v));
      v = vmax;
    }
    Tensor denom = v.sqrt().div_(bc2_sqrt).add_(eps);
    w.addcdiv_(st["exp_avg"], denom, -lr / bc1);
    if (master) p.copy_(w);
  }
}

Adamax::Adamax(std::vector<ParamGroup> groups, AdamaxOptions defaults)
    : Optimizer(std::move(groups), std::move(defaults), "Adamax") {
  for (auto& g : param_groups()) check_adam_like(g.options, "Adamax");
}

void Adamax::step_group(ParamGroup& group) {
  const auto& o = group.options;
  const double lr = o.lr(), b1 = o.get("beta1"), b2 = o.get("beta2"), eps = o.get("eps");
  const double wd = o.get("weight_decay");
  const bool maximize = o.get("maximize") != 0;
  for (auto& p : group.params) {
    if (!p.grad().defined()) continue;
    ParamState& st = state(p);
    Tensor g = impl::effective_grad(p, maximize, wd);
    st.step += 1;
    Tensor& m = impl::zeros_state(st, "exp_avg", p);
    Tensor& u = impl::zeros_state(st, "exp_inf", p);
    m.lerp_(g, 1 - b1);
    u.mul_(b2);
    u.copy_(u.maximum(g.abs().add_(eps)));
    const double clr = lr / (1 - std::pow(b1, static_cast<double>(st.step)));
    p.addcdiv_(m, u, -clr);
  }
}

NAdam::NAdam(std::vector<ParamGroup> groups, NAdamOptions defaults)
    : Optimizer(std::move(groups), std::move(defaults), "NAdam") {
  for (auto& g : param_groups()) {
    check_adam_like(g.options, "NAdam");
    KILN_CHECK(g.options.get("momentum_decay") >= 0,
               "[NAdam] invalid momentum_decay value: ", g.options.get("momentum_decay"));
  }
}

void NAdam::step_group(ParamGroup& group) {
  const auto& o = group.options;
  const double lr = o.lr(), b1 = o.get("beta1"), b2 = o.get("beta2"), eps = o.get("eps");
  const double wd = o.get("weight_decay"), psi = o.get("momentum_decay");
  const bool decoupled = o.get("decoupled_weight_decay") != 0;
  const bool maximize = o.get("maximize") != 0;
  for (auto& p : group.params) {
    if (!p.grad().defined()) continue;
    ParamState& st = state(p);
    if (!st.has("mu_product")) st["mu_product"] = kiln::ones({}, TensorOptions(kFloat32));
    Tensor g = impl::effective_grad(p, maximize, decoupled ? 0.0 : wd);
    if (decoupled && wd != 0) p.mul_(1 - lr * wd);
    st.step += 1;
    const double t = static_cast<double>(st.step);
    const double bc2 = 1 - std::pow(b2, t);
    const double mu = b1 * (1 - 0.5 * std::pow(0.96, t * psi));
    const double mu_next = b1 * (1 - 0.5 * std::pow(0.96, (t + 1) * psi));
    // PyTorch keeps mu_product as a float32 scalar tensor; so do we (same rounding).
    st["mu_product"].mul_(mu);
    const double mu_product = st["mu_product"].item<double>();
    update_moments(st, p, g, b1, b2);
    Tensor denom = st["exp_avg_sq"].div(bc2).sqrt_().add_(eps);
    p.addcdiv_(g, denom, -lr * (1 - mu) / (1 - mu_product));
    p.addcdiv_(st["exp_avg"], denom, -lr * mu_next / (1 - mu_product * mu_next));
  }
}

RAdam::RAdam(std::vector<ParamGroup> groups, RAdamOptions defaults)
    : Optimizer(std::move(groups), std::move(defaults), "RAdam") {
  for (auto& g : param_groups()) check_adam_like(g.options, "RAdam");
}

void RAdam::step_group(ParamGroup& group) {
  const auto& o = group.options;
  const double lr = o.lr(), b1 = o.get("beta1"), b2 = o.get("beta2"), eps = o.get("eps");
  const double wd = o.get("weight_decay");
  const bool decoupled = o.get("decoupled_weight_decay") != 0;
  const bool maximize = o.get("maximize") != 0;
  for (auto& p : group.params) {
    if (!p.grad().defined()) continue;
    ParamState& st = state(p);
    Tensor g = impl::effective_grad(p, maximize, decoupled ? 0.0 : wd);
    if (decoupled && wd != 0) p.mul_(1 - lr * wd);
    st.step += 1;
    update_moments(st, p, g, b1, b2);
    const double t = static_cast<double>(st.step);
    const double bc1 = 1 - std::pow(b1, t), bc2 = 1 - std::pow(b2, t);
    Tensor mhat = st["exp_avg"].div(bc1);
    const double rho_inf = 2 / (1 - b2) - 1;
    const double rho_t = rho_inf - 2 * t * std::pow(b2, t) / bc2;
    if (rho_t > 5) {
      const double rect =
          std::sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t));
      Tensor adaptive = st["exp_avg_sq"].sqrt().add_(eps).reciprocal_().mul_(std::sqrt(bc2));
      p.add_(mhat.mul_(adaptive).mul_(lr * rect), -1.0);
    } else {
      p.add_(mhat.mul_(lr), -1.0);
    }
  }
}

}  // namespace kiln::optim
