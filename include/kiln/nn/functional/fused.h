// Fused nn functionals: linear followed by tanh-GELU in one GPU matrix product (cuBLASLt epilogue),
// with the composite as the fallback; and the hook table through which the GPU backend supplies it.
#pragma once

#include <string_view>

#include "kiln/tensor.h"

namespace kiln::nn::functional {

// gelu(linear(input, weight, bias), approximate) (not a PyTorch function: PyTorch runs the two
// ops). On CUDA tensors of float16/bfloat16/float32 with a 2-D weight, a 1-D bias and approximate
// == "tanh", the product, the bias and the GELU are one cuBLASLt call that also keeps the
// pre-activation for the backward pass; everything else runs the composite. Under autocast it casts
// like linear. Gradients: Note [Fused linear+GELU] in src/nn/functional/fused_linear_gelu.cpp.
Tensor linear_gelu(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
                   std::string_view approximate = "tanh");

}  // namespace kiln::nn::functional

namespace kiln::detail {

// The fused path's device pieces, set by a backend when the kernel registry starts (the GPU
// backend's register_linear_gelu_hooks in src/kernels/gpu/linear_gelu.cu; linear_gelu starts the
// registry before reading them); all null in CPU-only builds.
// x2 [M, K] (the input's rows), weight [N, K], bias [N], all of one dtype.
struct LinearGeluHooks {
  // Whether the fused path handles these (already autocast) operands.
  bool (*accepts)(const Tensor& x2, const Tensor& weight, const Tensor& bias) = nullptr;
  // out [M, N] = gelu_tanh(x2 @ weight^T + bias); *pre <- the pre-activation (any row stride).
  Tensor (*forward)(const Tensor& x2, const Tensor& weight, const Tensor& bias,
                    Tensor* pre) = nullptr;
  // [M, N] contiguous: grad * gelu_tanh'(pre). With grad_bias non-null it may also set
  // *grad_bias to that product summed over rows ([N]); left undefined, weight_grad or a sum does.
  Tensor (*grad_pre)(const Tensor& grad, const Tensor& pre, Tensor* grad_bias) = nullptr;
  // grad_weight [N, K] = grad_pre^T @ x2; *grad_bias <- grad_pre summed over rows ([N]).
  Tensor (*weight_grad)(const Tensor& grad_pre, const Tensor& x2, Tensor* grad_bias) = nullptr;
};
LinearGeluHooks& linear_gelu_hooks();

}  // namespace kiln::detail
