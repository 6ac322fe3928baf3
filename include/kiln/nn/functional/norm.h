// kiln::nn::functional normalization layers (torch.nn.functional names and argument order).
#pragma once

#include <optional>

#include "kiln/tensor.h"

namespace kiln::nn::functional {

// Normalizes over the trailing dims `normalized_shape`; weight/bias (shape normalized_shape) are
// optional (undefined tensors). Fused CPU kernel.
Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);
// x / sqrt(mean(x^2) + eps) * weight over the trailing dims; eps defaults to the machine epsilon
// of input's dtype (as PyTorch). Fused CPU kernel.
Tensor rms_norm(const Tensor& input, IntArrayRef normalized_shape, const Tensor& weight = {},
                std::optional<double> eps = std::nullopt);
// Batch norm over dims (0, 2, 3, ...) of [N, C, *]. training = true uses the batch statistics and,
// when running_mean/var are defined, updates them in place (running = (1-momentum) * running +
// momentum * batch; the variance with Bessel's correction). training = false uses the running
// statistics (they must then be defined).
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = {}, const Tensor& bias = {}, bool training = false,
                  double momentum = 0.1, double eps = 1e-5);
// Per-sample, per-channel normalization over the spatial dims of [N, C, *]; use_input_stats = false
// uses the running statistics instead.
Tensor instance_norm(const Tensor& input, const Tensor& running_mean = {},
                     const Tensor& running_var = {}, const Tensor& weight = {},
                     const Tensor& bias = {}, bool use_input_stats = true, double momentum = 0.1,
                     double eps = 1e-5);
// Normalizes [N, C, *] over groups of C / num_groups channels; weight/bias per channel.
Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5);
// Local response normalization across channels of [N, C, *].
Tensor local_response_norm(const Tensor& input, int64_t size, double alpha = 1e-4,
                           double beta = 0.75, double k = 1.0);
// input / max(||input||_p over dim, eps).
Tensor normalize(const Tensor& input, double p = 2.0, int64_t dim = 1, double eps = 1e-12);

}  // namespace kiln::nn::functional
