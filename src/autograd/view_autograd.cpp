// finish_view (view tracking + view nodes) and view_scatter_back, the differentiable adjoint of
// slicing views (its own backward re-applies the view, so double backward works).
#include "autograd/view_autograd.h"

#include "autograd/node_state.h"
#include "kiln/ops.h"
#include "ops/tensor_factory.h"

namespace kiln::detail {

Tensor finish_view(const Tensor& self, Tensor out, const char* name, ViewBackwardFn bwd,
                   bool dtype_change) {
  AutogradMeta* sm = meta_of(self);
  AutogradMeta& om = ensure_meta(out);
  om.is_view = true;
  om.base = (sm != nullptr && sm->is_view) ? sm->base : self;
  om.view_dtype_change = dtype_change || (sm != nullptr && sm->view_dtype_change);
  om.attr_version = out.impl()->version();
  if (sm != nullptr && sm->requires_grad) {
    auto node = std::make_shared<LambdaNode>(
        name, [bwd = std::move(bwd)](std::vector<Tensor>& gs) -> std::vector<Tensor> {
          if (!gs[0].defined()) return {Tensor()};
          return {bwd(gs[0])};
        });
    add_input_edges(*node, {self});
    node->state().out_meta.push_back(TensorMeta::of(out));
    if (autograd::AnomalyMode::is_enabled()) node->state().anomaly_op = name;
    set_history(out, node, 0);
  }
  return out;
}

void finish_multi_view(const Tensor& self, std::vector<Tensor>& outs, const char* name,
                       MultiViewBackwardFn bwd) {
  AutogradMeta* sm = meta_of(self);
  for (Tensor& out : outs) {
    AutogradMeta& om = ensure_meta(out);
    om.is_view = true;
    om.base = (sm != nullptr && sm->is_view) ? sm->base : self;
    om.view_dtype_change = sm != nullptr && sm->view_dtype_change;
    om.attr_version = out.impl()->version();
  }
  if (sm == nullptr || !sm->requires_grad) return;
  auto node = std::make_shared<LambdaNode>(
      name, [bwd = std::move(bwd)](std::vector<Tensor>& gs) -> std::vector<Tensor> {
        bool any = false;
        for (const Tensor& g : gs) any |= g.defined();
        if (!any) return {Tensor()};
        return {bwd(gs)};
      });
  add_input_edges(*node, {self});
  for (const Tensor& out : outs) node->state().out_meta.push_back(TensorMeta::of(out));
  if (autograd::AnomalyMode::is_enabled()) node->state().anomaly_op = name;
  for (size_t i = 0; i < outs.size(); ++i) set_history(outs[i], node, static_cast<uint32_t>(i));
}

Tensor view_scatter_back(const Tensor& g, IntArrayRef sizes, DType dtype, Device device,
                         const ViewFn& view,
                         const std::function<void(Tensor&, const Tensor&)>& accumulate) {
  Tensor z;
  {
    NoGradGuard ng;
    z = kiln::zeros(sizes, TensorOptions(dtype).device(device));
    if (accumulate)
      accumulate(z, g);
    else
      view(z).copy_(g);
  }
  if (grad_mode_enabled() && g.requires_grad()) {
    auto node = std::make_shared<LambdaNode>(
        "ViewScatterBackward0", [view](std::vector<Tensor>& gs) -> std::vector<Tensor> {
          if (!gs[0].defined()) return {Tensor()};
          return {view(gs[0])};
        });
    add_input_edges(*node, {g});
    node->state().out_meta.push_back(TensorMeta::of(z));
    set_history(z, node, 0);
  }
  return z;
}

Tensor alias_untracked(const Tensor& t, IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  auto impl = Ref<TensorImpl>::make(t.impl()->storage(), t.dtype(), t.device());
  impl->set_sizes_and_strides(sizes, strides, offset);
  // A view of an inference tensor is one too (Note [Inference tensors] in src/ops/run.cpp).
  if (KILN_UNLIKELY(t.impl()->is_inference())) impl->set_inference(true);
  return Tensor(std::move(impl));
}

std::shared_ptr<AutogradNode> as_strided_view_node(const Tensor& view, const Tensor& base);
std::optional<DimVector> reshape_strides(IntArrayRef sizes, IntArrayRef strides,
                                         IntArrayRef shape);  // view.cpp

Tensor track_internal_view(const Tensor& t, Tensor out) {
  // A view of an inference tensor is one too (Note [Inference tensors] in src/ops/run.cpp).
  if (KILN_UNLIKELY(t.impl()->is_inference())) out.impl()->set_inference(true);
  AutogradMeta* tm = meta_of(t);
  if (tm == nullptr || !tm->requires_grad || !grad_mode_enabled()) return out;
  const bool reshape =
      out.numel() == t.numel() && out.storage_offset() == t.storage_offset() && [&] {
        auto st = reshape_strides(t.sizes(), t.strides(), out.sizes());
        if (!st) return false;
        for (int64_t d = 0; d < out.dim(); ++d)
          if (out.size(d) > 1 && (*st)[d] != out.stride(d)) return false;
        return true;
      }();
  if (reshape) {
    DimVector sz(t.sizes());
    return finish_view(t, std::move(out), "ViewBackward0", [sz](const Tensor& g) {
      return g.dim() == 0 ? g.expand(sz) : g.reshape(sz);
    });
  }
  bool overlapping = false;
  for (int64_t d = 0; d < t.dim(); ++d) overlapping |= t.size(d) > 1 && t.stride(d) == 0;
  AutogradMeta& om = ensure_meta(out);
  om.is_view = true;
  om.base = tm->is_view ? tm->base : t;
  om.view_dtype_change = tm->view_dtype_change;
  if (overlapping) {
    auto node = std::make_shared<LambdaNode>(
        "AsStridedBackward0", [](std::vector<Tensor>&) -> std::vector<Tensor> {
          KILN_ERROR(
              "[autograd] backward through an internal strided view of a tensor whose "
              "elements overlap (an expanded tensor) is not supported");
        });
    add_input_edges(*node, {t});
    node->state().out_meta.push_back(TensorMeta::of(out));
    set_history(out, node, 0);
  } else {
    set_history(out, as_strided_view_node(out, t), 0);
  }
  return out;
}

}  // namespace kiln::detail
