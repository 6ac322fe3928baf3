// Containers: Sequential (chains modules whose forward takes one tensor), ModuleList, ModuleDict,
// and Functional (a module wrapping a function, for use inside Sequential).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kiln/nn/module.h"

namespace kiln::nn {

// A module around a Tensor -> Tensor function (libtorch's nn::Functional).
class FunctionalImpl : public Module {
 public:
  explicit FunctionalImpl(std::function<Tensor(const Tensor&)> fn, std::string name = "Functional")
      : Module(std::move(name)), fn_(std::move(fn)) {}
  Tensor forward(const Tensor& x) { return fn_(x); }

 private:
  std::function<Tensor(const Tensor&)> fn_;
};
KILN_MODULE(Functional);

// Runs its modules in order: forward(x) = m_n(...m_1(x)). Children are named "0", "1", ...
// unless added with a name.
class SequentialImpl : public Module {
 public:
  SequentialImpl() : Module("Sequential") {}
  template <class... Ms>
  requires(sizeof...(Ms) > 0) explicit SequentialImpl(Ms&&... modules) : Module("Sequential") {
    (push_back(std::forward<Ms>(modules)), ...);
  }

  template <class M>
  void push_back(std::string name, std::shared_ptr<M> m) {
    static_assert(std::is_base_of_v<Module, M>, "Sequential holds modules");
    register_module(name, m);
    M* raw = m.get();
    fns_.push_back([raw](const Tensor& x) -> Tensor { return raw->forward(x); });
    modules_.push_back(std::move(m));
  }
  template <class M>
  void push_back(std::shared_ptr<M> m) {
    push_back(std::to_string(modules_.size()), std::move(m));
  }
  template <class H, class = typename H::ContainedType>
  void push_back(std::string name, const H& holder) {
    push_back(std::move(name), holder.ptr());
  }
  template <class H, class = typename H::ContainedType>
  void push_back(const H& holder) {
    push_back(holder.ptr());
  }
  // A plain function becomes a Functional module.
  void push_back(std::function<Tensor(const Tensor&)> fn) {
    push_back(std::make_shared<FunctionalImpl>(std::move(fn)));
  }

  Tensor forward(const Tensor& x) {
    Tensor y = x;
    for (auto& f : fns_) y = f(y);
    return y;
  }

  size_t size() const { return modules_.size(); }
  bool is_empty() const { return modules_.empty(); }
  const std::shared_ptr<Module>& operator[](size_t i) const;
  template <class M>
  std::shared_ptr<M> ptr(size_t i) const {
    return std::dynamic_pointer_cast<M>((*this)[i]);
  }
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

 private:
  std::vector<std::shared_ptr<Module>> modules_;
  std::vector<std::function<Tensor(const Tensor&)>> fns_;
};
KILN_MODULE(Sequential);

// Holds submodules in a list (named "0", "1", ...); it has no forward.
class ModuleListImpl : public Module {
 public:
  ModuleListImpl() : Module("ModuleList") {}
  template <class... Ms>
  requires(sizeof...(Ms) > 0) explicit ModuleListImpl(Ms&&... modules) : Module("ModuleList") {
    (push_back(std::forward<Ms>(modules)), ...);
  }
  template <class M>
  void push_back(std::shared_ptr<M> m) {
    static_assert(std::is_base_of_v<Module, M>, "ModuleList holds modules");
    register_module(std::to_string(modules_.size()), m);
    modules_.push_back(std::move(m));
  }
  template <class H, class = typename H::ContainedType>
  void push_back(const H& holder) {
    push_back(holder.ptr());
  }
  size_t size() const { return modules_.size(); }
  bool is_empty() const { return modules_.empty(); }
  // Negative i counts from the end, as in Python.
  const std::shared_ptr<Module>& operator[](int64_t i) const;
  template <class M>
  std::shared_ptr<M> ptr(int64_t i) const {
    return std::dynamic_pointer_cast<M>((*this)[i]);
  }
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};
KILN_MODULE(ModuleList);

// Holds submodules by name, in insertion order; it has no forward.
class ModuleDictImpl : public Module {
 public:
  ModuleDictImpl() : Module("ModuleDict") {}
  template <class M>
  void insert(const std::string& key, std::shared_ptr<M> m) {
    static_assert(std::is_base_of_v<Module, M>, "ModuleDict holds modules");
    register_module(key, m);
    modules_.insert(key, std::static_pointer_cast<Module>(std::move(m)));
  }
  template <class H, class = typename H::ContainedType>
  void insert(const std::string& key, const H& holder) {
    insert(key, holder.ptr());
  }
  bool contains(const std::string& key) const { return modules_.contains(key); }
  const std::shared_ptr<Module>& operator[](const std::string& key) const;
  template <class M>
  std::shared_ptr<M> ptr(const std::string& key) const {
    return std::dynamic_pointer_cast<M>((*this)[key]);
  }
  std::vector<std::string> keys() const { return modules_.keys(); }
  size_t size() const { return modules_.size(); }
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

 private:
  OrderedDict<std::shared_ptr<Module>> modules_;
};
KILN_MODULE(ModuleDict);

}  // namespace kiln::nn
