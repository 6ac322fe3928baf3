// kiln::nn::functional convolution (1/2/3-D and transposed, on the 5-D Convolution primitives),
// pooling (2-D primitives; 1-D through a unit dim), unfold/fold, pixel shuffle, affine_grid.
#include <cmath>

#include "amp/autocast_state.h"
#include "kiln/nn/functional/conv.h"
#include "kiln/ops.h"
#include "nn/functional/nn_ops.h"

namespace kiln::nn::functional {
namespace {

// A per-dim parameter: one value for every dim, or exactly nd values.
std::array<int64_t, 3> expand_param(const char* op, const char* what, IntArrayRef v, int nd,
                                    int64_t fill) {
  KILN_CHECK(v.size() == 1 || static_cast<int>(v.size()) == nd, "[", op, "] expected ", what,
             " to be a single integer value or a list of ", nd, " values to match the ", nd,
             "-D operation, but got ", v);
  std::array<int64_t, 3> out{fill, fill, fill};
  for (int i = 0; i < nd; ++i) out[3 - nd + i] = v.size() == 1 ? v[0] : v[i];
  return out;
}

// [N, C, s...] (nd spatial dims) -> [N, C, 1.., s...] with 3 spatial dims.
Tensor to5d(const Tensor& t, int nd) {
  DimVector shape{t.size(0), t.size(1)};
  for (int i = nd; i < 3; ++i) shape.push_back(1);
  for (int i = 0; i < nd; ++i) shape.push_back(t.size(2 + i));
  return t.reshape(shape);
}
Tensor from5d(const Tensor& t, int nd) {
  DimVector shape{t.size(0), t.size(1)};
  for (int i = 0; i < nd; ++i) shape.push_back(t.size(5 - nd + i));
  return t.reshape(shape);
}

// Adds a batch dim to an unbatched input; returns whether it did.
bool batchify(const char* op, Tensor& input, int nd) {
  KILN_CHECK(input.defined(), "[", op, "] input is an undefined tensor");
  KILN_CHECK(input.dim() == nd + 1 || input.dim() == nd + 2, "[", op, "] Expected ", nd + 1,
             "D (unbatched) or ", nd + 2,
             "D (batched) input, but got input of size: ", input.sizes());
  if (input.dim() == nd + 1) {
    input = input.unsqueeze(0);
    return true;
  }
  return false;
}

Tensor conv_nd(const char* op, int nd, Tensor input, Tensor weight, Tensor bias, IntArrayRef stride,
               IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  if (KILN_UNLIKELY(detail::autocast_active()))  // Note [autocast lists]: convolutions go lower
    detail::autocast_args(detail::AutocastPolicy::Lower, {&input, &weight, &bias});
  const bool unbatched = batchify(op, input, nd);
  KILN_CHECK(weight.defined() && weight.dim() == nd + 2, "[", op, "] expected ", nd + 2,
             "-D weight, but got ", weight.defined() ? weight.sizes() : IntArrayRef());
  detail::ConvParams p;
  p.stride = expand_param(op, "stride", stride, nd, 1);
  p.padding = expand_param(op, "padding", padding, nd, 0);
  p.dilation = expand_param(op, "dilation", dilation, nd, 1);
  p.groups = groups;
  Tensor y = from5d(detail::convolution_op(to5d(input, nd), to5d(weight, nd), bias, p), nd);
  return unbatched ? y.squeeze(0) : y;
}

Tensor conv_nd_str(const char* op, int nd, const Tensor& input, const Tensor& weight,
                   const Tensor& bias, IntArrayRef stride, std::string_view padding,
                   IntArrayRef dilation, int64_t groups) {
  if (padding == "valid") return conv_nd(op, nd, input, weight, bias, stride, 0, dilation, groups);
  KILN_CHECK(padding == "same", "[", op, "] Invalid padding string '", padding,
             "', should be one of {'valid', 'same'}");
  for (int64_t s : stride)
    KILN_CHECK(s == 1, "[", op, "] padding='same' is not supported for strided convolutions");
  KILN_CHECK(weight.defined() && weight.dim() == nd + 2, "[", op, "] expected ", nd + 2,
             "-D weight");
  const auto dil = expand_param(op, "dilation", dilation, nd, 1);
  // Total padding d * (k - 1) per dim, the odd extra on the right: pad ceil(total / 2) on both
  // sides and drop the first output (Note [same padding]).
  DimVector pad;
  std::vector<bool> odd;
  for (int i = 0; i < nd; ++i) {
    const int64_t total = dil[3 - nd + i] * (weight.size(2 + i) - 1);
    pad.push_back((total + 1) / 2);
    odd.push_back(total % 2 == 1);
  }
  Tensor y = conv_nd(op, nd, input, weight, bias, stride, pad, dilation, groups);
  const int64_t first = input.dim() == nd + 1 ? 1 : 2;
  for (int i = 0; i < nd; ++i)
    if (odd[i]) y = y.narrow(first + i, 1, y.size(first + i) - 1);
  return y;
}

Tensor conv_transpose_nd(const char* op, int nd, Tensor input, Tensor weight, Tensor bias,
                         IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding,
                         int64_t groups, IntArrayRef dilation) {
  if (KILN_UNLIKELY(detail::autocast_active()))
    detail::autocast_args(detail::AutocastPolicy::Lower, {&input, &weight, &bias});
  const bool unbatched = batchify(op, input, nd);
  KILN_CHECK(weight.defined() && weight.dim() == nd + 2, "[", op, "] expected ", nd + 2,
             "-D weight, but got ", weight.defined() ? weight.sizes() : IntArrayRef());
  KILN_CHECK(groups > 0, "[", op, "] groups must be positive, but got ", groups);
  KILN_CHECK(input.size(1) == weight.size(0), "[", op, "] expected input with ", weight.size(0),
             " channels (weight of shape ", weight.sizes(), "), but got input of shape ",
             input.sizes());
  detail::ConvParams p;
  p.stride = expand_param(op, "stride", stride, nd, 1);
  p.padding = expand_param(op, "padding", padding, nd, 0);
  p.dilation = expand_param(op, "dilation", dilation, nd, 1);
  p.groups = groups;
  const auto opad = expand_param(op, "output_padding", output_padding, nd, 0);
  DimVector out{input.size(0), weight.size(1) * groups};
  for (int i = 0; i < 3; ++i) {
    KILN_CHECK(opad[i] >= 0 && (opad[i] < p.stride[i] || opad[i] < p.dilation[i]), "[", op,
               "] output padding must be smaller than either stride or dilation, but got "
               "output_padding=",
               opad[i], ", stride=", p.stride[i], ", dilation=", p.dilation[i]);
    const int64_t in = i < 3 - nd ? 1 : input.size(2 + i - (3 - nd));
    const int64_t k = i < 3 - nd ? 1 : weight.size(2 + i - (3 - nd));
    const int64_t o =
        (in - 1) * p.stride[i] - 2 * p.padding[i] + p.dilation[i] * (k - 1) + opad[i] + 1;
    KILN_CHECK(o > 0, "[", op, "] output size is too small: ", o);
    out.push_back(o);
  }
  if (bias.defined())
    KILN_CHECK(bias.dim() == 1 && bias.numel() == out[1], "[", op, "] expected bias of shape [",
               out[1], "], but got ", bias.sizes());
  Tensor y = detail::convolution_backward_input_op(to5d(input, nd), to5d(weight, nd), out, p);
  if (bias.defined()) y = y + bias.reshape({1, out[1], 1, 1, 1});
  y = from5d(y, nd);
  return unbatched ? y.squeeze(0) : y;
}

// ---- pooling helpers ----
std::array<int64_t, 2> pair(const char* op, const char* what, IntArrayRef v, int64_t fill) {
  KILN_CHECK(v.size() == 1 || v.size() == 2, "[", op, "] ", what,
             " must either be a single int, or a tuple of two ints, but got ", v);
  (void)fill;
  return {v[0], v.size() == 1 ? v[0] : v[1]};
}

detail::Pool2dParams pool_params(const char* op, IntArrayRef kernel, IntArrayRef stride,
                                 IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  detail::Pool2dParams p;
  p.kernel = pair(op, "kernel_size", kernel, 1);
  p.stride = stride.empty() ? p.kernel : pair(op, "stride", stride, 1);
  p.padding = pair(op, "padding", padding, 0);
  p.dilation = pair(op, "dilation", dilation, 1);
  p.ceil_mode = ceil_mode;
  return p;
}

// 1-D pooling parameters as 2-D ones with a unit first dim.
detail::Pool2dParams pool_params_1d(const char* op, IntArrayRef kernel, IntArrayRef stride,
                                    IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  auto one = [&](IntArrayRef v, const char* what) {
    KILN_CHECK(v.size() == 1, "[", op, "] ", what, " must be a single int, but got ", v);
    return v[0];
  };
  detail::Pool2dParams p;
  p.kernel = {1, one(kernel, "kernel_size")};
  p.stride = {1, stride.empty() ? p.kernel[1] : one(stride, "stride")};
  p.padding = {0, one(padding, "padding")};
  p.dilation = {1, one(dilation, "dilation")};
  p.ceil_mode = ceil_mode;
  return p;
}

// Runs f on a 4-D view of a 3-D/4-D (2-D pools) or 2-D/3-D (1-D pools, unit H inserted) input.
template <class F>
auto pooled(const char* op, Tensor input, int nd, const F& f) {
  const bool unbatched = batchify(op, input, nd);
  if (nd == 1) input = input.unsqueeze(2);
  auto fix = [&](Tensor t) {
    if (nd == 1) t = t.squeeze(2);
    return unbatched ? t.squeeze(0) : t;
  };
  auto r = f(input);
  if constexpr (std::is_same_v<decltype(r), Tensor>) {
    return fix(r);
  } else {
    return std::tuple<Tensor, Tensor>{fix(std::get<0>(r)), fix(std::get<1>(r))};
  }
}

std::array<int64_t, 2> adaptive_size(const char* op, IntArrayRef output_size, int nd) {
  if (nd == 1) {
    KILN_CHECK(output_size.size() == 1, "[", op, "] output_size must be a single int, but got ",
               output_size);
    return {1, output_size[0]};
  }
  return pair(op, "output_size", output_size, 1);
}

}  // namespace

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return conv_nd("conv1d", 1, input, weight, bias, stride, padding, dilation, groups);
}
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return conv_nd("conv2d", 2, input, weight, bias, stride, padding, dilation, groups);
}
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return conv_nd("conv3d", 3, input, weight, bias, stride, padding, dilation, groups);
}
Tensor conv_padding_str(int nd, const Tensor& input, const Tensor& weight, const Tensor& bias,
                        IntArrayRef stride, std::string_view padding, IntArrayRef dilation,
                        int64_t groups) {
  const char* op = nd == 1 ? "conv1d" : nd == 2 ? "conv2d" : "conv3d";
  KILN_CHECK(nd >= 1 && nd <= 3, "[conv] bad number of spatial dims ", nd);
  return conv_nd_str(op, nd, input, weight, bias, stride, padding, dilation, groups);
}
Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding,
                        int64_t groups, IntArrayRef dilation) {
  return conv_transpose_nd("conv_transpose1d", 1, input, weight, bias, stride, padding,
                           output_padding, groups, dilation);
}
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding,
                        int64_t groups, IntArrayRef dilation) {
  return conv_transpose_nd("conv_transpose2d", 2, input, weight, bias, stride, padding,
                           output_padding, groups, dilation);
}
Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        IntArrayRef stride, IntArrayRef padding, IntArrayRef output_padding,
                        int64_t groups, IntArrayRef dilation) {
  return conv_transpose_nd("conv_transpose3d", 3, input, weight, bias, stride, padding,
                           output_padding, groups, dilation);
}

// ---------------------------------------------------------------- pooling

std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, IntArrayRef kernel_size,
                                                   IntArrayRef stride, IntArrayRef padding,
                                                   IntArrayRef dilation, bool ceil_mode) {
  const auto p = pool_params_1d("max_pool1d", kernel_size, stride, padding, dilation, ceil_mode);
  return pooled("max_pool1d", input, 1,
                [&](const Tensor& x) { return detail::max_pool2d_op(x, p); });
}
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, IntArrayRef kernel_size,
                                                   IntArrayRef stride, IntArrayRef padding,
                                                   IntArrayRef dilation, bool ceil_mode) {
  const auto p = pool_params("max_pool2d", kernel_size, stride, padding, dilation, ceil_mode);
  return pooled("max_pool2d", input, 2,
                [&](const Tensor& x) { return detail::max_pool2d_op(x, p); });
}
Tensor max_pool1d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  return std::get<0>(
      max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode));
}
Tensor max_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  return std::get<0>(
      max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode));
}

Tensor max_unpool2d(const Tensor& input, const Tensor& indices, IntArrayRef kernel_size,
                    IntArrayRef stride, IntArrayRef padding, IntArrayRef output_size) {
  const char* op = "max_unpool2d";
  const auto p = pool_params(op, kernel_size, stride, padding, 1, false);
  Tensor x = input, idx = indices;
  const bool unbatched = batchify(op, x, 2);
  if (unbatched) idx = idx.unsqueeze(0);
  std::array<int64_t, 2> out;
  if (output_size.empty()) {
    for (int i = 0; i < 2; ++i)
      out[i] = (x.size(2 + i) - 1) * p.stride[i] - 2 * p.padding[i] + p.kernel[i];
  } else {
    KILN_CHECK(output_size.size() == 2 || output_size.size() == 4, "[", op,
               "] output_size must have 2 (or 4) elements, but got ", output_size);
    out = {output_size[output_size.size() - 2], output_size[output_size.size() - 1]};
  }
  KILN_CHECK(idx.defined() && idx.dtype() == kInt64, "[", op,
             "] elements in indices should be type int64 but got: ",
             idx.defined() ? dtype_name(idx.dtype()) : "undefined");
  KILN_CHECK(idx.sizes() == x.sizes(), "[", op,
             "] Expected shape of indices to be same as that of the input tensor (", x.sizes(),
             ") but got indices tensor with shape: ", idx.sizes());
  const int64_t plane = out[0] * out[1];
  if (idx.numel() > 0) {
    const int64_t lo = idx.min().item<int64_t>(), hi = idx.max().item<int64_t>();
    KILN_CHECK(lo >= 0 && hi < plane, "[", op, "] Found an invalid max index: ", lo < 0 ? lo : hi,
               " (output volumes are of size ", out[0], "x", out[1], ")");
  }
  // A scatter (not a sum) per plane: when indices repeat, the input element that comes last in
  // row-major order wins, as in PyTorch.
  const int64_t n = x.size(0), c = x.size(1);
  Tensor y = kiln::zeros({n, c, plane}, x.options())
                 .scatter(2, idx.reshape({n, c, -1}), x.reshape({n, c, -1}))
                 .reshape({n, c, out[0], out[1]});
  return unbatched ? y.squeeze(0) : y;
}

Tensor avg_pool1d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, bool ceil_mode, bool count_include_pad) {
  const auto p = pool_params_1d("avg_pool1d", kernel_size, stride, padding, 1, ceil_mode);
  return pooled("avg_pool1d", input, 1,
                [&](const Tensor& x) { return detail::avg_pool2d_op(x, p, count_include_pad, 0); });
}
Tensor avg_pool2d(const Tensor& input, IntArrayRef kernel_size, IntArrayRef stride,
                  IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                  std::optional<int64_t> divisor_override) {
  const auto p = pool_params("avg_pool2d", kernel_size, stride, padding, 1, ceil_mode);
  KILN_CHECK(!divisor_override || *divisor_override != 0, "[avg_pool2d] divisor must be not zero");
  return pooled("avg_pool2d", input, 2, [&](const Tensor& x) {
    return detail::avg_pool2d_op(x, p, count_include_pad, divisor_override.value_or(0));
  });
}

Tensor lp_pool1d(const Tensor& input, double norm_type, IntArrayRef kernel_size, IntArrayRef stride,
                 bool ceil_mode) {
  KILN_CHECK(kernel_size.size() == 1, "[lp_pool1d] kernel_size must be a single int");
  Tensor out = avg_pool1d(kiln::pow(input, norm_type), kernel_size, stride, 0, ceil_mode);
  return kiln::pow(
      kiln::sign(out) * kiln::relu(kiln::abs(out)) * static_cast<double>(kernel_size[0]),
      1.0 / norm_type);
}
Tensor lp_pool2d(const Tensor& input, double norm_type, IntArrayRef kernel_size, IntArrayRef stride,
                 bool ceil_mode) {
  const auto k = pair("lp_pool2d", "kernel_size", kernel_size, 1);
  Tensor out = avg_pool2d(kiln::pow(input, norm_type), kernel_size, stride, 0, ceil_mode);
  return kiln::pow(kiln::sign(out) * kiln::relu(kiln::abs(out)) * static_cast<double>(k[0] * k[1]),
                   1.0 / norm_type);
}

Tensor adaptive_avg_pool1d(const Tensor& input, IntArrayRef output_size) {
  const auto o = adaptive_size("adaptive_avg_pool1d", output_size, 1);
  return pooled("adaptive_avg_pool1d", input, 1,
                [&](const Tensor& x) { return detail::adaptive_avg_pool2d_op(x, o[0], o[1]); });
}
Tensor adaptive_avg_pool2d(const Tensor& input, IntArrayRef output_size) {
  const auto o = adaptive_size("adaptive_avg_pool2d", output_size, 2);
  return pooled("adaptive_avg_pool2d", input, 2,
                [&](const Tensor& x) { return detail::adaptive_avg_pool2d_op(x, o[0], o[1]); });
}
Tensor adaptive_max_pool1d(const Tensor& input, IntArrayRef output_size) {
  const auto o = adaptive_size("adaptive_max_pool1d", output_size, 1);
  return std::get<0>(pooled("adaptive_max_pool1d", input, 1, [&](const Tensor& x) {
    return detail::adaptive_max_pool2d_op(x, o[0], o[1]);
  }));
}
std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& input,
                                                            IntArrayRef output_size) {
  const auto o = adaptive_size("adaptive_max_pool2d", output_size, 2);
  return pooled("adaptive_max_pool2d", input, 2,
                [&](const Tensor& x) { return detail::adaptive_max_pool2d_op(x, o[0], o[1]); });
}
Tensor adaptive_max_pool2d(const Tensor& input, IntArrayRef output_size) {
  return std::get<0>(adaptive_max_pool2d_with_indices(input, output_size));
}

// ---------------------------------------------------------------- unfold / fold / shuffles

Tensor unfold(const Tensor& input, IntArrayRef kernel_size, IntArrayRef dilation,
              IntArrayRef padding, IntArrayRef stride) {
  const char* op = "unfold";
  Tensor x = input;
  const bool unbatched = batchify(op, x, 2);
  detail::Im2ColParams p{pair(op, "kernel_size", kernel_size, 1), pair(op, "dilation", dilation, 1),
                         pair(op, "padding", padding, 0), pair(op, "stride", stride, 1)};
  Tensor y = detail::im2col_op(x, p);
  return unbatched ? y.squeeze(0) : y;
}

Tensor fold(const Tensor& input, IntArrayRef output_size, IntArrayRef kernel_size,
            IntArrayRef dilation, IntArrayRef padding, IntArrayRef stride) {
  const char* op = "fold";
  KILN_CHECK(input.defined() && (input.dim() == 2 || input.dim() == 3), "[", op,
             "] Expected 2D or 3D (batch mode) tensor for input");
  Tensor x = input.dim() == 2 ? input.unsqueeze(0) : input;
  const auto o = pair(op, "output_size", output_size, 1);
  detail::Im2ColParams p{pair(op, "kernel_size", kernel_size, 1), pair(op, "dilation", dilation, 1),
                         pair(op, "padding", padding, 0), pair(op, "stride", stride, 1)};
  Tensor y = detail::col2im_op(x, o[0], o[1], p);
  return input.dim() == 2 ? y.squeeze(0) : y;
}

Tensor pixel_shuffle(const Tensor& input, int64_t upscale_factor) {
  const char* op = "pixel_shuffle";
  KILN_CHECK(input.defined() && input.dim() >= 3, "[", op,
             "] pixel_shuffle expects input to have at least 3 dimensions, but got input with ",
             input.defined() ? input.dim() : 0, " dimension(s)");
  const int64_t r = upscale_factor;
  KILN_CHECK(r > 0, "[", op, "] upscale_factor must be greater than 0, but got ", r);
  const int64_t c = input.size(-3), h = input.size(-2), w = input.size(-1);
  KILN_CHECK(c % (r * r) == 0, "[", op,
             "] pixel_shuffle expects its input's 'channel' dimension to be divisible by the "
             "square of upscale_factor, but input.size(-3)=",
             c, " is not divisible by ", r * r);
  const int64_t b = c == 0 || h == 0 || w == 0 ? 0 : input.numel() / (c * h * w);
  DimVector out(input.sizes().begin(), input.sizes().end() - 3);
  out.push_back(c / (r * r)), out.push_back(h * r), out.push_back(w * r);
  return input.reshape({b, c / (r * r), r, r, h, w}).permute({0, 1, 4, 2, 5, 3}).reshape(out);
}

Tensor pixel_unshuffle(const Tensor& input, int64_t downscale_factor) {
  const char* op = "pixel_unshuffle";
  KILN_CHECK(input.defined() && input.dim() >= 3, "[", op,
             "] pixel_unshuffle expects input to have at least 3 dimensions");
  const int64_t r = downscale_factor;
  KILN_CHECK(r > 0, "[", op, "] downscale_factor must be greater than 0, but got ", r);
  const int64_t c = input.size(-3), h = input.size(-2), w = input.size(-1);
  KILN_CHECK(h % r == 0 && w % r == 0, "[", op,
             "] pixel_unshuffle expects height and width to be divisible by downscale_factor, "
             "but got ",
             h, " and ", w, " for factor ", r);
  const int64_t b = c == 0 || h == 0 || w == 0 ? 0 : input.numel() / (c * h * w);
  DimVector out(input.sizes().begin(), input.sizes().end() - 3);
  out.push_back(c * r * r), out.push_back(h / r), out.push_back(w / r);
  return input.reshape({b, c, h / r, r, w / r, r}).permute({0, 1, 3, 5, 2, 4}).reshape(out);
}

Tensor affine_grid(const Tensor& theta, IntArrayRef size, bool align_corners) {
  const char* op = "affine_grid";
  KILN_CHECK(theta.defined() && theta.is_floating_point(), "[", op,
             "] Expected theta to have floating point type");
  KILN_CHECK(size.size() == 4 || size.size() == 5, "[", op,
             "] affine_grid only supports 4D and 5D sizes, but got ", size);
  const int64_t nd = static_cast<int64_t>(size.size()) - 2;  // spatial dims
  KILN_CHECK(theta.dim() == 3 && theta.size(0) == size[0] && theta.size(1) == nd &&
                 theta.size(2) == nd + 1,
             "[", op, "] Expected a batch of ", nd, "D affine matrices of shape Nx", nd, "x",
             nd + 1, " for size ", size, ". Got ", theta.sizes());
  // Normalized coordinates of each spatial dim (x = last dim first in the grid's last axis).
  auto coords = [&](int64_t n) {
    Tensor t = kiln::linspace(-1.0, 1.0, n, theta.options());
    if (!align_corners && n > 0) t = t * (static_cast<double>(n - 1) / static_cast<double>(n));
    if (n == 1) t = t * 0;
    return t;
  };
  DimVector spatial(size.begin() + 2, size.end());
  DimVector base_shape(spatial.begin(), spatial.end());
  base_shape.push_back(nd + 1);
  Tensor base = kiln::empty(base_shape, theta.options());
  for (int64_t k = 0; k < nd; ++k) {
    const int64_t dim = nd - 1 - k;  // grid component k walks spatial dim `dim`
    DimVector view(nd, 1);
    view[dim] = spatial[dim];
    base.select(nd, k).copy_(coords(spatial[dim]).reshape(view).expand(spatial));
  }
  base.select(nd, nd).fill_(1.0);
  int64_t points = 1;
  for (int64_t s : spatial) points *= s;
  Tensor grid = kiln::matmul(base.reshape({1, points, nd + 1}), theta.transpose(1, 2));
  DimVector out{size[0]};
  for (int64_t s : spatial) out.push_back(s);
  out.push_back(nd);
  return grid.reshape(out);
}

}  // namespace kiln::nn::functional
