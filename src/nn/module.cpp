// kiln::nn::Module: registration, traversal, to(), state_dict/load_state_dict and printing.
#include "kiln/nn/module.h"

#include <cxxabi.h>

#include <cstdlib>
#include <sstream>
#include <typeinfo>

#include "nn/grad_scope.h"
#include "nn/tensor_data.h"

namespace kiln::nn {

namespace {

void check_name(const std::string& name, const char* what) {
  KILN_CHECK(!name.empty(), "[Module.", what, "] name must not be empty");
  KILN_CHECK(name.find('.') == std::string::npos, "[Module.", what, "] name '", name,
             "' must not contain '.'");
}

std::string demangled_type_name(const Module& m) {
  const char* raw = typeid(m).name();
  int status = 0;
  char* d = abi::__cxa_demangle(raw, nullptr, nullptr, &status);
  std::string s = (status == 0 && d) ? std::string(d) : std::string(raw);
  std::free(d);
  auto colon = s.rfind("::");
  if (colon != std::string::npos) s = s.substr(colon + 2);
  if (s.size() > 4 && s.compare(s.size() - 4, 4, "Impl") == 0) s.resize(s.size() - 4);
  return s;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::string("\"") + v[i] + "\"";
  return s;
}

std::string shape_str(IntArrayRef s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << "]";
  return os.str();
}

}  // namespace

Module::Module(std::string name) : name_(std::move(name)) {}

std::string Module::name() const { return name_.empty() ? demangled_type_name(*this) : name_; }

Tensor Module::register_parameter(std::string name, Tensor t, bool requires_grad) {
  check_name(name, "register_parameter");
  KILN_CHECK(!buffers_.contains(name) && !children_.contains(name),
             "[Module.register_parameter] attribute '", name, "' already exists");
  if (t.defined() && requires_grad) t.requires_grad_(true);
  parameters_.insert_or_assign(name, t);
  return t;
}

Tensor Module::register_buffer(std::string name, Tensor t, bool persistent) {
  check_name(name, "register_buffer");
  KILN_CHECK(!parameters_.contains(name) && !children_.contains(name),
             "[Module.register_buffer] attribute '", name, "' already exists");
  buffers_.insert_or_assign(name, t);
  if (persistent)
    non_persistent_.erase(name);
  else
    non_persistent_.insert(name);
  return t;
}

void Module::register_module_impl(std::string name, std::shared_ptr<Module> m) {
  check_name(name, "register_module");
  KILN_CHECK(m, "[Module.register_module] submodule '", name, "' is null");
  KILN_CHECK(!parameters_.contains(name) && !buffers_.contains(name) && !children_.contains(name),
             "[Module.register_module] attribute '", name, "' already exists");
  children_.insert(std::move(name), std::move(m));
}

void Module::replace_module_impl(const std::string& name, std::shared_ptr<Module> m) {
  KILN_CHECK(children_.contains(name), "[Module.replace_module] no submodule '", name, "'");
  KILN_CHECK(m, "[Module.replace_module] submodule '", name, "' is null");
  children_[name] = std::move(m);
}

OrderedDict<Tensor> Module::named_parameters(bool recurse) const {
  OrderedDict<Tensor> out;
  std::unordered_set<const kiln::detail::TensorImpl*> seen;
  auto add_own = [&](const Module& mod, const std::string& prefix) {
    for (auto& it : mod.parameters_) {
      if (!it.value.defined() || !seen.insert(it.value.impl()).second) continue;
      out.insert(prefix + it.key, it.value);
    }
  };
  if (!recurse) {
    add_own(*this, "");
    return out;
  }
  auto mods = const_cast<Module*>(this)->named_modules();
  for (auto& it : mods) add_own(*it.value, it.key.empty() ? "" : it.key + ".");
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  return named_parameters(recurse).values();
}

OrderedDict<Tensor> Module::named_buffers(bool recurse) const {
  OrderedDict<Tensor> out;
  std::unordered_set<const kiln::detail::TensorImpl*> seen;
  auto add_own = [&](const Module& mod, const std::string& prefix) {
    for (auto& it : mod.buffers_) {
      if (!it.value.defined() || !seen.insert(it.value.impl()).second) continue;
      out.insert(prefix + it.key, it.value);
    }
  };
  if (!recurse) {
    add_own(*this, "");
    return out;
  }
  auto mods = const_cast<Module*>(this)->named_modules();
  for (auto& it : mods) add_own(*it.value, it.key.empty() ? "" : it.key + ".");
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const { return named_buffers(recurse).values(); }

std::vector<std::shared_ptr<Module>> Module::children() const { return children_.values(); }

OrderedDict<std::shared_ptr<Module>> Module::named_children() const { return children_; }

void Module::collect_named_modules(const std::string& prefix,
                                   OrderedDict<std::shared_ptr<Module>>& out,
                                   std::unordered_set<const Module*>& seen) {
  for (auto& it : children_) {
    if (!seen.insert(it.value.get()).second) continue;
    std::string name = prefix.empty() ? it.key : prefix + "." + it.key;
    out.insert(name, it.value);
    it.value->collect_named_modules(name, out, seen);
  }
}

OrderedDict<std::shared_ptr<Module>> Module::named_modules(const std::string& prefix,
                                                           bool include_self) {
  OrderedDict<std::shared_ptr<Module>> out;
  std::unordered_set<const Module*> seen{this};
  if (include_self) {
    // A module owned by a shared_ptr reports itself; a stack module gets a non-owning handle.
    std::shared_ptr<Module> self = weak_from_this().lock();
    if (!self) self = std::shared_ptr<Module>(std::shared_ptr<Module>(), this);
    out.insert(prefix, self);
  }
  collect_named_modules(prefix, out, seen);
  return out;
}

std::vector<std::shared_ptr<Module>> Module::modules(bool include_self) {
  return named_modules("", include_self).values();
}

std::shared_ptr<Module> Module::get_submodule(const std::string& target) {
  std::shared_ptr<Module> cur = weak_from_this().lock();
  if (!cur) cur = std::shared_ptr<Module>(std::shared_ptr<Module>(), this);
  if (target.empty()) return cur;
  std::stringstream ss(target);
  std::string part, path;
  while (std::getline(ss, part, '.')) {
    auto* next = cur->children_.find(part);
    KILN_CHECK(next, "[Module.get_submodule] ", cur->name(), " has no submodule '", part,
               "' (looking up '", target, "')");
    cur = *next;
  }
  return cur;
}

Tensor Module::get_parameter(const std::string& target) const {
  auto pos = target.rfind('.');
  const Module* owner = this;
  std::shared_ptr<Module> holder;
  if (pos != std::string::npos) {
    holder = const_cast<Module*>(this)->get_submodule(target.substr(0, pos));
    owner = holder.get();
  }
  const Tensor* t =
      owner->parameters_.find(pos == std::string::npos ? target : target.substr(pos + 1));
  KILN_CHECK(t, "[Module.get_parameter] no parameter '", target, "'");
  return *t;
}

Tensor Module::get_buffer(const std::string& target) const {
  auto pos = target.rfind('.');
  const Module* owner = this;
  std::shared_ptr<Module> holder;
  if (pos != std::string::npos) {
    holder = const_cast<Module*>(this)->get_submodule(target.substr(0, pos));
    owner = holder.get();
  }
  const Tensor* t =
      owner->buffers_.find(pos == std::string::npos ? target : target.substr(pos + 1));
  KILN_CHECK(t, "[Module.get_buffer] no buffer '", target, "'");
  return *t;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& it : children_) it.value->train(on);
}

void Module::to(Device device, std::optional<DType> dtype, bool non_blocking) {
  if (dtype) {
    KILN_CHECK(is_floating_point(*dtype) || is_complex(*dtype),
               "[Module.to] expects a floating point or complex dtype, got ", *dtype);
  }
  detail::NoGradScope no_grad;
  auto convert = [&](const Tensor& t) {
    DType dt = (dtype && (t.is_floating_point() || t.is_complex())) ? *dtype : t.dtype();
    return t.to(device, dt, non_blocking);
  };
  for (auto& m : modules()) {
    for (auto& it : m->parameters_) {
      if (!it.value.defined()) continue;
      Tensor moved = convert(it.value);
      if (!moved.is_same(it.value)) detail::set_data(it.value, moved);
      const Tensor& g = it.value.grad();
      if (g.defined()) {
        Tensor mg = convert(g);
        if (!mg.is_same(g)) detail::set_data(g, mg);
      }
    }
    for (auto& it : m->buffers_) {
      if (!it.value.defined()) continue;
      Tensor moved = convert(it.value);
      if (!moved.is_same(it.value)) detail::set_data(it.value, moved);
    }
  }
}

void Module::to(DType dtype, bool non_blocking) {
  KILN_CHECK(is_floating_point(dtype) || is_complex(dtype),
             "[Module.to] expects a floating point or complex dtype, got ", dtype);
  detail::NoGradScope no_grad;
  for (auto& m : modules()) {
    for (auto* dict : {&m->parameters_, &m->buffers_}) {
      for (auto& it : *dict) {
        const Tensor& t = it.value;
        if (!t.defined() || !(t.is_floating_point() || t.is_complex())) continue;
        Tensor moved = t.to(dtype);
        if (!moved.is_same(t)) detail::set_data(t, moved);
        if (dict == &m->parameters_ && t.grad().defined()) {
          Tensor mg = t.grad().to(dtype);
          if (!mg.is_same(t.grad())) detail::set_data(t.grad(), mg);
        }
      }
    }
  }
}

void Module::apply(const std::function<void(Module&)>& fn) {
  for (auto& it : children_) it.value->apply(fn);
  fn(*this);
}

void Module::apply(const std::function<void(const std::string&, Module&)>& fn,
                   const std::string& prefix) {
  for (auto& it : children_) it.value->apply(fn, prefix.empty() ? it.key : prefix + "." + it.key);
  fn(prefix, *this);
}

void Module::zero_grad(bool set_to_none) {
  for (auto& p : parameters()) {
    if (!p.grad().defined()) continue;
    if (set_to_none) {
      p.mutable_grad() = Tensor();
    } else {
      detail::NoGradScope no_grad;
      p.mutable_grad().zero_();
    }
  }
}

void Module::requires_grad_(bool requires_grad) {
  for (auto& p : parameters()) p.requires_grad_(requires_grad);
}

void Module::collect_state(const std::string& prefix, StateDict& out) const {
  for (auto& it : parameters_)
    if (it.value.defined()) out.insert_or_assign(prefix + it.key, it.value.detach());
  for (auto& it : buffers_)
    if (it.value.defined() && !non_persistent_.count(it.key))
      out.insert_or_assign(prefix + it.key, it.value.detach());
  for (auto& it : children_) it.value->collect_state(prefix + it.key + ".", out);
}

StateDict Module::state_dict(const std::string& prefix) const {
  StateDict out;
  collect_state(prefix, out);
  return out;
}

LoadStateDictResult Module::load_state_dict(const StateDict& dict, bool strict) {
  StateDict mine;
  collect_state("", mine);
  LoadStateDictResult r;
  std::vector<std::string> mismatched;
  for (auto& it : mine) {
    const Tensor* src = dict.find(it.key);
    if (!src) {
      r.missing_keys.push_back(it.key);
      continue;
    }
    KILN_CHECK(src->defined(), "[Module.load_state_dict] entry '", it.key, "' is undefined");
    if (src->sizes() != it.value.sizes())
      mismatched.push_back("size mismatch for " + it.key + ": copying a tensor of shape " +
                           shape_str(src->sizes()) + " from the state dict, the shape in the " +
                           "module is " + shape_str(it.value.sizes()));
  }
  for (auto& it : dict)
    if (!mine.contains(it.key)) r.unexpected_keys.push_back(it.key);
  std::string msg;
  for (auto& m : mismatched) msg += "\n  " + m;
  if (strict && !r.missing_keys.empty()) msg += "\n  missing keys: " + join(r.missing_keys);
  if (strict && !r.unexpected_keys.empty())
    msg += "\n  unexpected keys: " + join(r.unexpected_keys);
  KILN_CHECK(msg.empty(), "[Module.load_state_dict] error(s) loading the state dict of ", name(),
             ":", msg);
  detail::NoGradScope no_grad;
  for (auto& it : mine) {
    const Tensor* src = dict.find(it.key);
    if (src) it.value.copy_(*src);
  }
  return r;
}

void Module::pretty_print(std::ostream& os, int indent) const {
  std::string extra = extra_repr();
  os << name() << "(";
  if (children_.empty()) {
    os << extra << ")";
    return;
  }
  std::string pad(static_cast<size_t>(indent + 2), ' ');
  os << "\n";
  if (!extra.empty()) os << pad << extra << "\n";
  for (auto& it : children_) {
    os << pad << "(" << it.key << "): ";
    it.value->pretty_print(os, indent + 2);
    os << "\n";
  }
  os << std::string(static_cast<size_t>(indent), ' ') << ")";
}

std::ostream& operator<<(std::ostream& os, const Module& m) {
  m.pretty_print(os, 0);
  return os;
}

}  // namespace kiln::nn
