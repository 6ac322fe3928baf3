// The backward engine: dependency counting over the reachable graph, a ready queue ordered by
// sequence number, gradient buffers, hooks, captures for autograd::grad, anomaly checks.
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "amp/autocast_state.h"
#include "autograd/node_state.h"
#include "kiln/ops.h"
#include "ops/tensor_factory.h"

namespace kiln::detail {

bool dense_layout(const Tensor& t);  // node.cpp: non-overlapping and dense strides

namespace {

// Note [Gradient casts in the leaf's layout]: a gradient cast to its leaf's dtype (autocast's
// float32 master weights take a bfloat16 gradient, often transposed: a linear's dW arrives as
// the .t() of the GEMM's output) is written straight in the leaf's layout, one cast-and-transpose
// kernel, so that AccumulateGrad can take the result as the leaf's .grad without another copy
// (and sums of such gradients, the tied embedding's, add tensors of one layout). Without grad
// mode only: with create_graph the cast stays a recorded op.
Tensor cast_into_leaf_layout(const AutogradNode::Edge& e, const Tensor& g, DType dtype) {
  if (grad_mode_enabled() || !e.fn) return {};
  const Tensor& leaf = e.fn->state().leaf;
  if (!leaf.defined() || leaf.dtype() != dtype || leaf.device() != g.device() ||
      leaf.sizes() != g.sizes() || !dense_layout(leaf))
    return {};
  Tensor out = empty_strided_impl(leaf.sizes(), leaf.strides(), dtype, leaf.device());
  out.copy_(g);
  return out;
}

}  // namespace

// Makes each gradient match its input's metadata: sum broadcast dims, real part for a real
// input, cast to the input's dtype. A shape that cannot be matched is an error naming the node.
std::vector<Tensor> validate_outputs(AutogradNode& node, std::vector<Tensor>&& grads) {
  const NodeState& s = node.state();
  KILN_CHECK(grads.size() == s.next.size(), "[autograd] function ", node.name(), " returned ",
             grads.size(), " gradients, but expected ", s.next.size());
  for (size_t i = 0; i < grads.size(); ++i) {
    Tensor& g = grads[i];
    if (!g.defined() || !s.next[i].fn) continue;
    const TensorMeta& m = s.in_meta[i];
    if (g.sizes() != IntArrayRef(m.sizes)) {
      bool ok = g.dim() >= static_cast<int64_t>(m.sizes.size());
      if (ok) {
        try {
          g = sum_to(g, m.sizes);
        } catch (const Error&) {
          ok = false;
        }
      }
      KILN_CHECK(ok, "[autograd] function ", node.name(), " returned an invalid gradient at index ",
                 i, " - got ", g.sizes(), " but expected shape compatible with ",
                 IntArrayRef(m.sizes));
    }
    if (g.is_complex() && !is_complex(m.dtype)) g = g.real();
    if (g.dtype() != m.dtype) {
      Tensor cast = cast_into_leaf_layout(s.next[i], g, m.dtype);
      g = cast.defined() ? std::move(cast) : g.to(m.dtype);
    }
    if (g.device() != m.device) g = g.to(m.device);
  }
  return std::move(grads);
}

namespace {

struct ReadyItem {
  uint64_t seq;
  AutogradNode* node;
  bool operator<(const ReadyItem& o) const { return seq < o.seq; }
};

bool has_nan(const Tensor& t) {
  if (!t.defined() || !(t.is_floating_point() || t.is_complex())) return false;
  NoGradGuard ng;
  return kiln::isnan(t).any().item<bool>();
}

Tensor call_hooks(const std::vector<std::shared_ptr<Tensor::GradHook>>& hooks, Tensor g) {
  for (const auto& h : hooks) {
    Tensor r = (*h)(g);
    if (r.defined()) g = r;
  }
  return g;
}

}  // namespace

std::vector<Tensor> run_backward(const std::vector<Tensor>& roots,
                                 const std::vector<Tensor>& root_grads, bool keep_graph,
                                 bool create_graph, const std::vector<Tensor>& capture,
                                 bool accumulate, bool allow_unused) {
  KILN_CHECK(root_grads.size() == roots.size(), "[backward] got ", roots.size(), " tensors and ",
             root_grads.size(), " gradients");
  detail::AutocastSuspend no_autocast;  // the gradient pass runs in the forward's dtypes
  std::vector<AutogradNode::Edge> root_edges;
  std::vector<std::shared_ptr<AutogradNode>> keep_alive;
  for (size_t i = 0; i < roots.size(); ++i) {
    AutogradNode::Edge e = gradient_edge(roots[i]);
    KILN_CHECK(e.fn != nullptr, "[backward] element ", i,
               " of tensors does not require grad and does not have a grad_fn");
    root_edges.push_back(e);
    keep_alive.push_back(e.fn);
  }
  // Capture targets (autograd::grad / backward(inputs=...)).
  std::unordered_map<AutogradNode*, std::vector<std::pair<uint32_t, size_t>>> captures;
  std::vector<Tensor> captured(capture.size());
  for (size_t i = 0; i < capture.size(); ++i) {
    KILN_CHECK(capture[i].defined() && capture[i].requires_grad(), "[autograd.grad] input ", i,
               " does not require grad");
    AutogradNode::Edge e = gradient_edge(capture[i]);
    keep_alive.push_back(e.fn);
    captures[e.fn.get()].emplace_back(e.input_nr, i);
  }
  // Dependency counts over the reachable graph; `needed` prunes to the captured nodes.
  std::unordered_map<AutogradNode*, int> deps;
  std::vector<AutogradNode*> order;  // DFS discovery order
  {
    std::unordered_set<AutogradNode*> seen;
    std::vector<AutogradNode*> stack;
    for (auto& e : root_edges)
      if (seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
    while (!stack.empty()) {
      AutogradNode* n = stack.back();
      stack.pop_back();
      order.push_back(n);
      for (const auto& e : n->next_functions()) {
        if (!e.fn) continue;
        ++deps[e.fn.get()];
        if (seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
      }
    }
  }
  // With captures, only nodes that lead to a captured node run (`needed`).
  std::unordered_set<AutogradNode*> needed;
  const bool prune = !capture.empty();
  if (prune) {
    bool changed = true;
    while (changed) {
      changed = false;
      for (AutogradNode* n : order) {
        if (needed.count(n)) continue;
        for (const auto& e : n->next_functions())
          if (e.fn && (needed.count(e.fn.get()) || captures.count(e.fn.get()))) {
            needed.insert(n);
            changed = true;
            break;
          }
      }
    }
  }
  std::unordered_map<AutogradNode*, std::vector<Tensor>> buffers;
  auto add_to_buffer = [&](AutogradNode* n, uint32_t slot, const Tensor& g) {
    auto& buf = buffers[n];
    if (buf.size() < n->state().out_meta.size()) buf.resize(n->state().out_meta.size());
    if (buf.size() <= slot) buf.resize(slot + 1);
    if (!buf[slot].defined())
      buf[slot] = g;
    else
      buf[slot] = buf[slot] + g;
  };
  AutoGradMode mode(create_graph);
  for (size_t i = 0; i < roots.size(); ++i) {
    Tensor g = root_grads[i];
    if (!g.defined()) {
      KILN_CHECK(roots[i].numel() == 1,
                 "[backward] grad can be implicitly created only for scalar "
                 "outputs (got a tensor of shape ",
                 roots[i].sizes(), ")");
      KILN_CHECK(!roots[i].is_complex(),
                 "[backward] grad can be implicitly created only for real scalar outputs");
      NoGradGuard ng;
      g = kiln::ones_like(roots[i]);
    } else {
      KILN_CHECK(g.sizes() == roots[i].sizes(), "[backward] mismatch in shape: grad_output[", i,
                 "] has a shape of ", g.sizes(), " and output[", i, "] has a shape of ",
                 roots[i].sizes());
    }
    add_to_buffer(root_edges[i].fn.get(), root_edges[i].input_nr, g);
  }
  std::priority_queue<ReadyItem> ready;
  {
    std::unordered_set<AutogradNode*> queued;
    for (auto& e : root_edges)
      if (deps[e.fn.get()] == 0 && queued.insert(e.fn.get()).second)
        ready.push({e.fn->sequence_nr(), e.fn.get()});
  }
  const bool anomaly = autograd::AnomalyMode::is_enabled();
  while (!ready.empty()) {
    AutogradNode* n = ready.top().node;
    ready.pop();
    NodeState& s = n->state();
    std::vector<Tensor> inputs = std::move(buffers[n]);
    buffers.erase(n);
    inputs.resize(std::max(inputs.size(), s.out_meta.size()));
    // Tensor hooks: non-leaf outputs (pre-hooks by output), leaves (the leaf's own hooks).
    for (const HookEntry& h : std::vector<HookEntry>(s.pre_hooks))
      if (h.output_nr < inputs.size() && inputs[h.output_nr].defined()) {
        Tensor r = (*h.hook)(inputs[h.output_nr]);
        if (r.defined()) inputs[h.output_nr] = r;
      }
    if (s.leaf.defined() && !inputs.empty() && inputs[0].defined())
      if (AutogradMeta* lm = meta_of(s.leaf)) {
        std::vector<std::shared_ptr<Tensor::GradHook>> hs;
        for (auto& [hd, h] : lm->hooks) hs.push_back(h);
        inputs[0] = call_hooks(hs, inputs[0]);
      }
    for (auto& [slot, cell] : s.retained)
      if (slot < inputs.size() && inputs[slot].defined()) {
        NoGradGuard ng;
        *cell = cell->defined() ? *cell + inputs[slot] : inputs[slot].clone();
      }
    auto cap = captures.find(n);
    if (cap != captures.end())
      for (auto& [slot, idx] : cap->second)
        if (slot < inputs.size()) captured[idx] = inputs[slot];
    bool execute = !prune || needed.count(n);
    if (s.leaf.defined() && !accumulate) execute = false;
    std::vector<Tensor> outputs;
    if (execute) {
      bool any_defined = false;
      for (const Tensor& t : inputs) any_defined |= t.defined();
      if (any_defined) {
        try {
          outputs = validate_outputs(*n, n->apply(std::move(inputs)));
        } catch (const Error& err) {
          if (anomaly && !s.anomaly_op.empty())
            KILN_ERROR(err.what(), "\n[detect_anomaly] the error occurred in the backward of ",
                       n->name(), ", created by the forward op '", s.anomaly_op, "'");
          throw;
        }
        if (anomaly && autograd::AnomalyMode::should_check_nan())
          for (size_t i = 0; i < outputs.size(); ++i)
            KILN_CHECK(!has_nan(outputs[i]), "[detect_anomaly] Function '", n->name(),
                       "' returned nan values in its ", i,
                       "th output; it was created by the "
                       "forward op '",
                       (s.anomaly_op.empty() ? n->name() : s.anomaly_op), "'");
      }
      if (!keep_graph) n->release_variables();
    }
    const auto& next = n->next_functions();
    for (size_t i = 0; i < next.size(); ++i) {
      AutogradNode* c = next[i].fn.get();
      if (c == nullptr) continue;
      if (i < outputs.size() && outputs[i].defined() &&
          (!prune || needed.count(c) || captures.count(c)))
        add_to_buffer(c, next[i].input_nr, outputs[i]);
      if (--deps[c] == 0) ready.push({c->sequence_nr(), c});
    }
  }
  for (size_t i = 0; i < capture.size(); ++i)
    KILN_CHECK(allow_unused || captured[i].defined(),
               "[autograd.grad] One of the differentiated "
               "Tensors appears to not have been used in the graph. Set allow_unused=true if "
               "this is the desired behavior.");
  return captured;
}

}  // namespace kiln::detail

namespace kiln {

namespace autograd {

void backward(const variable_list& tensors, const variable_list& grad_tensors,
              std::optional<bool> retain_graph, bool create_graph, const variable_list& inputs) {
  variable_list grads = grad_tensors;
  if (grads.empty()) grads.resize(tensors.size());
  bool keep = retain_graph.value_or(create_graph);
  if (inputs.empty()) {
    kiln::detail::run_backward(tensors, grads, keep, create_graph, {}, true, true);
    return;
  }
  variable_list got =
      kiln::detail::run_backward(tensors, grads, keep, create_graph, inputs, false, true);
  AutoGradMode mode(create_graph);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!got[i].defined()) continue;
    const Tensor& t = inputs[i];
    if (t.is_leaf()) {
      kiln::detail::accumulate_grad(t, got[i]);
      if (AutogradMeta* m = kiln::detail::meta_of(t))
        for (auto& [h, hook] : std::vector(m->post_hooks)) (*hook)(t);
    } else {
      AutogradMeta& m = kiln::detail::ensure_meta(t);
      Tensor& slot = m.retained ? *m.retained : m.grad;
      slot = slot.defined() ? slot + got[i] : (create_graph ? got[i] : got[i].detach());
    }
  }
}

variable_list grad(const variable_list& outputs, const variable_list& inputs,
                   const variable_list& grad_outputs, std::optional<bool> retain_graph,
                   bool create_graph, bool allow_unused) {
  KILN_CHECK(!inputs.empty(), "[autograd.grad] grad requires non-empty inputs.");
  variable_list grads = grad_outputs;
  if (grads.empty()) grads.resize(outputs.size());
  return kiln::detail::run_backward(outputs, grads, retain_graph.value_or(create_graph),
                                    create_graph, inputs, false, allow_unused);
}

}  // namespace autograd

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph,
                      std::vector<Tensor> inputs) const {
  autograd::backward({*this}, {gradient}, retain_graph, create_graph, inputs);
}

}  // namespace kiln
