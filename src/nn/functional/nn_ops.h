// Internal entry points of the nn primitives (src/ops/defs/nn.def): one function per primitive,
// for the front ends in src/nn/functional/ and for the vjps (autograd) that call backward ops.
#pragma once

#include <array>
#include <tuple>

#include "kiln/tensor.h"

namespace kiln::detail {

// ---- softmax family (dim already wrapped or not: wrapped here) ----
Tensor softmax_op(const Tensor& x, int64_t dim);
Tensor log_softmax_op(const Tensor& x, int64_t dim);
// grad_input from grad_output and the forward's OUTPUT y.
Tensor softmax_backward_op(const Tensor& grad, const Tensor& y, int64_t dim);
Tensor log_softmax_backward_op(const Tensor& grad, const Tensor& y, int64_t dim);

// ---- layer / rms norm over the last `m` elements of each row ----
// Returns (y, mean, rstd) with mean/rstd shaped [rows] (float32 for reduced-float inputs).
std::tuple<Tensor, Tensor, Tensor> layer_norm_op(const Tensor& x, int64_t m, const Tensor& weight,
                                                 const Tensor& bias, double eps);
// (grad_input, grad_weight, grad_bias); grad_weight/bias are undefined when weight/bias are.
std::tuple<Tensor, Tensor, Tensor> layer_norm_backward_op(const Tensor& grad, const Tensor& x,
                                                          const Tensor& mean, const Tensor& rstd,
                                                          int64_t m, const Tensor& weight,
                                                          bool has_bias);
// Returns (y, rstd) with rstd shaped [rows].
std::tuple<Tensor, Tensor> rms_norm_op(const Tensor& x, int64_t m, const Tensor& weight,
                                       double eps);
std::tuple<Tensor, Tensor> rms_norm_backward_op(const Tensor& grad, const Tensor& x,
                                                const Tensor& rstd, int64_t m,
                                                const Tensor& weight);

// ---- nll_loss: input [N, C] / [N, C, d...] / [C]; reduction 0 none, 1 mean, 2 sum ----
// Returns (loss, total_weight) (total_weight is 0-dim, input's dtype).
std::tuple<Tensor, Tensor> nll_loss_op(const Tensor& input, const Tensor& target,
                                       const Tensor& weight, int64_t ignore_index,
                                       int64_t reduction);
Tensor nll_loss_backward_op(const Tensor& grad, const Tensor& input, const Tensor& target,
                            const Tensor& weight, int64_t ignore_index, int64_t reduction,
                            const Tensor& total_weight);

// ---- embedding ----
// padding_idx (-1: none) rides along in attrs.i0 for the vjp; the forward ignores it.
Tensor embedding_op(const Tensor& weight, const Tensor& indices, int64_t padding_idx = -1);
// grad [*indices.shape, dim] -> [num_weights, dim]; rows equal to padding_idx (>= 0) get zero.
Tensor embedding_backward_op(const Tensor& grad, const Tensor& indices, int64_t num_weights,
                             int64_t padding_idx);
void embedding_renorm_op(const Tensor& weight, const Tensor& indices, double max_norm,
                         double norm_type);

// ---- fused cross-entropy over class indices on [N, C] logits (any float dtype) ----
// reduction 0 none (loss [N]), 1 mean, 2 sum (0-dim). Returns (loss, lse) with lse [N] in the
// statistics dtype (float32; float64 for float64 logits) for the backward.
std::tuple<Tensor, Tensor> cross_entropy_loss_op(const Tensor& logits, const Tensor& target,
                                                 const Tensor& weight, int64_t ignore_index,
                                                 int64_t reduction, double label_smoothing);
Tensor cross_entropy_loss_backward_op(const Tensor& grad, const Tensor& logits,
                                      const Tensor& target, const Tensor& lse, const Tensor& weight,
                                      int64_t ignore_index, int64_t reduction,
                                      double label_smoothing);
// The composite cross-entropy (log_softmax + nll_loss; probability targets too), kept as the
// reference of the fused primitive (src/nn/functional/loss.cpp). reduction as nll_loss_op.
Tensor cross_entropy_composite(const Tensor& input, const Tensor& target, const Tensor& weight,
                               int64_t ignore_index, int64_t reduction, double label_smoothing);

// ---- dropout in one pass: (y = x * mask / (1 - p), mask bool), 0 <= p < 1 ----
// Philox counters come from the default generator of x's device (Note [Random op contract]), or
// are given explicitly (seed, offset) by the second form (tests).
std::tuple<Tensor, Tensor> native_dropout_op(const Tensor& x, double p);
std::tuple<Tensor, Tensor> native_dropout_op(const Tensor& x, double p, uint64_t seed,
                                             uint64_t offset);

// ---- convolution on 5-D [N, C, D, H, W] tensors (weights [O, C/g, kd, kh, kw]) ----
struct ConvParams {
  std::array<int64_t, 3> stride{1, 1, 1}, padding{0, 0, 0}, dilation{1, 1, 1};
  int64_t groups = 1;
};
Tensor convolution_op(const Tensor& x, const Tensor& w, const Tensor& bias, const ConvParams& p);
// d(conv)/d(x) applied to grad: the transposed convolution. input_sizes: the 5-D input shape.
Tensor convolution_backward_input_op(const Tensor& grad, const Tensor& w, IntArrayRef input_sizes,
                                     const ConvParams& p);
Tensor convolution_backward_weight_op(const Tensor& grad, const Tensor& x, IntArrayRef weight_sizes,
                                      const ConvParams& p);

// ---- 2-D pooling on [N, C, H, W] ----
struct Pool2dParams {
  std::array<int64_t, 2> kernel{1, 1}, stride{1, 1}, padding{0, 0}, dilation{1, 1};
  bool ceil_mode = false;
};
// Output size of one pooled dim (PyTorch's rule: with ceil_mode the last window must start
// inside the input or left padding).
int64_t pool_output_size(int64_t in, int64_t k, int64_t s, int64_t pad, int64_t dil, bool ceil);
std::tuple<Tensor, Tensor> max_pool2d_op(const Tensor& x, const Pool2dParams& p);
// Scatters grad [N, C, Ho, Wo] into zeros [N, C, input_hw] at indices (flat positions in H*W).
Tensor max_pool2d_backward_op(const Tensor& grad, const Tensor& indices, IntArrayRef input_sizes);
Tensor avg_pool2d_op(const Tensor& x, const Pool2dParams& p, bool count_include_pad,
                     int64_t divisor_override);
Tensor avg_pool2d_backward_op(const Tensor& grad, IntArrayRef input_sizes, const Pool2dParams& p,
                              bool count_include_pad, int64_t divisor_override);
Tensor adaptive_avg_pool2d_op(const Tensor& x, int64_t oh, int64_t ow);
Tensor adaptive_avg_pool2d_backward_op(const Tensor& grad, IntArrayRef input_sizes);
std::tuple<Tensor, Tensor> adaptive_max_pool2d_op(const Tensor& x, int64_t oh, int64_t ow);

// ---- im2col / col2im on [N, C, H, W] <-> [N, C*kh*kw, L] ----
struct Im2ColParams {
  std::array<int64_t, 2> kernel{1, 1}, dilation{1, 1}, padding{0, 0}, stride{1, 1};
};
Tensor im2col_op(const Tensor& x, const Im2ColParams& p);
Tensor col2im_op(const Tensor& cols, int64_t out_h, int64_t out_w, const Im2ColParams& p);

}  // namespace kiln::detail
