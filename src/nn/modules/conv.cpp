// Convolution and pooling modules.
#include "kiln/nn/modules/conv.h"

#include <cmath>

#include "amp/autocast_state.h"
#include "kiln/nn/functional.h"
#include "kiln/nn/init.h"
#include "kiln/nn/modules/pooling.h"
#include "kiln/ops/factories.h"
#include "nn/modules/repr.h"

namespace kiln::nn {

namespace F = functional;

std::vector<int64_t> IntList::expand(size_t n, const char* what) const {
  if (values.size() == 1) return std::vector<int64_t>(n, values[0]);
  KILN_CHECK(values.size() == n, "[", what, "] expected 1 or ", n, " values, got ", values.size());
  return values;
}

namespace {
// int for a scalar argument, tuple otherwise (as PyTorch prints what it was given).
std::string show(const IntList& v) {
  return v.scalar ? std::to_string(v.values[0]) : repr::py_tuple(v.values);
}
bool all_eq(const std::vector<int64_t>& v, int64_t x) {
  for (int64_t e : v)
    if (e != x) return false;
  return true;
}
}  // namespace

ConvNdImpl::ConvNdImpl(std::string name, size_t dims, bool transposed_, int64_t in, int64_t out,
                       IntList k, IntList s, IntList p, IntList op, IntList d, int64_t g,
                       bool with_bias)
    : Module(std::move(name)),
      in_channels(in),
      out_channels(out),
      groups(g),
      transposed(transposed_),
      dims_(dims) {
  const std::string n = this->name();
  kernel_size = k.expand(dims, n.c_str());
  stride = s.expand(dims, n.c_str());
  padding = p.expand(dims, n.c_str());
  output_padding = op.expand(dims, n.c_str());
  dilation = d.expand(dims, n.c_str());
  KILN_CHECK(g > 0 && in % g == 0 && out % g == 0, "[", n,
             "] in_channels and out_channels must be divisible by groups (", in, ", ", out,
             ", groups=", g, ")");
  std::vector<int64_t> shape =
      transposed ? std::vector<int64_t>{in, out / g} : std::vector<int64_t>{out, in / g};
  shape.insert(shape.end(), kernel_size.begin(), kernel_size.end());
  weight = register_parameter("weight", kiln::empty(shape));
  bias = register_parameter("bias", with_bias ? kiln::empty({out}) : Tensor());
  reset_parameters();
}

void ConvNdImpl::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const int64_t fan_in = init::calculate_fan_in_and_fan_out(weight).first;
    const double bound = fan_in > 0 ? 1 / std::sqrt(static_cast<double>(fan_in)) : 0;
    init::uniform_(bias, -bound, bound);
  }
}

Tensor ConvNdImpl::forward(const Tensor& input) {
  // Under autocast the module casts its own arguments (the conv front ends check dtypes first).
  Tensor x = input, w = weight, b = bias;
  if (kiln::detail::autocast_active())
    kiln::detail::autocast_args(kiln::detail::AutocastPolicy::Lower, {&x, &w, &b});
  if (transposed) {
    switch (dims_) {
      case 1:
        return F::conv_transpose1d(x, w, b, stride, padding, output_padding, groups, dilation);
      case 2:
        return F::conv_transpose2d(x, w, b, stride, padding, output_padding, groups, dilation);
      default:
        return F::conv_transpose3d(x, w, b, stride, padding, output_padding, groups, dilation);
    }
  }
  switch (dims_) {
    case 1:
      return F::conv1d(x, w, b, stride, padding, dilation, groups);
    case 2:
      return F::conv2d(x, w, b, stride, padding, dilation, groups);
    default:
      return F::conv3d(x, w, b, stride, padding, dilation, groups);
  }
}

std::string ConvNdImpl::extra_repr() const {
  std::string s = std::to_string(in_channels) + ", " + std::to_string(out_channels) +
                  ", kernel_size=" + repr::py_tuple(kernel_size) +
                  ", stride=" + repr::py_tuple(stride);
  if (!all_eq(padding, 0)) s += ", padding=" + repr::py_tuple(padding);
  if (!all_eq(dilation, 1)) s += ", dilation=" + repr::py_tuple(dilation);
  if (!all_eq(output_padding, 0)) s += ", output_padding=" + repr::py_tuple(output_padding);
  if (groups != 1) s += ", groups=" + std::to_string(groups);
  if (!bias.defined()) s += ", bias=False";
  return s;
}

// ---- pooling ----

MaxPoolImpl::MaxPoolImpl(std::string name, size_t dims, IntList k, IntList s, IntList p, IntList d,
                         bool ceil)
    : Module(std::move(name)),
      kernel_size(std::move(k)),
      stride(std::move(s)),
      padding(std::move(p)),
      dilation(std::move(d)),
      ceil_mode(ceil),
      dims_(dims) {
  if (stride.values.empty()) stride = kernel_size;
}

Tensor MaxPoolImpl::forward(const Tensor& x) {
  if (dims_ == 1)
    return F::max_pool1d(x, kernel_size.values, stride.values, padding.values, dilation.values,
                         ceil_mode);
  return F::max_pool2d(x, kernel_size.values, stride.values, padding.values, dilation.values,
                       ceil_mode);
}

std::tuple<Tensor, Tensor> MaxPoolImpl::forward_with_indices(const Tensor& x) {
  if (dims_ == 1)
    return F::max_pool1d_with_indices(x, kernel_size.values, stride.values, padding.values,
                                      dilation.values, ceil_mode);
  return F::max_pool2d_with_indices(x, kernel_size.values, stride.values, padding.values,
                                    dilation.values, ceil_mode);
}

std::string MaxPoolImpl::extra_repr() const {
  return "kernel_size=" + show(kernel_size) + ", stride=" + show(stride) +
         ", padding=" + show(padding) + ", dilation=" + show(dilation) +
         ", ceil_mode=" + repr::py_bool(ceil_mode);
}

AvgPoolImpl::AvgPoolImpl(std::string name, size_t dims, IntList k, IntList s, IntList p, bool ceil,
                         bool include_pad)
    : Module(std::move(name)),
      kernel_size(std::move(k)),
      stride(std::move(s)),
      padding(std::move(p)),
      ceil_mode(ceil),
      count_include_pad(include_pad),
      dims_(dims) {
  if (stride.values.empty()) stride = kernel_size;
}

Tensor AvgPoolImpl::forward(const Tensor& x) {
  if (dims_ == 1)
    return F::avg_pool1d(x, kernel_size.values, stride.values, padding.values, ceil_mode,
                         count_include_pad);
  return F::avg_pool2d(x, kernel_size.values, stride.values, padding.values, ceil_mode,
                       count_include_pad);
}

std::string AvgPoolImpl::extra_repr() const {
  return "kernel_size=" + show(kernel_size) + ", stride=" + show(stride) +
         ", padding=" + show(padding);
}

Tensor AdaptiveAvgPool1dImpl::forward(const Tensor& x) {
  return F::adaptive_avg_pool1d(x, output_size.values);
}
Tensor AdaptiveAvgPool2dImpl::forward(const Tensor& x) {
  return F::adaptive_avg_pool2d(x, output_size.values);
}
Tensor AdaptiveMaxPool1dImpl::forward(const Tensor& x) {
  return F::adaptive_max_pool1d(x, output_size.values);
}
Tensor AdaptiveMaxPool2dImpl::forward(const Tensor& x) {
  return F::adaptive_max_pool2d(x, output_size.values);
}
std::string AdaptiveAvgPool1dImpl::extra_repr() const { return "output_size=" + show(output_size); }
std::string AdaptiveAvgPool2dImpl::extra_repr() const { return "output_size=" + show(output_size); }
std::string AdaptiveMaxPool1dImpl::extra_repr() const { return "output_size=" + show(output_size); }
std::string AdaptiveMaxPool2dImpl::extra_repr() const { return "output_size=" + show(output_size); }

Tensor PixelShuffleImpl::forward(const Tensor& x) { return F::pixel_shuffle(x, upscale_factor); }
Tensor PixelUnshuffleImpl::forward(const Tensor& x) {
  return F::pixel_unshuffle(x, downscale_factor);
}

}  // namespace kiln::nn
