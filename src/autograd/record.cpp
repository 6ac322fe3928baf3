// The op layer's autograd hooks (run(): ... -> kernel -> autograd): records an OpNode when an
// input requires grad, rebases the history of in-place outputs, and CopySlices for in-place
// ops on views.
#include "autograd/node_state.h"
#include "ops/run.h"
#include "ops/tensor_factory.h"

namespace kiln::detail {

std::shared_ptr<AutogradNode> as_strided_view_node(const Tensor& view, const Tensor& base);
std::vector<Tensor> validate_outputs(AutogradNode& node, std::vector<Tensor>&& grads);

namespace {

struct Pending {
  std::shared_ptr<AutogradNode> node;
  int self_index = -1;  // in-place: which input is self (-1: none, e.g. copy_)
};

std::string camel(const char* name) {
  std::string out;
  bool up = true;
  for (const char* p = name; *p; ++p) {
    if (*p == '_') {
      up = true;
      continue;
    }
    out += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(*p))) : *p;
    up = false;
  }
  return out;
}

bool shares_storage(const Tensor& a, const Tensor& b) {
  return a.impl()->has_storage() && b.impl()->has_storage() &&
         a.impl()->storage().get() == b.impl()->storage().get();
}

// Note [CopySlices]: an in-place op on a view rewrites the history of the base. The base's new
// node takes the base gradient, runs the op's node on the view's slice of it, and writes the
// slice of the gradient that flows to the view's old value back into the base gradient.
class CopySlices final : public AutogradNode {
 public:
  CopySlices(const Tensor& base, const Tensor& view, std::shared_ptr<AutogradNode> fn,
             int self_index)
      : base_(TensorMeta::of(base)),
        base_strides_(base.strides()),
        sizes_(view.sizes()),
        strides_(view.strides()),
        offset_(view.storage_offset() - base.storage_offset()),
        fn_(std::move(fn)),
        self_index_(self_index) {}
  std::string name() const override { return "CopySlices"; }
  void release_variables() override { fn_->release_variables(); }

  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    const size_t n_fn = fn_->state().next.size();
    std::vector<Tensor> out(state().next.size());
    if (!grads[0].defined()) return out;
    Tensor result = empty_strided_impl(base_.sizes, base_strides_, base_.dtype, base_.device);
    result.copy_(grads[0]);
    Tensor slice = result.as_strided(sizes_, strides_, result.storage_offset() + offset_);
    std::vector<Tensor> res = fn_->apply({slice.clone()});
    res.resize(n_fn);
    res = validate_outputs(*fn_, std::move(res));
    if (self_index_ >= 0 && res[self_index_].defined())
      slice.copy_(res[self_index_]);
    else
      slice.zero_();
    out[0] = result;
    size_t k = 1;
    for (size_t i = 0; i < n_fn; ++i)
      if (static_cast<int>(i) != self_index_) out[k++] = res[i];
    return out;
  }

 private:
  TensorMeta base_;
  DimVector base_strides_, sizes_, strides_;
  int64_t offset_;
  std::shared_ptr<AutogradNode> fn_;
  int self_index_;
};

void check_inplace_allowed(const OpCall& c, const Tensor& self) {
  AutogradMeta* m = meta_of(self);
  if (m == nullptr) return;
  if (m->is_view) {
    AutogradMeta* bm = meta_of(m->base);
    KILN_CHECK(!(bm && bm->requires_grad && !grad_fn_of(m->base)), "[", op_name(c.op),
               "] a view of a leaf Variable that requires grad is being used in an in-place "
               "operation.");
    return;
  }
  KILN_CHECK(!(m->requires_grad && !grad_fn_of(self)), "[", op_name(c.op),
             "] a leaf Variable that requires grad is being used in an in-place operation.");
}

}  // namespace

void* autograd_pre(OpCall& c) {
  if (!grad_mode_enabled()) return nullptr;
  bool any = false;
  for (const Tensor& t : c.in)
    if (requires_grad_fast(t)) {
      any = true;
      break;
    }
  const bool inplace = c.inplace && !c.out.empty();
  bool self_tracked = false;
  if (inplace) {
    AutogradMeta* m = meta_of(c.out[0]);
    if (m != nullptr) {
      AutogradMeta* bm = m->is_view ? meta_of(m->base) : nullptr;
      self_tracked = m->requires_grad || (bm != nullptr && bm->requires_grad);
    }
  }
  if (!any && !self_tracked) return nullptr;
  register_vjps();
  const OpDef& d = op_def(c.op);
  if (c.provided_out && !inplace) {
    KILN_CHECK(!any, "[", d.name,
               "] out= arguments don't support automatic differentiation, but one of the "
               "arguments requires grad.");
    return nullptr;
  }
  if (!inplace && (d.flags & kNoGrad)) return nullptr;
  auto* p = new Pending();
  try {
    if (inplace) {
      check_inplace_allowed(c, c.out[0]);
      for (size_t i = 0; i < c.in.size(); ++i)
        if (c.in[i].is_same(c.out[0])) p->self_index = static_cast<int>(i);
    }
    if (d.flags & kNoGrad) {
      const size_t n = c.in.size();
      p->node = std::make_shared<LambdaNode>(
          camel(d.name) + "Backward0",
          [n](std::vector<Tensor>&) { return std::vector<Tensor>(n); });
      for (size_t i = 0; i < n; ++i) {
        p->node->state().next.emplace_back();
        p->node->state().in_meta.push_back(TensorMeta::of(c.in[i]));
      }
    } else {
      auto node = std::make_shared<OpNode>(c.op, c.attrs, c.compute);
      add_input_edges(*node, std::vector<Tensor>(c.in.begin(), c.in.end()));
      node->saved_in_.resize(c.in.size());
      for (size_t i = 0; i < c.in.size() && i < 16; ++i) {
        if (!(d.vjp_saves & (1u << i))) continue;
        KILN_CHECK(!(c.in[i].defined() && c.in[i].impl()->is_inference()), "[", d.name,
                   "] Inference tensors cannot be saved for backward. To work around you can "
                   "make a clone to get a normal tensor and use it in autograd.");
        // An input the kernel overwrites is saved as a (recorded) copy of its old value.
        bool clobbered = inplace && c.in[i].defined() && shares_storage(c.in[i], c.out[0]);
        node->saved_in_[i] = SavedTensor(clobbered ? c.in[i].clone() : c.in[i], false);
      }
      p->node = std::move(node);
    }
  } catch (...) {
    delete p;
    throw;
  }
  set_grad_enabled(false);
  return p;
}

void autograd_abort(void* pending) {
  set_grad_enabled(true);
  delete static_cast<Pending*>(pending);
}

void autograd_post(OpCall& c, void* pending) {
  set_grad_enabled(true);
  std::unique_ptr<Pending> p(static_cast<Pending*>(pending));
  const OpDef& d = op_def(c.op);
  auto& node = p->node;
  NodeState& s = node->state();
  for (const Tensor& o : c.out) s.out_meta.push_back(TensorMeta::of(o));
  if (auto* on = dynamic_cast<OpNode*>(node.get())) {
    on->saved_out_.resize(c.out.size());
    for (size_t j = 0; j < c.out.size(); ++j)
      if (d.vjp_saves & (1u << (16 + j))) on->saved_out_[j] = SavedTensor(c.out[j], true);
  }
  if (autograd::AnomalyMode::is_enabled()) s.anomaly_op = d.name;
  for (size_t j = 0; j < c.out.size(); ++j) {
    const Tensor& o = c.out[j];
    if (!is_differentiable_dtype(o.dtype())) continue;
    AutogradMeta* m = meta_of(o);
    const bool inplace_self = j == 0 && c.inplace;
    if (inplace_self && m != nullptr && m->is_view && !m->view_dtype_change) {
      // In-place on a view: the base gets CopySlices, the view an as_strided view of it.
      const Tensor base = m->base;
      auto cs = std::make_shared<CopySlices>(base, o, node, p->self_index);
      NodeState& cst = cs->state();
      cst.next.push_back(gradient_edge(base));
      cst.in_meta.push_back(TensorMeta::of(base));
      for (size_t i = 0; i < s.next.size(); ++i) {
        if (static_cast<int>(i) == p->self_index) continue;
        cst.next.push_back(s.next[i]);
        cst.in_meta.push_back(s.in_meta[i]);
      }
      cst.out_meta.push_back(TensorMeta::of(base));
      cst.anomaly_op = s.anomaly_op;
      set_history(base, cs, 0);
      set_history(o, as_strided_view_node(o, base), 0);
      continue;
    }
    KILN_CHECK(!(inplace_self && m != nullptr && m->is_view), "[", d.name,
               "] in-place operation on a real/imag/dtype view of a tensor that requires grad "
               "is not supported by kiln's autograd");
    set_history(o, node, static_cast<uint32_t>(j));
  }
}

}  // namespace kiln::detail
