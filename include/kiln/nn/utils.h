// kiln::nn::utils (torch.nn.utils): gradient clipping and flattening parameters to one vector.
#pragma once

#include <limits>
#include <vector>

#include "kiln/tensor.h"

namespace kiln::nn::utils {

// Scales the gradients of `params` in place so that their total norm (the norm_type-norm of
// the per-gradient norms; norm_type = inf: the largest |g|) is at most max_norm: each gradient
// is multiplied by min(1, max_norm / (total + 1e-6)). Returns the total norm before clipping
// (a 0-dim float tensor). With error_if_nonfinite, a NaN or infinite total is an error and
// nothing changes. Parameters without a gradient are skipped.
Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);
// Clamps every gradient elementwise to [-clip_value, clip_value].
void clip_grad_value_(const std::vector<Tensor>& params, double clip_value);
// The parameters flattened and concatenated into one 1-D tensor (a copy).
Tensor parameters_to_vector(const std::vector<Tensor>& params);
// Copies consecutive slices of `vec` into the parameters (its numel must match theirs).
void vector_to_parameters(const Tensor& vec, const std::vector<Tensor>& params);

}  // namespace kiln::nn::utils
