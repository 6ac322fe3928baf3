// Custom autograd functions (kiln::autograd::Function / AutogradContext) and activation
// checkpointing (kiln::utils::checkpoint).
#include <cxxabi.h>

#include <cstdlib>

#include "amp/autocast_state.h"
#include "autograd/node_state.h"
#include "autograd/view_autograd.h"
#include "kiln/ops.h"
#include "kiln/random.h"
#include "ops/tensor_factory.h"

namespace kiln {

struct autograd::AutogradContext::Impl {
  variable_list to_save;  // until forward returns
  std::vector<std::pair<kiln::detail::SavedTensor, uint32_t>> saved;
  std::vector<Tensor> dirty, non_differentiable;
  std::vector<bool> needs_input_grad;
  std::weak_ptr<AutogradNode> node;
  bool released = false;
};

namespace autograd {

AutogradContext::AutogradContext() : impl_(std::make_shared<Impl>()) {}

void AutogradContext::save_for_backward(variable_list to_save) {
  impl_->to_save = std::move(to_save);
}

variable_list AutogradContext::get_saved_variables() const {
  KILN_CHECK(!impl_->released,
             "[Function backward] Trying to backward through the graph a second "
             "time (saved tensors were freed); specify retain_graph=true.");
  if (!impl_->to_save.empty()) return impl_->to_save;  // inside forward
  variable_list out;
  auto node = impl_->node.lock();
  for (auto& [s, nr] : impl_->saved) out.push_back(s.unpack(node, nr, "custom Function"));
  return out;
}

void AutogradContext::mark_dirty(const variable_list& inputs) { impl_->dirty = inputs; }
void AutogradContext::mark_non_differentiable(const variable_list& outputs) {
  impl_->non_differentiable = outputs;
}
bool AutogradContext::needs_input_grad(size_t i) const {
  return i < impl_->needs_input_grad.size() && impl_->needs_input_grad[i];
}

namespace {

std::string demangle(const char* name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string r = status == 0 && d ? d : name;
  std::free(d);
  auto pos = r.rfind("::");
  return pos == std::string::npos ? r : r.substr(pos + 2);
}

bool contains(const variable_list& v, const Tensor& t) {
  for (const Tensor& x : v)
    if (x.is_same(t)) return true;
  return false;
}

class FunctionNode final : public AutogradNode {
 public:
  using Backward = std::function<variable_list(AutogradContext*, variable_list)>;
  FunctionNode(std::string name, std::shared_ptr<AutogradContext> ctx, Backward bwd)
      : name_(std::move(name)), ctx_(std::move(ctx)), bwd_(std::move(bwd)) {}
  std::string name() const override { return name_; }
  void release_variables() override {
    ctx_->impl_->saved.clear();
    ctx_->impl_->released = true;
  }
  variable_list apply(variable_list&& grads) override {
    if (ctx_->materialize_grads_)
      for (size_t j = 0; j < grads.size(); ++j)
        if (!grads[j].defined() && state().out_meta[j].defined)
          grads[j] = state().out_meta[j].zeros();
    variable_list r = bwd_(ctx_.get(), std::move(grads));
    const size_t n = state().next.size();
    KILN_CHECK(r.size() >= n, "[", name_,
               "] function backward returned an incorrect number of "
               "gradients (expected ",
               n, ", got ", r.size(), ")");
    for (size_t i = n; i < r.size(); ++i)
      KILN_CHECK(!r[i].defined(), "[", name_,
                 "] function backward returned an incorrect number "
                 "of gradients (expected ",
                 n, ", got ", r.size(), ")");
    r.resize(n);
    return r;
  }

 private:
  std::string name_;
  std::shared_ptr<AutogradContext> ctx_;
  Backward bwd_;
};

}  // namespace

namespace detail {

void function_apply(const char* type_name, const variable_list& inputs,
                    const std::shared_ptr<AutogradContext>& ctx,
                    const std::function<variable_list()>& forward,
                    std::function<variable_list(AutogradContext*, variable_list)> backward,
                    variable_list& outputs) {
  const bool grad_on = kiln::detail::grad_mode_enabled();
  bool record = false;
  ctx->impl_->needs_input_grad.clear();
  for (const Tensor& x : inputs) {
    bool need = grad_on && x.defined() && x.requires_grad();
    ctx->impl_->needs_input_grad.push_back(need);
    record |= need;
  }
  {
    AutoGradMode mode(false);
    outputs = forward();
  }
  auto& im = *ctx->impl_;
  std::shared_ptr<AutogradNode> node;
  if (record) {
    node =
        std::make_shared<FunctionNode>(demangle(type_name) + "Backward", ctx, std::move(backward));
    kiln::detail::add_input_edges(*node, inputs);
    if (autograd::AnomalyMode::is_enabled()) node->state().anomaly_op = demangle(type_name);
    im.node = node;
  }
  for (size_t j = 0; j < outputs.size(); ++j) {
    Tensor& o = outputs[j];
    if (node) node->state().out_meta.push_back(kiln::detail::TensorMeta::of(o));
    if (!o.defined()) continue;
    const bool is_input = contains(inputs, o);
    const bool dirty = contains(im.dirty, o);
    if (is_input && !dirty)
      o = kiln::detail::alias_untracked(o, o.sizes(), o.strides(), o.storage_offset());
    if (dirty && record) {
      AutogradMeta* m = kiln::detail::meta_of(o);
      KILN_CHECK(!(m && m->requires_grad && !o.grad_fn() && !m->is_view), "[", demangle(type_name),
                 "] a leaf Variable that requires grad has been used in an in-place operation.");
      KILN_CHECK(!(m && m->is_view), "[", demangle(type_name),
                 "] mark_dirty on a view is not "
                 "supported by kiln's autograd");
    }
    if (!node || contains(im.non_differentiable, o) ||
        !kiln::detail::is_differentiable_dtype(o.dtype()))
      continue;
    kiln::detail::set_history(o, node, static_cast<uint32_t>(j));
  }
  // Saved tensors: outputs are kept without their metadata (no cycle through the node).
  for (const Tensor& t : im.to_save) {
    int out_nr = -1;
    for (size_t j = 0; j < outputs.size(); ++j)
      if (outputs[j].defined() && t.defined() && outputs[j].impl() == t.impl())
        out_nr = static_cast<int>(j);
    if (out_nr >= 0 && node)
      im.saved.emplace_back(kiln::detail::SavedTensor(t, true), static_cast<uint32_t>(out_nr));
    else
      im.saved.emplace_back(kiln::detail::SavedTensor(t, false), 0u);
  }
  im.to_save.clear();
}

}  // namespace detail
}  // namespace autograd

namespace utils {

namespace {

// Note [checkpoint RNG state]: with preserve_rng_state (PyTorch's default) the forward records
// the state of the cpu default generator and of the default generator of every cuda device an
// input lives on; the recomputation runs with those states (so dropout draws the same mask) and
// the caller's states are restored afterwards, as torch.random.fork_rng does.
struct RngStates {
  std::vector<std::pair<Device, std::vector<uint8_t>>> states;
  static RngStates capture(const std::vector<Tensor>& inputs) {
    RngStates r;
    r.states.emplace_back(Device(kCPU), default_generator(Device(kCPU)).get_state());
    for (const Tensor& x : inputs) {
      if (!x.defined() || !x.device().is_cuda()) continue;
      bool seen = false;
      for (auto& [d, st] : r.states) seen |= d == x.device();
      if (!seen) r.states.emplace_back(x.device(), default_generator(x.device()).get_state());
    }
    return r;
  }
  RngStates current() const {
    RngStates r;
    for (auto& [d, st] : states) r.states.emplace_back(d, default_generator(d).get_state());
    return r;
  }
  void restore() const {
    for (auto& [d, st] : states) default_generator(d).set_state(st);
  }
};

class CheckpointNode final : public AutogradNode {
 public:
  using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
  CheckpointNode(Fn fn, const std::vector<Tensor>& inputs, std::optional<RngStates> rng)
      : fn_(std::move(fn)), rng_(std::move(rng)), autocast_(detail::autocast_snapshot()) {
    for (const Tensor& x : inputs) saved_.emplace_back(x, false);
    requires_.reserve(inputs.size());
    for (const Tensor& x : inputs) requires_.push_back(x.defined() && x.requires_grad());
  }
  std::string name() const override { return "CheckpointFunctionBackward"; }
  void release_variables() override {
    for (auto& s : saved_) s.reset();
  }
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    const bool create = detail::grad_mode_enabled();
    std::vector<Tensor> xs, leaves;
    for (size_t i = 0; i < saved_.size(); ++i) {
      Tensor x = saved_[i].unpack(nullptr, 0, "checkpoint");
      if (x.defined()) {
        x = x.detach();
        if (requires_[i]) {
          x.requires_grad_(true);
          leaves.push_back(x);
        }
      }
      xs.push_back(x);
    }
    std::vector<Tensor> outs;
    {
      EnableGradGuard eg;
      detail::AutocastRestore ac(autocast_);  // recompute under the forward's autocast state
      if (rng_) {
        const RngStates caller = rng_->current();
        rng_->restore();
        try {
          outs = fn_(xs);
        } catch (...) {
          caller.restore();
          throw;
        }
        caller.restore();
      } else {
        outs = fn_(xs);
      }
    }
    std::vector<Tensor> roots, gs;
    for (size_t j = 0; j < outs.size() && j < grads.size(); ++j)
      if (grads[j].defined() && outs[j].defined() && outs[j].requires_grad()) {
        roots.push_back(outs[j]);
        gs.push_back(grads[j]);
      }
    std::vector<Tensor> result(saved_.size());
    if (roots.empty() || leaves.empty()) return result;
    std::vector<Tensor> got = autograd::grad(roots, leaves, gs, false, create, true);
    size_t k = 0;
    for (size_t i = 0; i < saved_.size(); ++i)
      if (requires_[i]) result[i] = got[k++];
    return result;
  }

 private:
  Fn fn_;
  std::optional<RngStates> rng_;
  detail::AutocastSnapshot autocast_;
  std::vector<detail::SavedTensor> saved_;
  std::vector<bool> requires_;
};

}  // namespace

std::vector<Tensor> checkpoint(
    const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
    const std::vector<Tensor>& inputs, bool preserve_rng_state) {
  bool any = false;
  for (const Tensor& x : inputs) any |= x.defined() && x.requires_grad();
  if (!detail::grad_mode_enabled() || !any) return fn(inputs);
  std::optional<RngStates> rng;
  if (preserve_rng_state) rng = RngStates::capture(inputs);
  std::vector<Tensor> outs;
  {
    NoGradGuard ng;
    outs = fn(inputs);
  }
  auto node = std::make_shared<CheckpointNode>(fn, inputs, std::move(rng));
  detail::add_input_edges(*node, inputs);
  for (size_t j = 0; j < outs.size(); ++j) {
    Tensor& o = outs[j];
    node->state().out_meta.push_back(detail::TensorMeta::of(o));
    if (!o.defined() || !detail::is_differentiable_dtype(o.dtype())) continue;
    for (const Tensor& x : inputs)
      if (x.defined() && o.impl() == x.impl())
        o = detail::alias_untracked(o, o.sizes(), o.strides(), o.storage_offset());
    detail::set_history(o, node, static_cast<uint32_t>(j));
  }
  return outs;
}

Tensor checkpoint(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                  const std::vector<Tensor>& inputs, bool preserve_rng_state) {
  return checkpoint(
      std::function<std::vector<Tensor>(const std::vector<Tensor>&)>(
          [fn](const std::vector<Tensor>& xs) { return std::vector<Tensor>{fn(xs)}; }),
      inputs, preserve_rng_state)[0];
}

}  // namespace utils
}  // namespace kiln
