// nn::functional::linear_gelu: gelu(linear(x, w, b)) as one cuBLASLt call with the GELU+bias
// epilogue on the GPU (through LinearGeluHooks), its custom backward, and the composite fallback.
#include <string>

#include "amp/autocast_state.h"
#include "dispatch/registry.h"
#include "kiln/autograd.h"
#include "kiln/error.h"
#include "kiln/nn/functional/activation.h"
#include "kiln/nn/functional/fused.h"
#include "kiln/ops.h"

namespace kiln {
namespace detail {

namespace {
constinit LinearGeluHooks g_hooks;  // all null until a backend sets them
}  // namespace

LinearGeluHooks& linear_gelu_hooks() { return g_hooks; }

}  // namespace detail

namespace nn::functional {
namespace {

// Note [Fused linear+GELU]
// ------------------------
// y = gelu_tanh(p), p = x2 @ w^T + b, with x2 the input's rows [M, K], w [N, K], b [N]. Forward:
// one GEMM whose epilogue adds b, applies the GELU and stores p (cuBLASLt's GELU_AUX_BIAS; p is
// kept only when a gradient is needed). Backward, for the upstream gradient gy:
//   gp = gy * gelu_tanh'(p)                   one elementwise pass (the hook's grad_pre)
//   gw = gp^T @ x2, gb = gp summed over rows  one GEMM with the BGRADA epilogue (weight_grad)
//   gx = gp @ w                               one GEMM (kiln::mm)
// cuBLASLt's DGELU epilogue cannot give gp: it multiplies the GEMM's own result by gelu'(p), and
// gy is an input here, not a product. The hooks leave the bias gradient's source to the backend
// (grad_pre may compute it as column sums; src/kernels/gpu/linear_gelu.cu measures the choices).
// The backward's GPU kernels are not differentiable, so a backward that records a graph
// (create_graph = true) differentiates the recomputed composite instead: double backward is the
// composite's.
Tensor composite(const Tensor& input, const Tensor& weight, const Tensor& bias,
                 std::string_view approximate) {
  return nn::functional::gelu(kiln::linear(input, weight, bias), approximate);
}

DimVector out_shape(const Tensor& input, const Tensor& weight) {
  DimVector s(input.sizes().begin(), input.sizes().end() - 1);
  s.push_back(weight.size(0));
  return s;
}

struct LinearGeluFn : autograd::Function<LinearGeluFn> {
  static Tensor forward(autograd::AutogradContext* ctx, const Tensor& input, const Tensor& weight,
                        const Tensor& bias) {
    const auto& h = detail::linear_gelu_hooks();
    Tensor pre;
    Tensor out = h.forward(input.reshape({-1, weight.size(1)}), weight, bias, &pre);
    ctx->save_for_backward({input, weight, bias});
    ctx->saved_data["pre"] = pre;
    return out.view(out_shape(input, weight));
  }

  static autograd::variable_list backward(autograd::AutogradContext* ctx,
                                          autograd::variable_list g) {
    const auto& h = detail::linear_gelu_hooks();
    autograd::variable_list s = ctx->get_saved_variables();
    const Tensor &input = s[0], &weight = s[1], &bias = s[2];
    const bool need[3] = {ctx->needs_input_grad(0), ctx->needs_input_grad(1),
                          ctx->needs_input_grad(2)};
    autograd::variable_list r(3);
    if (is_grad_enabled()) {  // create_graph: a differentiable backward (the composite's)
      autograd::variable_list wrt;
      for (int i = 0; i < 3; ++i)
        if (need[i]) wrt.push_back(s[i]);
      Tensor y = composite(input, weight, bias, "tanh");
      autograd::variable_list d = autograd::grad({y}, wrt, {g[0]}, true, true, true);
      for (int i = 0, j = 0; i < 3; ++i)
        if (need[i]) r[i] = d[j++];
      return r;
    }
    const int64_t n = weight.size(0), k = weight.size(1);
    Tensor pre = std::any_cast<Tensor>(ctx->saved_data.at("pre"));
    Tensor gp = h.grad_pre(g[0].reshape({-1, n}), pre, need[2] ? &r[2] : nullptr);
    const bool bias_left = need[2] && !r[2].defined();
    if (need[0]) r[0] = kiln::mm(gp, weight).view(input.sizes());
    if (need[1])
      r[1] = h.weight_grad(gp, input.reshape({-1, k}), bias_left ? &r[2] : nullptr);
    else if (bias_left)
      r[2] = gp.sum(0);
    return r;
  }
};

}  // namespace

Tensor linear_gelu(const Tensor& input, const Tensor& weight, const Tensor& bias,
                   std::string_view approximate) {
  (void)detail::kernel_registry();  // its start-up sets the backends' hooks
  const auto& h = detail::linear_gelu_hooks();
  if (approximate != "tanh" || !h.accepts || !input.defined() || !weight.defined() ||
      !bias.defined() || input.dim() < 2 || weight.dim() != 2 || bias.dim() != 1 ||
      input.size(-1) != weight.size(1) || bias.size(0) != weight.size(0) || input.numel() == 0 ||
      weight.numel() == 0)
    return composite(input, weight, bias, approximate);
  Tensor x = input, w = weight, b = bias;
  if (KILN_UNLIKELY(detail::autocast_active()))  // linear's casts (AutocastPolicy::Lower)
    detail::autocast_args(detail::AutocastPolicy::Lower, {&x, &w, &b});
  if (x.dtype() != w.dtype() || x.dtype() != b.dtype() || x.device() != w.device() ||
      x.device() != b.device() || !h.accepts(x, w, b))
    return composite(input, weight, bias, approximate);
  const bool grad =
      is_grad_enabled() && (x.requires_grad() || w.requires_grad() || b.requires_grad());
  if (!grad) {
    detail::AutocastSuspend no_autocast;  // the hook runs in the operands' dtype as given
    return h.forward(x.reshape({-1, w.size(1)}), w, b, nullptr).view(out_shape(x, w));
  }
  return LinearGeluFn::apply(x, w, b);
}

}  // namespace nn::functional
}  // namespace kiln
