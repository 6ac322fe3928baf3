// kiln::nn::functional convolution, pooling, unfold/fold and pixel shuffle (torch.nn.functional
// names and argument order). A one-element stride/padding/... list applies to every spatial dim.
#pragma once

#include <optional>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "kiln/tensor.h"

namespace kiln::nn::functional {

// input [N, C_in, *] (or unbatched [C_in, *]), weight [C_out, C_in / groups, *k], bias [C_out].
// im2col + OpenBLAS GEMM on the cpu.
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
              IntArrayRef stride = 1, IntArrayRef padding = 0, IntArrayRef dilation = 1,
              int64_t groups = 1);
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
              IntArrayRef stride = 1, IntArrayRef padding = 0, IntArrayRef dilation = 1,
              int64_t groups = 1);
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
              IntArrayRef stride = 1, IntArrayRef padding = 0, IntArrayRef dilation = 1,
              int64_t groups = 1);
// padding "same" (stride 1 only; extra padding goes to the end, as PyTorch) or "valid". The
// string overloads are templates so that an integer padding (conv2d(x, w, b, 1, 0)) never
// converts to a string.
Tensor conv_padding_str(int nd, const Tensor& input, const Tensor& weight, const Tensor& bias,
                        IntArrayRef stride, std::string_view padding, IntArrayRef dilation,
                        int64_t groups);
template <class S>
concept PaddingString =
    std::is_convertible_v<const S&, std::string_view> && !std::is_arithmetic_v<S>;
template <PaddingString S>
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              const S& padding, IntArrayRef dilation = 1, int64_t groups = 1) {
  return conv_padding_str(1, input, weight, bias, stride, padding, dilation, groups);
}
template <PaddingString S>
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              const S& padding, IntArrayRef dilation = 1, int64_t groups = 1) {
  return conv_padding_str(2, input, weight, bias, stride, padding, dilation, groups);
}
template <PaddingString S>
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              const S& padding, IntArrayRef dilation = 1, int64_t groups = 1) {
  return conv_padding_str(3, input, weight, bias, stride, padding, dilation, groups);
}
// weight [C_in, C_out / groups, *k]; output size (in - 1) * stride - 2 * padding +
// dilation * (k - 1) + output_padding + 1.
Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
                        IntArrayRef stride = 1, IntArrayRef padding = 0,
                        IntArrayRef output_padding = 0, int64_t groups = 1,
                        IntArrayRef dilation = 1);
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
                        IntArrayRef stride = 1, IntArrayRef padding = 0,
                        IntArrayRef output_padding = 0, int64_t groups = 1,
                        IntArrayRef dilation = 1);
Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
                        IntArrayRef stride = 1, IntArrayRef padding = 0,
                        IntArrayRef output_padding = 0, int64_t groups = 1,
                        IntArrayRef dilation = 1);

// Pools over [N, C, *] or [C, *]. stride empty: stride = kernel_size. Padding at most half the
// kernel. max pools ignore padded positions; indices are flat positions in the input plane.
Tensor max_pool1d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {},
                  IntArrayRef padding = 0, IntArrayRef dilation = 1, bool ceil_mode = false);
Tensor max_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {},
                  IntArrayRef padding = 0, IntArrayRef dilation = 1, bool ceil_mode = false);
// (values, int64 indices): return_indices = true.
std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, IntArrayRef kernel_size,
                                                   IntArrayRef stride = {}, IntArrayRef padding = 0,
                                                   IntArrayRef dilation = 1,
                                                   bool ceil_mode = false);
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntArrayRef kernel_size,
                                                   IntArrayRef stride = {}, IntArrayRef padding = 0,
                                                   IntArrayRef dilation = 1,
                                                   bool ceil_mode = false);
// Puts input's values at `indices` of a zero [N, C, output_size] plane (inverse of max_pool2d).
// With repeated indices the last input element in row-major order wins, as in PyTorch; its
// gradient goes only to that element (PyTorch gives every repeat the gradient).
Tensor max_unpool2d(const Tensor& input, const Tensor& indices, IntArrayRef kernel_size,
                    IntArrayRef stride = {}, IntArrayRef padding = 0, IntArrayRef output_size = {});
Tensor avg_pool1d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {},
                  IntArrayRef padding = 0, bool ceil_mode = false, bool count_include_pad = true);
Tensor avg_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride = {},
                  IntArrayRef padding = 0, bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
// (sum over the window of x^p)^(1/p).
Tensor lp_pool1d(const Tensor& input, double norm_type, IntArrayRef kernel_size,
                 IntArrayRef stride = {}, bool ceil_mode = false);
Tensor lp_pool2d(const Tensor& input, double norm_type, IntArrayRef kernel_size,
                 IntArrayRef stride = {}, bool ceil_mode = false);
Tensor adaptive_avg_pool1d(const Tensor& input, IntArrayRef output_size);
Tensor adaptive_avg_pool2d(const Tensor& input, IntArrayRef output_size);
Tensor adaptive_max_pool1d(const Tensor& input, IntArrayRef output_size);
Tensor adaptive_max_pool2d(const Tensor& input, IntArrayRef output_size);
std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& input,
                                                            IntArrayRef output_size);

// [N, C, H, W] -> [N, C * prod(kernel), L] sliding blocks, and back (summing overlaps).
Tensor unfold(const Tensor& input, IntArrayRef kernel_size, IntArrayRef dilation = 1,
              IntArrayRef padding = 0, IntArrayRef stride = 1);
Tensor fold(const Tensor& input, IntArrayRef output_size, IntArrayRef kernel_size,
            IntArrayRef dilation = 1, IntArrayRef padding = 0, IntArrayRef stride = 1);
// [*, C * r^2, H, W] <-> [*, C, H * r, W * r].
Tensor pixel_shuffle(const Tensor& input, int64_t upscale_factor);
Tensor pixel_unshuffle(const Tensor& input, int64_t downscale_factor);
// Resizes the spatial dims of [N, C, *] (1-3 dims). Give size or scale_factor (one value for
// every dim, or one per dim). mode: "nearest", "nearest-exact", "linear" (3-D), "bilinear"
// (4-D), "bicubic" (4-D, a = -0.75, borders clamped), "trilinear" (5-D), "area" (adaptive
// average pooling, 3-D/4-D). align_corners only for the interpolating modes (default false).
// Separable: each dim is resized by a small interpolation matrix (matmul), so it has gradients.
// antialias (bilinear/bicubic on 4-D input, when downsampling) as PyTorch.
Tensor interpolate(const Tensor& input, std::optional<std::vector<int64_t>> size = std::nullopt,
                   std::optional<std::vector<double>> scale_factor = std::nullopt,
                   std::string_view mode = "nearest",
                   std::optional<bool> align_corners = std::nullopt,
                   std::optional<bool> recompute_scale_factor = std::nullopt,
                   bool antialias = false);

// Samples input [N, C, H, W] at grid [N, Ho, Wo, 2] -> [N, C, Ho, Wo], or [N, C, D, H, W] at
// grid [N, Do, Ho, Wo, 3] -> [N, C, Do, Ho, Wo]; the grid's last axis is (x, y[, z]) in [-1, 1].
// mode "bilinear" (trilinear on 5-D) | "nearest" (half to even) | "bicubic" (4-D only);
// padding_mode "zeros" | "border" | "reflection".
Tensor grid_sample(const Tensor& input, const Tensor& grid, std::string_view mode = "bilinear",
                   std::string_view padding_mode = "zeros", bool align_corners = false);

// Sampling grid [N, H, W, 2] (or [N, D, H, W, 3]) for the affine matrices theta [N, 2, 3]
// ([N, 3, 4]) and size [N, C, H, W] ([N, C, D, H, W]).
Tensor affine_grid(const Tensor& theta, IntArrayRef size, bool align_corners = false);

}  // namespace kiln::nn::functional
