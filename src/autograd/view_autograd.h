// Autograd for view ops (src/ops/view.cpp): views do not go through run(), so each view op
// calls finish_view(), which records the base and, when the input requires grad, a node.
#pragma once

#include <functional>

#include "kiln/tensor.h"

namespace kiln::detail {

bool grad_mode_enabled();
Tensor sum_to(const Tensor& g, IntArrayRef sizes);  // reverse of broadcasting
// grad of the view -> grad of the input.
using ViewBackwardFn = std::function<Tensor(const Tensor&)>;
// The same view op applied to another tensor shaped like the input.
using ViewFn = std::function<Tensor(const Tensor&)>;

// Tracks `out` as a view of self's base; when self requires grad, out gets a node named `name`
// with backward `bwd`. `dtype_change`: real/imag (no as_strided regeneration).
Tensor finish_view(const Tensor& self, Tensor out, const char* name, ViewBackwardFn bwd,
                   bool dtype_change = false);
// Multi-output view ops (split family, unbind): tracks each of `outs` as a view of self's base
// and, when self requires grad, gives them ONE node whose backward receives every piece's gradient
// at once (undefined where a piece got none) and returns self's. Call only under grad mode.
using MultiViewBackwardFn = std::function<Tensor(std::vector<Tensor>&)>;
void finish_multi_view(const Tensor& self, std::vector<Tensor>& outs, const char* name,
                       MultiViewBackwardFn bwd);

// The adjoint of a slicing view: zeros shaped like the input with g written through `view`
// (`accumulate` for views whose elements overlap, e.g. unfold with step < size).
Tensor view_scatter_back(const Tensor& g, IntArrayRef sizes, DType dtype, Device device,
                         const ViewFn& view,
                         const std::function<void(Tensor&, const Tensor&)>& accumulate = {});

// A view of t's storage without autograd tracking (autograd's own aliases, detach()).
Tensor alias_untracked(const Tensor& t, IntArrayRef sizes, IntArrayRef strides, int64_t offset);

// Autograd for views made by detail::make_view outside view.cpp (front ends' internal views):
// when t requires grad, out gets a node: a reshape's backward when out re-reads t in row-major
// order, else a scatter into t's storage layout (t must not overlap itself). Returns out.
// Note [Internal views]: called from detail::make_view (src/ops/tensor_factory.cpp).
Tensor track_internal_view(const Tensor& t, Tensor out);

}  // namespace kiln::detail
