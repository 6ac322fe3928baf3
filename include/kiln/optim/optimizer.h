// kiln::optim::Optimizer (torch.optim.Optimizer): parameter groups with per-group options,
// per-parameter state, zero_grad, step(closure), state_dict/load_state_dict.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/tensor.h"

namespace kiln::optim {

// Note [Optimizer options are named numbers]: every hyper-parameter of a group is a number under
// PyTorch's key ("lr", "momentum", "weight_decay", "beta1", "beta2", "amsgrad" as 0/1, ...).
// Typed subclasses (SGDOptions, AdamOptions, ...) only provide defaults and fluent setters, so
// schedulers, state_dict and per-group overrides all work on one representation. PyTorch's
// `betas` tuple is stored as "beta1" and "beta2".
class OptimizerOptions {
 public:
  OptimizerOptions() = default;
  // Throws kiln::Error naming the key when absent.
  double get(const std::string& key) const;
  bool has(const std::string& key) const { return values_.count(key) != 0; }
  OptimizerOptions& set(const std::string& key, double value) {
    values_[key] = value;
    return *this;
  }
  double lr() const { return get("lr"); }
  OptimizerOptions& lr(double v) { return set("lr", v); }
  const std::map<std::string, double>& values() const { return values_; }

 protected:
  std::map<std::string, double> values_;
};

// A group of parameters with its own options. Keys the group does not set come from the
// optimizer's defaults when the group is added.
struct ParamGroup {
  ParamGroup() = default;
  ParamGroup(std::vector<Tensor> params) : params(std::move(params)) {}  // NOLINT
  ParamGroup(std::vector<Tensor> params, OptimizerOptions options)
      : params(std::move(params)), options(std::move(options)) {}

  std::vector<Tensor> params;
  OptimizerOptions options;

  double lr() const { return options.lr(); }
  void set_lr(double v) { options.lr(v); }
};

// Per-parameter state: the step count and named buffers ("exp_avg", "momentum_buffer", ...).
struct ParamState {
  int64_t step = 0;
  std::map<std::string, Tensor> buffers;
  bool has(const std::string& k) const { return buffers.count(k) != 0; }
  Tensor& operator[](const std::string& k) { return buffers[k]; }
};

// PyTorch's optimizer state dict: state by parameter index (counting over all groups in
// order), and each group's options with the indices of its parameters.
struct OptimizerStateDict {
  struct Group {
    std::map<std::string, double> options;
    std::vector<int64_t> params;
  };
  std::map<int64_t, ParamState> state;
  std::vector<Group> param_groups;
};

// Note [Fused optimizer steps]
// ----------------------------
// SGD, Adam and AdamW take two more options (0/1, default 0):
// - fused: each group's update runs as multi-tensor kernels (PyTorch's fused=True): one launch
//   updates many parameters, with their state, in one pass over memory; hyper-parameters and
//   the bias corrections of each parameter's own step count are computed on the host in double.
//   Every parameter with a gradient must be on one device (a GPU, or the CPU where the same
//   update runs as plain loops), with dtype float16, bfloat16, float32 or float64 and a gradient
//   of the same dtype; anything else is a kiln::Error before anything changes. Results equal the
//   unfused step up to rounding (the fused step rounds once per element, not once per op).
// - master_weights: a float16/bfloat16 parameter gets a float32 copy in its state
//   ("master_param", saved by state_dict); the update (and the optimizer's moment buffers, also
//   float32) works on that copy and writes its rounding to the parameter, so small updates are
//   not lost to the 16-bit rounding. The copy is authoritative: a value written into the
//   parameter outside the optimizer is replaced at its next step (load the optimizer state, or
//   make a new optimizer, after changing weights). Other dtypes ignore the option.
class Optimizer {
 public:
  using Closure = std::function<Tensor()>;

  Optimizer(std::vector<ParamGroup> groups, OptimizerOptions defaults, std::string name);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  const std::string& name() const { return name_; }
  // Adds a group (its options are completed from the defaults; unknown keys are an error; a
  // parameter may belong to one group only).
  void add_param_group(ParamGroup group);
  std::vector<ParamGroup>& param_groups() { return groups_; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  const OptimizerOptions& defaults() const { return defaults_; }

  // Gradients of all parameters: reset to undefined (set_to_none) or zeroed in place.
  void zero_grad(bool set_to_none = true);
  // One update of every parameter that has a gradient. With a closure, it is called (with grad
  // mode enabled) to recompute the loss first and its value is returned; else an undefined
  // tensor. Updates run in place under no-grad.
  virtual Tensor step(const Closure& closure = nullptr);

  // For amp::GradScaler (PyTorch's _step_supports_amp_scaling): true when step() can divide the
  // gradients by the loss scale itself (every group fused). step_with_grad_scale(inv_scale)
  // then runs step() with each gradient multiplied by inv_scale inside the update, and the
  // unscaled gradients written back, as PyTorch's fused steps do.
  virtual bool supports_grad_scale() const { return false; }
  void step_with_grad_scale(double inv_scale);

  // The state of one parameter (created empty on first use).
  ParamState& state(const Tensor& param);
  bool has_state(const Tensor& param) const;

  OptimizerStateDict state_dict() const;
  // Restores options and state; the group layout (number of groups and of parameters in each)
  // must match, and state tensors are copied to each parameter's device and dtype (floating
  // ones only).
  void load_state_dict(const OptimizerStateDict& dict);

 protected:
  // The update of one group; called by step() under no-grad.
  virtual void step_group(ParamGroup& group) = 0;
  // 1 except inside step_with_grad_scale (read by fused steps only).
  double inv_grad_scale_ = 1.0;

 private:
  std::string name_;
  OptimizerOptions defaults_;
  std::vector<ParamGroup> groups_;
  std::unordered_map<const detail::TensorImpl*, ParamState> state_;
};

}  // namespace kiln::optim
