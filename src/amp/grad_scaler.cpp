// kiln::amp::GradScaler: dynamic loss scaling (torch.amp.GradScaler) over any kiln optimizer.
#include <algorithm>
#include <cmath>

#include "kiln/amp.h"
#include "kiln/autograd.h"
#include "kiln/ops.h"
#include "kiln/optim/optimizer.h"
#include "optim/multi_tensor.h"

namespace kiln::amp {

GradScaler::GradScaler(double init_scale, double growth_factor, double backoff_factor,
                       int64_t growth_interval, bool enabled)
    : scale_(init_scale),
      growth_factor_(growth_factor),
      backoff_factor_(backoff_factor),
      growth_interval_(growth_interval),
      enabled_(enabled) {
  KILN_CHECK(growth_factor > 1.0, "[GradScaler] growth_factor should be > 1, got ", growth_factor);
  KILN_CHECK(backoff_factor < 1.0 && backoff_factor > 0, "[GradScaler] backoff_factor should be ",
             "in (0, 1), got ", backoff_factor);
  KILN_CHECK(growth_interval > 0, "[GradScaler] growth_interval should be > 0, got ",
             growth_interval);
  KILN_CHECK(init_scale > 0 && std::isfinite(init_scale),
             "[GradScaler] init_scale should be a positive finite number, got ", init_scale);
}

Tensor GradScaler::scale(const Tensor& outputs) {
  if (!enabled_) return outputs;
  KILN_CHECK(outputs.defined(), "[GradScaler.scale] got an undefined tensor");
  // The scale as a float32 0-dim tensor on the output's device, as PyTorch keeps it.
  Tensor s = full({}, scale_, TensorOptions(kFloat32).device(outputs.device()));
  return outputs * s.to(outputs.dtype());
}

std::vector<Tensor> GradScaler::scale(const std::vector<Tensor>& outputs) {
  std::vector<Tensor> r;
  r.reserve(outputs.size());
  for (const Tensor& o : outputs) r.push_back(scale(o));
  return r;
}

// Unscales every gradient in place (multiplying by the float32 reciprocal of the scale, as
// PyTorch's _amp_foreach_non_finite_check_and_unscale_) and reports whether one is inf/NaN; with
// unscale = false it only checks. The gradients of each device go through one multi-tensor
// kernel that also raises that device's flag; one host read per device at the end. Gradients the
// multi-tensor kernels do not take (float8, devices without them) use isfinite/any/mul.
bool GradScaler::found_inf_in(optim::Optimizer& optimizer, bool unscale) {
  NoGradGuard ng;
  const double inv = unscale ? static_cast<double>(static_cast<float>(1.0 / scale_)) : 1.0;
  std::vector<std::pair<Device, std::vector<Tensor>>> lists;  // multi-tensor, per device
  std::vector<Tensor> flags;                                  // one float32 [1] per device
  auto flag_of = [&](Device d) -> Tensor& {
    for (Tensor& f : flags)
      if (f.device() == d) return f;
    flags.push_back(zeros({1}, TensorOptions(kFloat32).device(d)));
    return flags.back();
  };
  for (auto& group : optimizer.param_groups())
    for (Tensor& p : group.params) {
      Tensor g = p.grad();
      if (!g.defined()) continue;
      KILN_CHECK(is_floating_point(g.dtype()), "[GradScaler.unscale_] gradient of dtype ",
                 dtype_name(g.dtype()), " is not floating point");
      if (detail::foreach_supported(g)) {
        auto it = std::find_if(lists.begin(), lists.end(),
                               [&](const auto& l) { return l.first == g.device(); });
        if (it == lists.end()) {
          lists.emplace_back(g.device(), std::vector<Tensor>{});
          it = lists.end() - 1;
        }
        it->second.push_back(g);
        continue;
      }
      Tensor& f = flag_of(g.device());
      f = f.maximum(g.isfinite().logical_not().any().to(kFloat32).reshape({1}));
      if (unscale) g.mul_(inv);
    }
  for (auto& [dev, list] : lists) detail::foreach_unscale_check(list, inv, flag_of(dev));
  bool found = false;
  for (const Tensor& f : flags) found |= f.item<float>() != 0.0f;
  return found;
}

void GradScaler::unscale_(optim::Optimizer& optimizer) {
  if (!enabled_) return;
  PerOptimizer& st = per_optimizer_[&optimizer];
  KILN_CHECK(st.stage != Stage::Unscaled,
             "[GradScaler.unscale_] unscale_() has already been called on this optimizer since "
             "the last update().");
  KILN_CHECK(st.stage != Stage::Stepped,
             "[GradScaler.unscale_] unscale_() is being called after step().");
  st.found_inf = found_inf_in(optimizer, /*unscale=*/true);
  st.stage = Stage::Unscaled;
}

bool GradScaler::step(optim::Optimizer& optimizer) {
  if (!enabled_) {
    optimizer.step();
    return true;
  }
  PerOptimizer& st = per_optimizer_[&optimizer];
  KILN_CHECK(st.stage != Stage::Stepped,
             "[GradScaler.step] step() has already been called since the last update().");
  if (st.stage == Stage::Ready && optimizer.supports_grad_scale()) {
    // A fused step unscales the gradients itself (PyTorch's grad_scale argument): only check.
    st.found_inf = found_inf_in(optimizer, /*unscale=*/false);
    st.stage = Stage::Stepped;
    if (st.found_inf) return false;
    optimizer.step_with_grad_scale(static_cast<double>(static_cast<float>(1.0 / scale_)));
    return true;
  }
  if (st.stage == Stage::Ready) unscale_(optimizer);
  st.stage = Stage::Stepped;
  if (st.found_inf) return false;
  optimizer.step();
  return true;
}

void GradScaler::update(std::optional<double> new_scale) {
  if (!enabled_) return;
  if (new_scale) {
    KILN_CHECK(*new_scale > 0 && std::isfinite(*new_scale),
               "[GradScaler.update] new_scale should be a positive finite number, got ",
               *new_scale);
    scale_ = *new_scale;
  } else {
    KILN_CHECK(!per_optimizer_.empty(),
               "[GradScaler.update] no inf checks were recorded prior to update.");
    bool found = false;
    for (auto& [opt, st] : per_optimizer_) found |= st.found_inf;
    // PyTorch's _amp_update_scale_: back off on overflow, grow after growth_interval clean steps.
    if (found) {
      scale_ *= backoff_factor_;
      growth_tracker_ = 0;
    } else if (++growth_tracker_ == growth_interval_) {
      const double grown = scale_ * growth_factor_;
      // float32 holds the scale in PyTorch: stop growing where it would overflow.
      if (std::isfinite(static_cast<float>(grown))) scale_ = grown;
      growth_tracker_ = 0;
    }
  }
  per_optimizer_.clear();
}

std::map<std::string, double> GradScaler::state_dict() const {
  if (!enabled_) return {};
  return {{"scale", scale_},
          {"growth_factor", growth_factor_},
          {"backoff_factor", backoff_factor_},
          {"growth_interval", static_cast<double>(growth_interval_)},
          {"_growth_tracker", static_cast<double>(growth_tracker_)}};
}

void GradScaler::load_state_dict(const std::map<std::string, double>& state) {
  if (!enabled_) return;
  KILN_CHECK(!state.empty(),
             "[GradScaler.load_state_dict] the source state dict is empty, possibly because it "
             "was saved from a disabled instance of GradScaler.");
  auto get = [&](const char* k) {
    auto it = state.find(k);
    KILN_CHECK(it != state.end(), "[GradScaler.load_state_dict] missing key '", k, "'");
    return it->second;
  };
  scale_ = get("scale");
  growth_factor_ = get("growth_factor");
  backoff_factor_ = get("backoff_factor");
  growth_interval_ = static_cast<int64_t>(get("growth_interval"));
  growth_tracker_ = static_cast<int64_t>(get("_growth_tracker"));
}

}  // namespace kiln::amp
