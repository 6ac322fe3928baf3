// kiln::nn::functional activations, softmax family and dropout (torch.nn.functional names and
// argument order). `inplace = true` writes the result into `input` and returns it.
#pragma once

#include <optional>
#include <string_view>

#include "kiln/dtype.h"
#include "kiln/tensor.h"

namespace kiln::nn::functional {

Tensor relu(const Tensor& input, bool inplace = false);
Tensor relu6(const Tensor& input, bool inplace = false);
Tensor leaky_relu(const Tensor& input, double negative_slope = 0.01, bool inplace = false);
Tensor elu(const Tensor& input, double alpha = 1.0, bool inplace = false);
Tensor selu(const Tensor& input, bool inplace = false);
Tensor celu(const Tensor& input, double alpha = 1.0, bool inplace = false);
// approximate: "none" (erf) or "tanh".
Tensor gelu(const Tensor& input, std::string_view approximate = "none");
Tensor silu(const Tensor& input, bool inplace = false);
Tensor mish(const Tensor& input, bool inplace = false);
Tensor hardtanh(const Tensor& input, double min_val = -1.0, double max_val = 1.0,
                bool inplace = false);
Tensor hardsigmoid(const Tensor& input, bool inplace = false);
Tensor hardswish(const Tensor& input, bool inplace = false);
// Reverts to the identity where input * beta > threshold (as PyTorch).
Tensor softplus(const Tensor& input, double beta = 1.0, double threshold = 20.0);
Tensor softsign(const Tensor& input);
Tensor logsigmoid(const Tensor& input);
Tensor sigmoid(const Tensor& input);
Tensor tanh(const Tensor& input);
Tensor tanhshrink(const Tensor& input);
Tensor softshrink(const Tensor& input, double lambd = 0.5);
Tensor hardshrink(const Tensor& input, double lambd = 0.5);
// Splits `dim` in halves a, b and returns a * sigmoid(b).
Tensor glu(const Tensor& input, int64_t dim = -1);
// input where input > threshold, else value.
Tensor threshold(const Tensor& input, double threshold, double value, bool inplace = false);

// softmax / log_softmax / softmin over `dim`, computed in `dtype` when given (the input is cast
// first, as PyTorch). Floating inputs only; one pass-per-row fused kernels, numerically stable.
Tensor softmax(const Tensor& input, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor log_softmax(const Tensor& input, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor softmin(const Tensor& input, int64_t dim, std::optional<DType> dtype = std::nullopt);

// Zeroes elements with probability p and scales the rest by 1/(1-p) when training; the identity
// otherwise. Random draws come from the default cpu generator (kiln::manual_seed).
Tensor dropout(const Tensor& input, double p = 0.5, bool training = true, bool inplace = false);
// Zeroes whole channels (dims 2.. of [N, C, *] or 1.. of [C, *]).
Tensor dropout1d(const Tensor& input, double p = 0.5, bool training = true, bool inplace = false);
Tensor dropout2d(const Tensor& input, double p = 0.5, bool training = true, bool inplace = false);
Tensor dropout3d(const Tensor& input, double p = 0.5, bool training = true, bool inplace = false);
// Keeps SELU's self-normalizing mean and variance (dropped values go to -alpha*scale, affine fix).
Tensor alpha_dropout(const Tensor& input, double p = 0.5, bool training = false,
                     bool inplace = false);

}  // namespace kiln::nn::functional
