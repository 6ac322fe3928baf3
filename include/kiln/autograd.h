// Autograd public API: grad-mode guards, graph nodes, custom functions, anomaly mode, the
// functional API (grad, vjp, jvp, jacobian, hessian, hvp, gradcheck) and checkpointing.
// PyTorch's semantics (DESIGN.md §5); the engine lives in src/autograd/.
#pragma once

#include <any>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include "kiln/tensor.h"

namespace kiln {

// ---- grad mode (thread-local, as in PyTorch) ----
bool is_grad_enabled();
void set_grad_enabled(bool enabled);

// Sets grad mode for its lifetime and restores the previous mode.
class AutoGradMode {
 public:
  explicit AutoGradMode(bool enabled);
  ~AutoGradMode();
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool prev_;
};
// torch.no_grad(): ops inside record no graph.
class NoGradGuard : public AutoGradMode {
 public:
  NoGradGuard() : AutoGradMode(false) {}
};
// torch.enable_grad(): re-enables recording inside a no_grad region.
class EnableGradGuard : public AutoGradMode {
 public:
  EnableGradGuard() : AutoGradMode(true) {}
};
// torch.inference_mode(): no recording, and tensors created inside are inference tensors
// (is_inference()); using them in a recorded op later raises an error.
class InferenceMode {
 public:
  explicit InferenceMode(bool enabled = true);
  ~InferenceMode();
  InferenceMode(const InferenceMode&) = delete;
  InferenceMode& operator=(const InferenceMode&) = delete;
  static bool is_enabled();

 private:
  bool prev_grad_, prev_inference_;
};

// ---- graph nodes ----
namespace detail {
struct NodeState;  // engine bookkeeping (src/autograd/node_state.h)
}

// A node of the backward graph (kiln::autograd::Node): maps the gradients w.r.t. the outputs
// of one forward call to the gradients w.r.t. its inputs. Nodes are made by the op layer and
// by autograd::Function; users read them through Tensor::grad_fn().
class AutogradNode : public std::enable_shared_from_this<AutogradNode> {
 public:
  struct Edge {
    std::shared_ptr<AutogradNode> fn;  // null: the input needs no gradient
    uint32_t input_nr = 0;             // which gradient slot of fn
  };

  AutogradNode();
  virtual ~AutogradNode();
  AutogradNode(const AutogradNode&) = delete;
  AutogradNode& operator=(const AutogradNode&) = delete;

  // PyTorch-style name of the node ("MulBackward0", "AccumulateGrad", ...).
  virtual std::string name() const = 0;
  // Gradients w.r.t. the forward outputs (undefined = zero) -> gradients w.r.t. the inputs, one
  // per next edge.
  virtual std::vector<Tensor> apply(std::vector<Tensor>&& grads) = 0;
  // Frees saved tensors (after a backward without retain_graph).
  virtual void release_variables() {}

  const std::vector<Edge>& next_functions() const;
  uint64_t sequence_nr() const;
  detail::NodeState& state() const { return *state_; }

 private:
  std::unique_ptr<detail::NodeState> state_;
};

namespace autograd {

using Node = AutogradNode;
using variable_list = std::vector<Tensor>;

// torch.autograd.backward: accumulates d(sum tensors_i * grad_tensors_i)/d(leaf) into the
// .grad of the leaves (or only of `inputs`).
void backward(const variable_list& tensors, const variable_list& grad_tensors = {},
              std::optional<bool> retain_graph = {}, bool create_graph = false,
              const variable_list& inputs = {});
// torch.autograd.grad: returns the gradients of `outputs` w.r.t. `inputs` without touching
// .grad. allow_unused=false raises for an input the outputs do not depend on; with true its
// gradient is an undefined Tensor.
variable_list grad(const variable_list& outputs, const variable_list& inputs,
                   const variable_list& grad_outputs = {}, std::optional<bool> retain_graph = {},
                   bool create_graph = false, bool allow_unused = false);

// ---- custom functions ----
// The context handed to a custom Function's forward and backward (libtorch's names).
class AutogradContext {
 public:
  // Tensors backward() reads; modifying one in place after saving raises at backward.
  void save_for_backward(variable_list to_save);
  variable_list get_saved_variables() const;
  variable_list saved_tensors() const { return get_saved_variables(); }
  // Inputs modified in place by forward (they must be returned as outputs).
  void mark_dirty(const variable_list& inputs);
  // Outputs that get no gradient (integer outputs are never differentiable).
  void mark_non_differentiable(const variable_list& outputs);
  // When true (default), undefined output gradients reach backward as zeros.
  void set_materialize_grads(bool value) { materialize_grads_ = value; }
  // Whether input i (counting the Tensor arguments of apply) needs a gradient.
  bool needs_input_grad(size_t i) const;
  // Anything else backward needs (numbers, shapes, ...).
  std::map<std::string, std::any> saved_data;

  struct Impl;
  std::shared_ptr<Impl> impl_;  // saved tensors, dirty/non-differentiable sets
  bool materialize_grads_ = true;
  AutogradContext();
};

namespace detail {
// Type-erased Function::apply: runs forward without recording, then wires the outputs to a node
// whose backward calls `backward` (user-facing: Function<T>::apply).
void function_apply(const char* type_name, const variable_list& inputs,
                    const std::shared_ptr<AutogradContext>& ctx,
                    const std::function<variable_list()>& forward,
                    std::function<variable_list(AutogradContext*, variable_list)> backward,
                    variable_list& outputs);
inline void collect_tensors(variable_list&) {}
template <class A, class... R>
void collect_tensors(variable_list& out, const A& a, const R&... rest) {
  if constexpr (std::is_same_v<std::decay_t<A>, Tensor>) {
    out.push_back(a);
  } else if constexpr (std::is_same_v<std::decay_t<A>, variable_list>) {
    out.insert(out.end(), a.begin(), a.end());
  }
  collect_tensors(out, rest...);
}
}  // namespace detail

// A custom differentiable function (libtorch's torch::autograd::Function):
//   struct Square : kiln::autograd::Function<Square> {
//     static Tensor forward(AutogradContext* ctx, const Tensor& x) {
//       ctx->save_for_backward({x}); return x * x; }
//     static variable_list backward(AutogradContext* ctx, variable_list g) {
//       return {2 * ctx->get_saved_variables()[0] * g[0]}; }
//   };
//   Tensor y = Square::apply(x);
// forward returns a Tensor or a variable_list; backward returns one gradient per Tensor argument
// of forward (an undefined Tensor for none). Forward runs without recording.
template <class T>
struct Function {
  template <class... Args>
  static auto apply(Args&&... args) {
    variable_list inputs;
    detail::collect_tensors(inputs, args...);
    auto ctx = std::make_shared<AutogradContext>();
    using R = decltype(T::forward(ctx.get(), std::forward<Args>(args)...));
    static_assert(std::is_same_v<R, Tensor> || std::is_same_v<R, variable_list>,
                  "Function::forward must return a Tensor or a variable_list");
    variable_list outs;
    detail::function_apply(
        typeid(T).name(), inputs, ctx,
        [&]() -> variable_list {
          if constexpr (std::is_same_v<R, Tensor>) {
            return {T::forward(ctx.get(), std::forward<Args>(args)...)};
          } else {
            return T::forward(ctx.get(), std::forward<Args>(args)...);
          }
        },
        [](AutogradContext* c, variable_list g) { return T::backward(c, std::move(g)); }, outs);
    if constexpr (std::is_same_v<R, Tensor>) {
      return outs[0];
    } else {
      return outs;
    }
  }
};

// ---- anomaly mode ----
// While enabled, each node remembers the op that created it, and a backward that produces NaN
// raises an error naming that forward op (torch.autograd.set_detect_anomaly).
class AnomalyMode {
 public:
  static bool is_enabled();
  static bool should_check_nan();
  static void set_enabled(bool enabled, bool check_nan = true);
};
// Enables anomaly mode for its lifetime (torch.autograd.detect_anomaly()).
class DetectAnomalyGuard {
 public:
  explicit DetectAnomalyGuard(bool check_nan = true);
  ~DetectAnomalyGuard();
  DetectAnomalyGuard(const DetectAnomalyGuard&) = delete;
  DetectAnomalyGuard& operator=(const DetectAnomalyGuard&) = delete;

 private:
  bool prev_, prev_nan_;
};
using detect_anomaly = DetectAnomalyGuard;

// ---- functional API (torch.autograd.functional) ----
// Functions of several tensors returning one tensor.
using Func = std::function<Tensor(const variable_list&)>;
// Functions of several tensors returning several tensors (gradcheck).
using MultiFunc = std::function<variable_list(const variable_list&)>;

// (f(inputs), v^T J): v defaults to 1 for a one-element output.
std::pair<Tensor, variable_list> vjp(const Func& f, const variable_list& inputs,
                                     const Tensor& v = {}, bool create_graph = false);
// (f(inputs), J v) by the double-vjp trick; v defaults to 1 for one-element inputs.
std::pair<Tensor, Tensor> jvp(const Func& f, const variable_list& inputs,
                              const variable_list& v = {}, bool create_graph = false);
// One Jacobian per input, of shape output.sizes() + input.sizes().
variable_list jacobian(const Func& f, const variable_list& inputs, bool create_graph = false);
Tensor jacobian(const std::function<Tensor(const Tensor&)>& f, const Tensor& input,
                bool create_graph = false);
// Hessian of a one-element function: h[i][j] has shape inputs[i].sizes() + inputs[j].sizes().
std::vector<variable_list> hessian(const Func& f, const variable_list& inputs,
                                   bool create_graph = false);
Tensor hessian(const std::function<Tensor(const Tensor&)>& f, const Tensor& input,
               bool create_graph = false);
// (f(inputs), H v) of a one-element function.
std::pair<Tensor, variable_list> hvp(const Func& f, const variable_list& inputs,
                                     const variable_list& v, bool create_graph = false);

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-3;
  bool raise_exception = true;  // false: return false instead of throwing kiln::Error
  bool check_undefined_grad = true;
};
// Compares analytical gradients (backward) with central finite differences, in float64 /
// complex128 inputs (others are rejected). Complex inputs and outputs follow PyTorch's
// conjugate Wirtinger convention. Returns true when they match.
bool gradcheck(const MultiFunc& f, const variable_list& inputs, const GradcheckOptions& o = {});
bool gradcheck(const Func& f, const variable_list& inputs, const GradcheckOptions& o = {});
// gradcheck of the backward itself (second derivatives); grad_outputs are random if empty.
bool gradgradcheck(const MultiFunc& f, const variable_list& inputs,
                   const variable_list& grad_outputs = {}, const GradcheckOptions& o = {});
bool gradgradcheck(const Func& f, const variable_list& inputs,
                   const variable_list& grad_outputs = {}, const GradcheckOptions& o = {});

}  // namespace autograd

namespace utils {
// Activation checkpointing (torch.utils.checkpoint, use_reentrant=False semantics for the
// result): runs fn without saving its intermediates and recomputes them during backward. With
// preserve_rng_state (the default, as PyTorch) the recomputation replays the forward's random
// numbers (the cpu generator and those of the inputs' cuda devices), so dropout masks match.
Tensor checkpoint(const std::function<Tensor(const std::vector<Tensor>&)>& fn,
                  const std::vector<Tensor>& inputs, bool preserve_rng_state = true);
std::vector<Tensor> checkpoint(
    const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
    const std::vector<Tensor>& inputs, bool preserve_rng_state = true);
}  // namespace utils

}  // namespace kiln
