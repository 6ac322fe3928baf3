// kiln::nn::Module (torch.nn.Module in C++): named parameters, buffers and submodules, train/eval,
// to(device, dtype), apply, zero_grad, state_dict/load_state_dict, printing; ModuleHolder.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "kiln/nn/ordered_dict.h"
#include "kiln/tensor.h"

namespace kiln::nn {

// A state dict: "layer.0.weight" -> tensor, in registration order.
using StateDict = OrderedDict<Tensor>;

// What load_state_dict found: keys the module has but the dict lacks, and the reverse.
struct LoadStateDictResult {
  std::vector<std::string> missing_keys;
  std::vector<std::string> unexpected_keys;
};

// Note [Module parameters are shared handles]: a layer keeps its parameters as Tensor members
// (lin->weight) that share their TensorImpl with the module's registry. Module::to() therefore
// changes each parameter in place (swapping its storage, dtype and device, like PyTorch's
// `param.data = ...`), so the members, optimizers and anyone else holding the handle follow.
class Module : public std::enable_shared_from_this<Module> {
 public:
  // `name` is what printing shows (e.g. "Linear"); empty means the C++ type's name without the
  // namespace and a trailing "Impl".
  explicit Module(std::string name = "");
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  std::string name() const;

  // ---- registration (names may not contain '.', and must be unique within the module) ----
  // Stores t (an undefined tensor registers "None": skipped by parameters() and state_dict()).
  // Marks it as requiring grad when requires_grad. Returns a handle sharing t.
  Tensor register_parameter(std::string name, Tensor t, bool requires_grad = true);
  // A non-persistent buffer is moved by to() but left out of state_dict().
  Tensor register_buffer(std::string name, Tensor t, bool persistent = true);
  template <class M>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> m) {
    register_module_impl(std::move(name), std::static_pointer_cast<Module>(m));
    return m;
  }
  template <class H, class = typename H::ContainedType>
  std::shared_ptr<typename H::ContainedType> register_module(std::string name, H holder) {
    return register_module(std::move(name), holder.ptr());
  }
  // Replaces an already registered submodule (as assigning a new one in Python).
  template <class M>
  std::shared_ptr<M> replace_module(const std::string& name, std::shared_ptr<M> m) {
    replace_module_impl(name, std::static_pointer_cast<Module>(m));
    return m;
  }

  // ---- traversal (recursive forms use "child.param" names, in registration order) ----
  std::vector<Tensor> parameters(bool recurse = true) const;
  OrderedDict<Tensor> named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  OrderedDict<Tensor> named_buffers(bool recurse = true) const;
  std::vector<std::shared_ptr<Module>> children() const;
  OrderedDict<std::shared_ptr<Module>> named_children() const;
  // Each module once (shared submodules are not repeated); self first when include_self.
  std::vector<std::shared_ptr<Module>> modules(bool include_self = true);
  OrderedDict<std::shared_ptr<Module>> named_modules(const std::string& prefix = "",
                                                     bool include_self = true);
  // "a.b.c" lookups; throw kiln::Error naming the path when absent.
  std::shared_ptr<Module> get_submodule(const std::string& target);
  Tensor get_parameter(const std::string& target) const;
  Tensor get_buffer(const std::string& target) const;

  // ---- modes, devices, dtypes ----
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  // Moves every parameter, gradient and buffer to `device`; `dtype` (if given) applies to the
  // floating-point ones only, as PyTorch does.
  void to(Device device, std::optional<DType> dtype = std::nullopt, bool non_blocking = false);
  void to(DType dtype, bool non_blocking = false);
  // Calls fn on every module, children first and self last (torch.nn.Module.apply).
  void apply(const std::function<void(Module&)>& fn);
  void apply(const std::function<void(const std::string&, Module&)>& fn,
             const std::string& prefix = "");
  // Gradients of all parameters: reset to undefined (set_to_none) or zeroed in place.
  void zero_grad(bool set_to_none = true);
  // Sets requires_grad on all parameters.
  void requires_grad_(bool requires_grad = true);

  // ---- state ----
  // Parameters and persistent buffers (detached handles sharing data) under `prefix`.
  StateDict state_dict(const std::string& prefix = "") const;
  // Copies matching entries into the parameters and buffers (shapes must match). With strict,
  // any missing or unexpected key is an error that lists them all and nothing is changed.
  LoadStateDictResult load_state_dict(const StateDict& dict, bool strict = true);

  // ---- printing (PyTorch's layout) ----
  // The part inside the parentheses for a module without children, e.g. "in_features=2, ...".
  virtual std::string extra_repr() const { return ""; }
  virtual void pretty_print(std::ostream& os, int indent = 0) const;

  // Re-initializes parameters as the layer's constructor did (layers override it).
  virtual void reset_parameters() {}

 protected:
  // Changes the printed name (subclasses of a layer that PyTorch prints under another name).
  void set_name(std::string name) { name_ = std::move(name); }
  bool training_ = true;

 private:
  void register_module_impl(std::string name, std::shared_ptr<Module> m);
  void replace_module_impl(const std::string& name, std::shared_ptr<Module> m);
  void collect_named_modules(const std::string& prefix, OrderedDict<std::shared_ptr<Module>>& out,
                             std::unordered_set<const Module*>& seen);
  void collect_state(const std::string& prefix, StateDict& out) const;

  std::string name_;
  OrderedDict<Tensor> parameters_;
  OrderedDict<Tensor> buffers_;
  std::unordered_set<std::string> non_persistent_;
  OrderedDict<std::shared_ptr<Module>> children_;
};

std::ostream& operator<<(std::ostream& os, const Module& m);

// libtorch's holder: `Linear lin(2, 3); lin->weight; lin(x)` owns a shared_ptr<LinearImpl>.
template <class Impl>
class ModuleHolder {
 public:
  using ContainedType = Impl;

  // Default-constructs the module when it can be (e.g. ReLU relu;).
  ModuleHolder() requires std::is_default_constructible_v<Impl> : impl_(std::make_shared<Impl>()) {}
  // An empty holder.
  ModuleHolder(std::nullptr_t) {}                                 // NOLINT
  ModuleHolder(std::shared_ptr<Impl> p) : impl_(std::move(p)) {}  // NOLINT
  template <class A0, class... Args>
  requires(!std::is_same_v<std::decay_t<A0>, ModuleHolder> &&
           !std::is_same_v<std::decay_t<A0>, std::shared_ptr<Impl>> &&
           !std::is_same_v<std::decay_t<A0>, std::nullptr_t> &&
           !std::is_base_of_v<ModuleHolder, std::decay_t<A0>> &&
           std::is_constructible_v<Impl, A0, Args...>) explicit ModuleHolder(A0&& a0,
                                                                             Args&&... args)
      : impl_(std::make_shared<Impl>(std::forward<A0>(a0), std::forward<Args>(args)...)) {}

  Impl* operator->() const { return get(); }
  Impl& operator*() const { return *get(); }
  Impl* get() const {
    KILN_CHECK(impl_, "[ModuleHolder] accessing an empty module holder");
    return impl_.get();
  }
  const std::shared_ptr<Impl>& ptr() const { return impl_; }
  bool is_empty() const { return !impl_; }
  explicit operator bool() const { return static_cast<bool>(impl_); }
  template <class... Args>
  auto operator()(Args&&... args) const {
    return get()->forward(std::forward<Args>(args)...);
  }

 protected:
  std::shared_ptr<Impl> impl_;
};

template <class Impl>
std::ostream& operator<<(std::ostream& os, const ModuleHolder<Impl>& m) {
  return os << *m;
}

}  // namespace kiln::nn

// Declares `class Name : ModuleHolder<NameImpl>` (libtorch's TORCH_MODULE).
#define KILN_MODULE(Name)                                     \
  class Name : public ::kiln::nn::ModuleHolder<Name##Impl> {  \
   public:                                                    \
    using ::kiln::nn::ModuleHolder<Name##Impl>::ModuleHolder; \
    Name() = default;                                         \
  }
