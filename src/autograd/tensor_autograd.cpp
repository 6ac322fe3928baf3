// Tensor's autograd methods (kiln/detail/tensor_autograd_methods.inc): requires_grad, grad,
// retain_grad, detach_, hooks, grad_fn.
#include <algorithm>

#include "autograd/node_state.h"

namespace kiln {

using detail::meta_of;

bool Tensor::requires_grad() const { return detail::requires_grad_fast(*this); }

Tensor& Tensor::requires_grad_(bool r) const {
  KILN_CHECK(defined(), "[requires_grad_] undefined tensor");
  KILN_CHECK(!r || is_floating_point() || is_complex(),
             "[requires_grad_] only Tensors of "
             "floating point and complex dtype can require gradients, got ",
             dtype_name(dtype()));
  if (!r) {
    AutogradMeta* m = meta_of(*this);
    KILN_CHECK(m == nullptr || !detail::grad_fn_of(*this),
               "[requires_grad_] you can only change "
               "requires_grad flags of leaf variables. If you want to use a computed variable in "
               "a subgraph that doesn't require differentiation use var_no_grad = var.detach().");
  }
  detail::set_requires_grad(*this, r);
  return const_cast<Tensor&>(*this);
}

Tensor& Tensor::set_requires_grad(bool r) const { return requires_grad_(r); }

const Tensor& Tensor::grad() const {
  static const Tensor none;
  AutogradMeta* m = meta_of(*this);
  if (m == nullptr) return none;
  return m->retained ? *m->retained : m->grad;
}

Tensor& Tensor::mutable_grad() const {
  AutogradMeta& m = detail::ensure_meta(*this);
  return m.retained ? *m.retained : m.grad;
}

bool Tensor::is_leaf() const { return !detail::grad_fn_of(*this); }

void Tensor::retain_grad() const {
  KILN_CHECK(requires_grad(),
             "[retain_grad] can't retain_grad on Tensor that has "
             "requires_grad=False");
  if (is_leaf()) return;  // leaves keep their grad anyway
  AutogradMeta& m = detail::ensure_meta(*this);
  if (m.retained) return;
  m.retained = std::make_shared<Tensor>();
  m.grad_fn->state().retained.emplace_back(m.output_nr, m.retained);
}

bool Tensor::retains_grad() const {
  AutogradMeta* m = meta_of(*this);
  return m != nullptr && m->retained != nullptr;
}

Tensor& Tensor::detach_() const {
  if (AutogradMeta* m = meta_of(*this)) {
    KILN_CHECK(!m->is_view || !m->requires_grad,
               "[detach_] Can't detach views in-place. Use "
               "detach() instead.");
    m->grad_fn.reset();
    m->requires_grad = false;
    m->output_nr = 0;
    m->is_view = false;
    m->base = Tensor();
  }
  return const_cast<Tensor&>(*this);
}

const std::shared_ptr<AutogradNode>& Tensor::grad_fn() const { return detail::grad_fn_of(*this); }

uint32_t Tensor::output_nr() const {
  AutogradMeta* m = meta_of(*this);
  return m ? m->output_nr : 0;
}

bool Tensor::is_view() const {
  AutogradMeta* m = meta_of(*this);
  return m != nullptr && m->is_view;
}

bool Tensor::is_inference() const { return defined() && impl()->is_inference(); }

unsigned Tensor::add_grad_hook_(std::unique_ptr<GradHook> hook, bool post_accumulate) const {
  KILN_CHECK(requires_grad(),
             "[register_hook] cannot register a hook on a tensor that doesn't "
             "require gradient");
  AutogradMeta& m = detail::ensure_meta(*this);
  unsigned h = detail::next_hook_handle();
  std::shared_ptr<GradHook> sh(std::move(hook));
  if (post_accumulate) {
    KILN_CHECK(is_leaf(),
               "[register_post_accumulate_grad_hook] post accumulate grad hooks "
               "cannot be registered on non-leaf tensors");
    m.post_hooks.emplace_back(h, sh);
    return h;
  }
  m.hooks.emplace_back(h, sh);
  if (const auto& fn = detail::grad_fn_of(*this))
    fn->state().pre_hooks.push_back({h, m.output_nr, sh});
  return h;
}

void Tensor::remove_hook(unsigned handle) const {
  AutogradMeta* m = meta_of(*this);
  if (m == nullptr) return;
  auto drop = [handle](auto& v) {
    v.erase(std::remove_if(v.begin(), v.end(), [&](const auto& e) { return e.first == handle; }),
            v.end());
  };
  drop(m->hooks);
  drop(m->post_hooks);
  if (m->grad_fn) {
    auto& ph = m->grad_fn->state().pre_hooks;
    ph.erase(std::remove_if(ph.begin(), ph.end(),
                            [&](const detail::HookEntry& e) { return e.handle == handle; }),
             ph.end());
  }
}

}  // namespace kiln
