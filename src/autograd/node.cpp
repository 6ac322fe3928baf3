// Graph nodes: AutogradNode, SavedTensor (version check), OpNode (calls the op's vjp),
// AccumulateGrad, gradient edges and the regeneration of view histories.
#include <cmath>

#include "autograd/node_state.h"
#include "autograd/view_autograd.h"
#include "autograd/vjp.h"
#include "kiln/ops.h"
#include "ops/tensor_factory.h"

namespace kiln {

AutogradNode::AutogradNode() : state_(std::make_unique<detail::NodeState>()) {
  state_->seq = detail::next_sequence_nr();
}
AutogradNode::~AutogradNode() = default;
const std::vector<AutogradNode::Edge>& AutogradNode::next_functions() const { return state_->next; }
uint64_t AutogradNode::sequence_nr() const { return state_->seq; }

namespace detail {

Tensor TensorMeta::zeros() const {
  NoGradGuard g;
  return kiln::zeros(sizes, TensorOptions(dtype).device(device));
}

bool is_differentiable_dtype(DType d) { return is_floating_point(d) || is_complex(d); }

// ---- saved tensors ----

SavedTensor::SavedTensor(const Tensor& t, bool is_output) : is_output_(is_output) {
  if (!t.defined()) return;
  version_ = t.impl()->version();
  // Outputs are kept as plain aliases: the node owns them, and they own the node otherwise.
  data_ = is_output ? alias_untracked(t, t.sizes(), t.strides(), t.storage_offset()) : t;
}

Tensor SavedTensor::unpack(const std::shared_ptr<AutogradNode>& node, uint32_t output_nr,
                           const char* op) const {
  KILN_CHECK(!released_, "[", op,
             " backward] Trying to backward through the graph a second time (or directly access "
             "saved tensors after they have already been freed). Saved intermediate values of the "
             "graph are freed when you call backward() or autograd::grad(). Specify "
             "retain_graph=true if you need to backward through the graph a second time.");
  if (!data_.defined()) return data_;
  uint32_t now = data_.impl()->version();
  KILN_CHECK(now == version_, "[", op,
             " backward] one of the variables needed for gradient computation has been modified "
             "by an inplace operation: [",
             dtype_name(data_.dtype()), " ", data_.sizes(), "], which is ",
             (is_output_ ? "an output" : "an input"), " of ", op, ", is at version ", now,
             "; expected version ", version_, " instead.");
  if (!is_output_ || !grad_mode_enabled()) return data_;
  // create_graph: the output re-enters the graph as an output of its own node.
  Tensor t = alias_untracked(data_, data_.sizes(), data_.strides(), data_.storage_offset());
  set_history(t, node, output_nr);
  return t;
}

// ---- edges and histories ----

void set_history(const Tensor& t, const std::shared_ptr<AutogradNode>& node, uint32_t output_nr) {
  AutogradMeta& m = ensure_meta(t);
  m.grad_fn = node;
  m.output_nr = output_nr;
  m.requires_grad = true;
  if (m.is_view) m.attr_version = t.impl()->version();
}

namespace {
// Note [View history]: a view records its base. An in-place op on the base, or on another view
// of the same storage, bumps the shared version counter; the view's grad_fn is then rebuilt as
// "as_strided view of the base's current history", as PyTorch does.
std::shared_ptr<AutogradNode> make_as_strided_node(const Tensor& view, const Tensor& base);
}  // namespace

const std::shared_ptr<AutogradNode>& grad_fn_of(const Tensor& t) {
  static const std::shared_ptr<AutogradNode> none;
  AutogradMeta* m = meta_of(t);
  if (m == nullptr) return none;
  if (m->is_view && !m->view_dtype_change && m->attr_version != t.impl()->version()) {
    AutogradMeta* bm = meta_of(m->base);
    if (bm != nullptr && bm->requires_grad) {
      m->grad_fn = make_as_strided_node(t, m->base);
      m->output_nr = 0;
      m->requires_grad = true;
    }
    m->attr_version = t.impl()->version();
  }
  return m->grad_fn;
}

AutogradNode::Edge gradient_edge(const Tensor& t) {
  AutogradMeta* m = meta_of(t);
  if (m == nullptr) return {};
  const auto& fn = grad_fn_of(t);
  if (fn) return {fn, m->output_nr};
  if (!m->requires_grad) return {};
  std::shared_ptr<AutogradNode> acc = m->grad_accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t);
    m->grad_accumulator = acc;
  }
  return {acc, 0};
}

void add_input_edges(AutogradNode& node, const std::vector<Tensor>& inputs) {
  NodeState& s = node.state();
  s.next.reserve(inputs.size());
  s.in_meta.reserve(inputs.size());
  for (const Tensor& x : inputs) {
    bool diff = x.defined() && is_differentiable_dtype(x.dtype());
    s.next.push_back(diff ? gradient_edge(x) : AutogradNode::Edge{});
    s.in_meta.push_back(TensorMeta::of(x));
  }
}

// ---- AccumulateGrad ----

AccumulateGrad::AccumulateGrad(const Tensor& leaf) {
  state().leaf = leaf;
  state().seq = UINT64_MAX;  // leaves run as soon as they are ready
  state().out_meta.push_back(TensorMeta::of(leaf));
}

bool dense_layout(const Tensor& t) {
  bool dense =
      t.impl()->has_storage() && storage_elements_needed(t.sizes(), t.strides()) == t.numel();
  for (int64_t d = 0; d < t.dim(); ++d) dense &= t.stride(d) > 0 || t.size(d) <= 1;
  return dense;
}

namespace {

// Note [Stealing the gradient]: as PyTorch's AccumulateGrad, a gradient nobody else can see (its
// handle and its storage referenced once: the engine's buffer alone; not a view into a larger
// buffer) that already has the leaf's dtype, device and layout becomes the leaf's .grad as it
// is, instead of a copy into a fresh buffer: one device copy less per parameter and step.
bool can_steal(const Tensor& t, const Tensor& g, bool dense) {
  if (g.use_count() != 1 || !g.impl()->has_storage() || g.requires_grad()) return false;
  const Storage& st = g.impl()->storage();
  if (st.use_count() != 1 || g.storage_offset() != 0) return false;
  if (g.dtype() != t.dtype() || g.device() != t.device() || g.sizes() != t.sizes()) return false;
  if (st->nbytes != static_cast<size_t>(g.numel()) * static_cast<size_t>(g.element_size()))
    return false;
  return dense ? g.strides() == t.strides() : g.is_contiguous();
}

}  // namespace

void accumulate_grad(const Tensor& t, const Tensor& g) {
  if (!g.defined()) return;
  AutogradMeta& m = ensure_meta(t);
  Tensor& slot = m.retained ? *m.retained : m.grad;
  bool create = grad_mode_enabled();
  if (!slot.defined()) {
    if (create) {
      slot = g;
    } else {
      // A buffer laid out like the tensor (PyTorch: .grad matches its parameter's strides when
      // those are non-overlapping): g itself when no one else holds it, else a fresh copy.
      NoGradGuard ng;
      const bool dense = dense_layout(t);
      if (can_steal(t, g, dense)) {
        slot = g;
      } else {
        slot = dense ? empty_strided_impl(t.sizes(), t.strides(), t.dtype(), t.device())
                     : empty_impl(t.sizes(), t.dtype(), t.device());
        slot.copy_(g);
      }
    }
  } else if (!create && !slot.requires_grad()) {
    NoGradGuard ng;
    slot.add_(g);
  } else {
    slot = slot + g;
  }
}

std::vector<Tensor> AccumulateGrad::apply(std::vector<Tensor>&& grads) {
  const Tensor& leaf = state().leaf;
  if (!grads.empty() && grads[0].defined()) {
    accumulate_grad(leaf, grads[0]);
    if (AutogradMeta* m = meta_of(leaf))
      for (auto& [h, hook] : std::vector(m->post_hooks)) (*hook)(leaf);
  }
  return {};
}

// ---- OpNode ----

std::string OpNode::name() const {
  std::string n = op_name(op_);
  std::string out;
  bool up = true;
  for (char ch : n) {
    if (ch == '_') {
      up = true;
      continue;
    }
    out += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(ch))) : ch;
    up = false;
  }
  return out + "Backward0";
}

std::vector<Tensor> OpNode::apply(std::vector<Tensor>&& grads) {
  const OpDef& d = op_def(op_);
  KILN_CHECK(d.vjp != nullptr, "[", d.name,
             "] has no vjp yet: its gradient is not implemented (op flagged kNoVjpYet)");
  VjpContext ctx(*this, grads);
  d.vjp(ctx);
  return std::move(ctx.result);
}

// ---- sum_to ----

Tensor sum_to(const Tensor& g, IntArrayRef sizes) {
  if (g.sizes() == sizes) return g;
  int64_t lead = g.dim() - static_cast<int64_t>(sizes.size());
  KILN_CHECK(lead >= 0, "[autograd] gradient of shape ", g.sizes(), " cannot be summed to shape ",
             sizes);
  DimVector dims;
  for (int64_t i = 0; i < lead; ++i) dims.push_back(i);
  for (size_t i = 0; i < sizes.size(); ++i) {
    int64_t gs = g.size(lead + static_cast<int64_t>(i));
    if (sizes[i] == 1 && gs != 1)
      dims.push_back(lead + static_cast<int64_t>(i));
    else
      KILN_CHECK(sizes[i] == gs, "[autograd] gradient of shape ", g.sizes(),
                 " cannot be summed to shape ", sizes);
  }
  Tensor r = dims.empty() ? g : g.sum(dims, /*keepdim=*/true);
  return lead > 0 || r.sizes() != sizes ? r.reshape(sizes) : r;
}

namespace {

// g (shaped like the view) scattered into zeros shaped like the base, with the view's geometry.
struct ViewGeometry {
  DimVector sizes, strides;
  int64_t offset;  // relative to the base's offset
};

Tensor view_of(const Tensor& base_like, const ViewGeometry& v) {
  return base_like.as_strided(v.sizes, v.strides, base_like.storage_offset() + v.offset);
}

Tensor scatter_view(const Tensor& g, const TensorMeta& base, IntArrayRef base_strides,
                    const ViewGeometry& v);

// Differentiable scatter: forward without recording, backward = the view again.
Tensor scatter_view_fwd(const Tensor& g, const TensorMeta& base, IntArrayRef base_strides,
                        const ViewGeometry& v) {
  // Overlap from stride-0 dims (expand) is summed first so the copy below does not lose terms.
  ViewGeometry vv = v;
  Tensor gg = g;
  DimVector zero_dims;
  for (size_t i = 0; i < v.sizes.size(); ++i)
    if (v.strides[i] == 0 && v.sizes[i] > 1) zero_dims.push_back(static_cast<int64_t>(i));
  if (!zero_dims.empty()) {
    gg = g.sum(zero_dims, true);
    for (int64_t d : zero_dims) vv.sizes[d] = 1;
  }
  Tensor out = empty_strided_impl(base.sizes, base_strides, base.dtype, base.device);
  out.zero_();
  view_of(out, vv).copy_(gg);
  return out;
}

Tensor scatter_view(const Tensor& g, const TensorMeta& base, IntArrayRef base_strides,
                    const ViewGeometry& v) {
  Tensor out;
  {
    NoGradGuard ng;
    out = scatter_view_fwd(g, base, base_strides, v);
  }
  if (grad_mode_enabled() && g.requires_grad()) {
    auto node = std::make_shared<LambdaNode>("AsStridedScatterBackward0",
                                             [v](std::vector<Tensor>& gs) -> std::vector<Tensor> {
                                               if (!gs[0].defined()) return {Tensor()};
                                               return {view_of(gs[0], v)};
                                             });
    add_input_edges(*node, {g});
    node->state().out_meta.push_back(TensorMeta::of(out));
    set_history(out, node, 0);
  }
  return out;
}

std::shared_ptr<AutogradNode> make_as_strided_node(const Tensor& view, const Tensor& base) {
  ViewGeometry v{DimVector(view.sizes()), DimVector(view.strides()),
                 view.storage_offset() - base.storage_offset()};
  TensorMeta bm = TensorMeta::of(base);
  DimVector bst(base.strides());
  auto node = std::make_shared<LambdaNode>(
      "AsStridedBackward0", [v, bm, bst](std::vector<Tensor>& gs) -> std::vector<Tensor> {
        if (!gs[0].defined()) return {Tensor()};
        return {scatter_view(gs[0], bm, bst, v)};
      });
  add_input_edges(*node, {base});
  node->state().out_meta.push_back(TensorMeta::of(view));
  return node;
}

}  // namespace

std::shared_ptr<AutogradNode> as_strided_view_node(const Tensor& view, const Tensor& base) {
  return make_as_strided_node(view, base);
}

}  // namespace detail
}  // namespace kiln
