// Engine-private autograd types: NodeState (edges, metadata, hooks of a node), SavedTensor (the
// version-checked saved value), the op node, AccumulateGrad, and helpers shared by the engine.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "autograd/meta.h"
#include "kiln/autograd.h"
#include "ops/op.h"

namespace kiln::detail {

// What a gradient for one tensor must look like (shape, dtype, device).
struct TensorMeta {
  DimVector sizes;
  DType dtype = DType::Float32;
  Device device;
  bool defined = false;
  static TensorMeta of(const Tensor& t) {
    TensorMeta m;
    if (!t.defined()) return m;
    m.sizes = DimVector(t.sizes());
    m.dtype = t.dtype();
    m.device = t.device();
    m.defined = true;
    return m;
  }
  Tensor zeros() const;
};

struct HookEntry {
  unsigned handle;
  uint32_t output_nr;
  std::shared_ptr<Tensor::GradHook> hook;
};

struct NodeState {
  std::vector<AutogradNode::Edge> next;  // one per forward input
  std::vector<TensorMeta> in_meta;       // forward inputs: gradients are made to match these
  std::vector<TensorMeta> out_meta;      // forward outputs: zeros stand in for missing grads
  uint64_t seq = 0;
  std::vector<HookEntry> pre_hooks;  // tensor hooks of non-leaf outputs
  std::vector<std::pair<uint32_t, std::shared_ptr<Tensor>>> retained;  // retain_grad cells
  Tensor leaf;                                                         // AccumulateGrad only
  std::string anomaly_op;  // the forward op (anomaly mode)
};

uint64_t next_sequence_nr();
bool grad_mode_enabled();       // thread-local GradMode
bool inference_mode_enabled();  // thread-local InferenceMode
unsigned next_hook_handle();

// A tensor saved for backward: the value plus the storage version at save time. Outputs of the
// node itself are kept without autograd metadata (no reference cycle) and re-wired to the node
// on unpack.
class SavedTensor {
 public:
  SavedTensor() = default;
  SavedTensor(const Tensor& t, bool is_output);
  // `node` is the owner (for outputs); `op` names the op in the version-check error.
  Tensor unpack(const std::shared_ptr<AutogradNode>& node, uint32_t output_nr,
                const char* op) const;
  void reset() {
    data_ = Tensor();
    released_ = true;
  }
  bool defined() const { return data_.defined() || released_; }

 private:
  Tensor data_;
  uint32_t version_ = 0;
  bool is_output_ = false;
  bool released_ = false;
};

// The edge a gradient for t flows along: (grad_fn, output_nr), the leaf's AccumulateGrad, or none.
AutogradNode::Edge gradient_edge(const Tensor& t);
// t's grad_fn after regenerating a stale view node (see Note [View history]).
const std::shared_ptr<AutogradNode>& grad_fn_of(const Tensor& t);
// Attaches node as the history of t (output output_nr); requires_grad becomes true.
void set_history(const Tensor& t, const std::shared_ptr<AutogradNode>& node, uint32_t output_nr);
// Adds the standard metadata/edges for `inputs` to a fresh node.
void add_input_edges(AutogradNode& node, const std::vector<Tensor>& inputs);
bool is_differentiable_dtype(DType d);

// Node of one primitive op: calls OpDef::vjp.
class OpNode final : public AutogradNode {
 public:
  OpNode(OpId op, const OpAttrs& attrs, DType compute)
      : op_(op), attrs_(attrs), compute_(compute) {}
  std::string name() const override;
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  void release_variables() override {
    for (auto& s : saved_in_) s.reset();
    for (auto& s : saved_out_) s.reset();
  }
  OpId op_;
  OpAttrs attrs_;
  DType compute_;
  std::vector<SavedTensor> saved_in_, saved_out_;  // sized n_in / n_out; unsaved stay empty
};

// Node built from a function (views, internal helpers): backward(grads) -> input grads.
class LambdaNode final : public AutogradNode {
 public:
  using Fn = std::function<std::vector<Tensor>(std::vector<Tensor>&)>;
  LambdaNode(std::string name, Fn fn) : name_(std::move(name)), fn_(std::move(fn)) {}
  std::string name() const override { return name_; }
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override { return fn_(grads); }
  void release_variables() override {}

 private:
  std::string name_;
  Fn fn_;
};

// Leaf sink: accumulates into the leaf's .grad and runs its post-accumulate hooks.
class AccumulateGrad final : public AutogradNode {
 public:
  explicit AccumulateGrad(const Tensor& leaf);
  std::string name() const override { return "AccumulateGrad"; }
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
};
// Accumulates g into t's .grad (leaf or retained cell), as AccumulateGrad does.
void accumulate_grad(const Tensor& t, const Tensor& g);

// The engine: runs the graph from roots. When `capture` is non-empty, returns the gradients
// flowing into those edges (and, with accumulate=false, leaves .grad untouched).
std::vector<Tensor> run_backward(const std::vector<Tensor>& roots,
                                 const std::vector<Tensor>& root_grads, bool keep_graph,
                                 bool create_graph, const std::vector<Tensor>& capture,
                                 bool accumulate, bool allow_unused);

// Sums g down to `sizes` (reverse of broadcasting); g unchanged when the shape already matches.
Tensor sum_to(const Tensor& g, IntArrayRef sizes);

// Registers every vjp into the OpDef table (idempotent; src/autograd/vjp_registry.cpp).
void register_vjps();

}  // namespace kiln::detail
