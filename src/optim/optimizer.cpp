// Optimizer base: parameter groups, per-parameter state, zero_grad, step, state_dict.
#include "kiln/optim/optimizer.h"

#include <cmath>
#include <unordered_set>

#include "kiln/ops/factories.h"
#include "nn/grad_scope.h"
#include "optim/multi_tensor.h"
#include "optim/optim_util.h"

namespace kiln::optim {

double OptimizerOptions::get(const std::string& key) const {
  auto it = values_.find(key);
  KILN_CHECK(it != values_.end(), "[optim] option '", key, "' is not set");
  return it->second;
}

Optimizer::Optimizer(std::vector<ParamGroup> groups, OptimizerOptions defaults, std::string name)
    : name_(std::move(name)), defaults_(std::move(defaults)) {
  KILN_CHECK(!groups.empty(), "[", name_, "] optimizer got an empty parameter list");
  for (auto& g : groups) add_param_group(std::move(g));
}

void Optimizer::add_param_group(ParamGroup group) {
  KILN_CHECK(!group.params.empty(), "[", name_, "] a parameter group has no parameters");
  std::unordered_set<const detail::TensorImpl*> existing;
  for (auto& g : groups_)
    for (auto& p : g.params) existing.insert(p.impl());
  std::unordered_set<const detail::TensorImpl*> mine;
  for (auto& p : group.params) {
    KILN_CHECK(p.defined(), "[", name_, "] parameter is undefined");
    KILN_CHECK(p.is_floating_point() || p.is_complex(), "[", name_,
               "] can only optimize floating-point or complex tensors, got ", p.dtype());
    KILN_CHECK(p.is_leaf(), "[", name_, "] can't optimize a non-leaf tensor");
    KILN_CHECK(!existing.count(p.impl()), "[", name_,
               "] some parameters appear in more than one parameter group");
    KILN_CHECK(mine.insert(p.impl()).second, "[", name_,
               "] a parameter group contains a parameter twice");
  }
  for (auto& kv : group.options.values()) {
    KILN_CHECK(defaults_.has(kv.first) || kv.first == "initial_lr", "[", name_,
               "] unknown option '", kv.first, "' in a parameter group");
  }
  for (auto& kv : defaults_.values())
    if (!group.options.has(kv.first)) group.options.set(kv.first, kv.second);
  KILN_CHECK(group.options.lr() >= 0, "[", name_, "] invalid learning rate: ", group.options.lr());
  groups_.push_back(std::move(group));
}

void Optimizer::zero_grad(bool set_to_none) {
  detail::NoGradScope no_grad;
  for (auto& g : groups_) {
    for (auto& p : g.params) {
      if (!p.grad().defined()) continue;
      if (set_to_none)
        p.mutable_grad() = Tensor();
      else
        p.mutable_grad().zero_();
    }
  }
}

Tensor Optimizer::step(const Closure& closure) {
  Tensor loss;
  if (closure) {
    detail::EnableGradScope enable;
    loss = closure();
  }
  detail::NoGradScope no_grad;
  for (auto& g : groups_) step_group(g);
  return loss;
}

void Optimizer::step_with_grad_scale(double inv_scale) {
  KILN_CHECK(supports_grad_scale(), "[", name_,
             "] step_with_grad_scale needs a fused step in every parameter group");
  KILN_CHECK(std::isfinite(inv_scale) && inv_scale > 0, "[", name_,
             "] step_with_grad_scale: invalid inverse scale ", inv_scale);
  inv_grad_scale_ = inv_scale;
  try {
    step();
  } catch (...) {
    inv_grad_scale_ = 1.0;
    throw;
  }
  inv_grad_scale_ = 1.0;
}

ParamState& Optimizer::state(const Tensor& param) { return state_[param.impl()]; }

bool Optimizer::has_state(const Tensor& param) const { return state_.count(param.impl()) != 0; }

OptimizerStateDict Optimizer::state_dict() const {
  OptimizerStateDict d;
  int64_t idx = 0;
  for (auto& g : groups_) {
    OptimizerStateDict::Group sg;
    sg.options = g.options.values();
    for (auto& p : g.params) {
      auto it = state_.find(p.impl());
      if (it != state_.end()) d.state[idx] = it->second;
      sg.params.push_back(idx++);
    }
    d.param_groups.push_back(std::move(sg));
  }
  return d;
}

void Optimizer::load_state_dict(const OptimizerStateDict& dict) {
  KILN_CHECK(dict.param_groups.size() == groups_.size(), "[", name_,
             ".load_state_dict] the state dict has ", dict.param_groups.size(),
             " parameter groups, the optimizer ", groups_.size());
  std::map<int64_t, const Tensor*> index_to_param;
  std::map<int64_t, size_t> index_to_group;
  for (size_t i = 0; i < groups_.size(); ++i) {
    const auto& sg = dict.param_groups[i];
    KILN_CHECK(sg.params.size() == groups_[i].params.size(), "[", name_,
               ".load_state_dict] parameter group ", i, " has ", sg.params.size(),
               " parameters in the state dict and ", groups_[i].params.size(), " in the optimizer");
    for (size_t j = 0; j < sg.params.size(); ++j) {
      KILN_CHECK(index_to_param.emplace(sg.params[j], &groups_[i].params[j]).second, "[", name_,
                 ".load_state_dict] parameter index ", sg.params[j], " appears twice");
      index_to_group[sg.params[j]] = i;
    }
    for (auto& kv : sg.options)
      KILN_CHECK(defaults_.has(kv.first) || kv.first == "initial_lr", "[", name_,
                 ".load_state_dict] unknown option '", kv.first, "'");
  }
  for (auto& kv : dict.state) {
    auto it = index_to_param.find(kv.first);
    KILN_CHECK(it != index_to_param.end(), "[", name_, ".load_state_dict] state for parameter ",
               kv.first, " which no group lists");
    for (auto& b : kv.second.buffers)
      KILN_CHECK(b.second.defined(), "[", name_, ".load_state_dict] state '", b.first,
                 "' of parameter ", kv.first, " is undefined");
  }
  // Checked: now change things.
  detail::NoGradScope no_grad;
  for (size_t i = 0; i < groups_.size(); ++i) {
    for (auto& kv : dict.param_groups[i].options) groups_[i].options.set(kv.first, kv.second);
  }
  state_.clear();
  for (auto& kv : dict.state) {
    const Tensor& p = *index_to_param.at(kv.first);
    // A group with master weights keeps the float32 state of its 16-bit parameters.
    const bool master = impl::uses_master(groups_[index_to_group.at(kv.first)].options, p);
    ParamState st;
    st.step = kv.second.step;
    for (auto& b : kv.second.buffers) {
      const Tensor& t = b.second;
      DType dt =
          (t.is_floating_point() && p.is_floating_point() && t.dim() > 0) ? p.dtype() : t.dtype();
      if (master && t.is_floating_point() && t.dim() > 0) dt = DType::Float32;
      st.buffers[b.first] = t.to(p.device(), dt, false, /*copy=*/true);
    }
    state_[p.impl()] = std::move(st);
  }
}

namespace impl {

std::vector<Tensor> fused_params(const ParamGroup& group, const char* name) {
  std::vector<Tensor> ps;
  for (const Tensor& p : group.params)
    if (p.grad().defined()) ps.push_back(p);
  if (ps.empty()) return ps;
  const Device d = ps[0].device();
  for (const Tensor& p : ps) {
    const DType dt = p.dtype();
    KILN_CHECK(dt == DType::Float16 || dt == DType::BFloat16 || dt == DType::Float32 ||
                   dt == DType::Float64,
               "[", name, "] fused=1 supports float16, bfloat16, float32 and float64 parameters, ",
               "got ", dtype_name(dt));
    KILN_CHECK(p.device() == d, "[", name,
               "] fused=1 needs all parameters of a group on one device, got ", d, " and ",
               p.device());
    const Tensor& g = p.grad();
    KILN_CHECK(g.dtype() == dt && g.device() == d && g.sizes() == p.sizes(), "[", name,
               "] fused=1 needs each gradient to match its parameter's dtype, device and shape; "
               "got a gradient of ",
               dtype_name(g.dtype()), " on ", g.device(), " for a parameter of ", dtype_name(dt),
               " on ", d);
  }
  KILN_CHECK(kiln::detail::multi_tensor_kernels(d.type).fused_adam != nullptr, "[", name,
             "] fused=1: no multi-tensor kernels for device ", d);
  return ps;
}

}  // namespace impl

}  // namespace kiln::optim
