// nn::utils: clip_grad_norm_, clip_grad_value_, parameters_to_vector, vector_to_parameters.
#include "kiln/nn/utils.h"

#include <cmath>

#include "kiln/ops/factories.h"
#include "kiln/ops/reduce.h"
#include "kiln/ops/shape.h"
#include "nn/flat.h"
#include "nn/grad_scope.h"
#include "optim/multi_tensor.h"

namespace kiln::nn::utils {

Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  kiln::detail::NoGradScope ng;
  std::vector<Tensor> grads;
  for (auto& p : params)
    if (p.defined() && p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return kiln::zeros({}, TensorOptions(kFloat32));
  const bool inf = std::isinf(norm_type);
  // Everything stays on the gradients' device: one norm per gradient, then the norm of those
  // norms, and a clamped coefficient tensor; only error_if_nonfinite reads a value back.
  const TensorOptions o = grads[0].options();
  const Device dev = grads[0].device();
  const DType dt = grads[0].dtype();
  bool multi = norm_type > 0;  // the multi-tensor kernels take norm_type > 0 and inf
  for (auto& g : grads) {
    KILN_CHECK(g.device() == dev, "[clip_grad_norm_] gradients on different devices: ", dev,
               " and ", g.device());
    multi = multi && kiln::detail::foreach_supported(g);
  }
  Tensor stacked;
  if (multi) {
    // One multi-tensor pass for the per-gradient norms (PyTorch's _foreach_norm).
    stacked = kiln::detail::foreach_norms(grads, norm_type).to(dt);
  } else {
    std::vector<Tensor> norms;
    for (auto& g : grads) {
      Tensor n = g.numel() == 0 ? kiln::zeros({}, o)
                 : inf          ? g.abs().amax()
                                : g.norm(Scalar(norm_type));
      norms.push_back(n.to(dt));
    }
    stacked = kiln::stack(norms);
  }
  Tensor total = inf ? stacked.amax() : stacked.norm(Scalar(norm_type));
  if (error_if_nonfinite) {
    const double t = total.item<double>();
    KILN_CHECK(std::isfinite(t), "[clip_grad_norm_] the total norm of order ", norm_type,
               " for gradients from `parameters` is non-finite, so it cannot be clipped. To "
               "disable this error and scale the gradients by the non-finite norm anyway, set "
               "error_if_nonfinite=false");
  }
  // min(max_norm / (total + 1e-6), 1); NaN propagates (a NaN total makes the gradients NaN).
  Tensor coef = total.add(1e-6).reciprocal().mul(max_norm).clamp_max(Scalar(1.0));
  if (multi) {
    kiln::detail::foreach_scale(grads, coef);  // one multi-tensor pass
  } else {
    for (auto& g : grads) g.mul_(coef.to(g.dtype()));
  }
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& params, double clip_value) {
  kiln::detail::NoGradScope ng;
  for (auto& p : params)
    if (p.defined() && p.grad().defined())
      p.mutable_grad().clamp_(Scalar(-clip_value), Scalar(clip_value));
}

Tensor parameters_to_vector(const std::vector<Tensor>& params) {
  KILN_CHECK(!params.empty(), "[parameters_to_vector] no parameters");
  kiln::detail::NoGradScope ng;
  for (auto& p : params) {
    KILN_CHECK(p.device() == params[0].device(),
               "[parameters_to_vector] found two parameters on different devices: ",
               params[0].device(), " and ", p.device());
  }
  return kiln::detail::flat_cat(params);
}

void vector_to_parameters(const Tensor& vec, const std::vector<Tensor>& params) {
  KILN_CHECK(vec.defined() && vec.dim() == 1, "[vector_to_parameters] expected a 1-D tensor");
  int64_t total = 0;
  for (auto& p : params) total += p.numel();
  KILN_CHECK(total == vec.numel(), "[vector_to_parameters] the vector has ", vec.numel(),
             " elements but the parameters have ", total);
  kiln::detail::NoGradScope ng;
  int64_t off = 0;
  for (auto& p : params) {
    Tensor(p).copy_(vec.narrow(0, off, p.numel()).view(p.sizes()));
    off += p.numel();
  }
}

}  // namespace kiln::nn::utils
