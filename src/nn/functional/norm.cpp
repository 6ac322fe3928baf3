// kiln::nn::functional normalization: layer_norm / rms_norm (fused primitives), batch_norm,
// instance_norm, group_norm, local_response_norm and normalize (composites over reductions).
#include <limits>

#include "amp/autocast_state.h"
#include "kiln/nn/functional/conv.h"
#include "kiln/nn/functional/norm.h"
#include "kiln/ops.h"
#include "nn/functional/nn_ops.h"

namespace kiln::nn::functional {
namespace {

int64_t trailing_numel(const char* op, const Tensor& input, IntArrayRef normalized_shape) {
  KILN_CHECK(input.defined(), "[", op, "] input is an undefined tensor");
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  KILN_CHECK(k >= 1, "[", op, "] normalized_shape must have at least one dim");
  bool ok = input.dim() >= k;
  for (int64_t i = 0; ok && i < k; ++i) ok = input.size(input.dim() - k + i) == normalized_shape[i];
  KILN_CHECK(ok, "[", op, "] Given normalized_shape=", normalized_shape,
             ", expected input with shape [*, ", normalized_shape, "], but got input of size ",
             input.sizes());
  int64_t m = 1;
  for (int64_t s : normalized_shape) m *= s;
  return m;
}

void check_param_shape(const char* op, const Tensor& p, IntArrayRef shape, const char* what) {
  if (!p.defined()) return;
  KILN_CHECK(p.sizes() == shape, "[", op, "] expected ", what, " of shape ", shape, ", but got ",
             p.sizes());
}

// [1, C, 1, ...] view of a per-channel [C] tensor for an input of `dim` dims.
Tensor channel_view(const Tensor& t, int64_t c, int64_t dim) {
  DimVector shape(dim, 1);
  shape[1] = c;
  return t.reshape(shape);
}

double machine_eps(DType d) {
  switch (d) {
    case DType::Float64:
      return std::numeric_limits<double>::epsilon();
    case DType::Float16:
      return 0.0009765625;
    case DType::BFloat16:
      return 0.0078125;
    default:
      return std::numeric_limits<float>::epsilon();
  }
}

void check_nc(const char* op, const Tensor& input, int64_t min_dim) {
  KILN_CHECK(input.defined(), "[", op, "] input is an undefined tensor");
  KILN_CHECK(input.is_floating_point(), "[", op, "] expected a floating point input, but got ",
             dtype_name(input.dtype()));
  KILN_CHECK(input.dim() >= min_dim, "[", op, "] expected at least ", min_dim, "-D input, but got ",
             input.dim(), "-D of shape ", input.sizes());
}

// y = (x - mean) * rsqrt(var + eps) [* weight] [+ bias], per channel (dim 1).
Tensor normalize_channels(const Tensor& x, const Tensor& mean, const Tensor& var,
                          const Tensor& weight, const Tensor& bias, double eps) {
  const int64_t c = x.size(1);
  Tensor y = (x - mean) * kiln::rsqrt(var + eps);
  if (weight.defined()) y = y * channel_view(weight, c, x.dim());
  if (bias.defined()) y = y + channel_view(bias, c, x.dim());
  return y;
}

// running = (1 - momentum) * running + momentum * value, in place.
void update_running(const Tensor& running, const Tensor& value, double momentum) {
  if (!running.defined()) return;
  Tensor r = running;
  r.copy_(running * (1.0 - momentum) + value.detach().reshape(running.sizes()) * momentum);
}

}  // namespace

Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  Tensor x = input, w = weight, b = bias;
  if (KILN_UNLIKELY(detail::autocast_active()))  // Note [autocast lists]: norms run in float32
    detail::autocast_args(detail::AutocastPolicy::Float32, {&x, &w, &b});
  const int64_t m = trailing_numel("layer_norm", x, normalized_shape);
  check_param_shape("layer_norm", w, normalized_shape, "weight");
  check_param_shape("layer_norm", b, normalized_shape, "bias");
  return std::get<0>(detail::layer_norm_op(x, m, w, b, eps));
}

Tensor rms_norm(const Tensor& input, IntArrayRef normalized_shape, const Tensor& weight,
                std::optional<double> eps) {
  Tensor x = input, w = weight;
  if (KILN_UNLIKELY(detail::autocast_active()))
    detail::autocast_args(detail::AutocastPolicy::Float32, {&x, &w});
  const int64_t m = trailing_numel("rms_norm", x, normalized_shape);
  check_param_shape("rms_norm", w, normalized_shape, "weight");
  return std::get<0>(detail::rms_norm_op(x, m, w, eps ? *eps : machine_eps(x.dtype())));
}

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum,
                  double eps) {
  const char* op = "batch_norm";
  check_nc(op, input, 2);
  const int64_t c = input.size(1);
  for (const Tensor* t : {&running_mean, &running_var, &weight, &bias})
    if (t->defined())
      KILN_CHECK(t->numel() == c, "[", op, "] expected per-channel tensors of ", c,
                 " elements, but got shape ", t->sizes());
  DimVector dims{0};
  for (int64_t d = 2; d < input.dim(); ++d) dims.push_back(d);
  if (!training) {
    KILN_CHECK(running_mean.defined() && running_var.defined(), "[", op,
               "] running_mean and running_var must be defined in evaluation mode");
    return normalize_channels(input, channel_view(running_mean, c, input.dim()),
                              channel_view(running_var, c, input.dim()), weight, bias, eps);
  }
  const int64_t n = c == 0 ? 0 : input.numel() / c;
  KILN_CHECK(n > 1, "[", op,
             "] Expected more than 1 value per channel when training, got input size ",
             input.sizes());
  auto [var, mean] = kiln::var_mean(input, dims, 0, true);
  update_running(running_mean, mean, momentum);
  update_running(running_var, var * (static_cast<double>(n) / static_cast<double>(n - 1)),
                 momentum);
  return normalize_channels(input, mean, var, weight, bias, eps);
}

Tensor instance_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                     const Tensor& weight, const Tensor& bias, bool use_input_stats,
                     double momentum, double eps) {
  const char* op = "instance_norm";
  check_nc(op, input, 2);
  const int64_t c = input.size(1);
  if (!use_input_stats) {
    KILN_CHECK(running_mean.defined() && running_var.defined(), "[", op,
               "] Expected running_mean and running_var to be defined when use_input_stats is "
               "false");
    return normalize_channels(input, channel_view(running_mean, c, input.dim()),
                              channel_view(running_var, c, input.dim()), weight, bias, eps);
  }
  DimVector dims;
  int64_t n = 1;
  for (int64_t d = 2; d < input.dim(); ++d) dims.push_back(d), n *= input.size(d);
  KILN_CHECK(n > 1, "[", op,
             "] Expected more than 1 spatial element when training, got input size ",
             input.sizes());
  auto [var, mean] = kiln::var_mean(input, dims, 0, true);
  if (running_mean.defined()) update_running(running_mean, mean.mean(IntArrayRef{0}), momentum);
  if (running_var.defined())
    update_running(
        running_var,
        (var * (static_cast<double>(n) / static_cast<double>(n - 1))).mean(IntArrayRef{0}),
        momentum);
  return normalize_channels(input, mean, var, weight, bias, eps);
}

Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight, const Tensor& bias,
                  double eps) {
  const char* op = "group_norm";
  check_nc(op, input, 2);
  const int64_t n = input.size(0), c = input.size(1);
  KILN_CHECK(num_groups > 0 && c % num_groups == 0, "[", op,
             "] Expected number of channels in input to be divisible by num_groups, but got "
             "input of shape ",
             input.sizes(), " and num_groups=", num_groups);
  for (const Tensor* t : {&weight, &bias})
    if (t->defined())
      KILN_CHECK(t->numel() == c, "[", op, "] expected per-channel tensors of ", c,
                 " elements, but got shape ", t->sizes());
  Tensor g = input.reshape({n, num_groups, -1});
  auto [var, mean] = kiln::var_mean(g, IntArrayRef{2}, 0, true);
  Tensor y = ((g - mean) * kiln::rsqrt(var + eps)).reshape(input.sizes());
  if (weight.defined()) y = y * channel_view(weight, c, input.dim());
  if (bias.defined()) y = y + channel_view(bias, c, input.dim());
  return y;
}

Tensor local_response_norm(const Tensor& input, int64_t size, double alpha, double beta, double k) {
  const char* op = "local_response_norm";
  check_nc(op, input, 3);
  KILN_CHECK(size > 0, "[", op, "] size must be positive, but got ", size);
  const int64_t n = input.size(0), c = input.size(1);
  const int64_t l = c == 0 || n == 0 ? 0 : input.numel() / (n * c);
  // Sum of squares over the channel window [c - size/2, c + (size-1)/2]: a [size, 1] box
  // convolution over a [N, 1, C, L] view, padded by size/2 on both sides, first C rows kept.
  Tensor sq = (input * input).reshape({n, 1, c, l});
  Tensor box = kiln::ones({1, 1, size, 1}, input.options()) / static_cast<double>(size);
  Tensor div = conv2d(sq, box, Tensor(), 1, {size / 2, 0}).narrow(2, 0, c).reshape(input.sizes());
  return input / kiln::pow(div * alpha + k, beta);
}

Tensor normalize(const Tensor& input, double p, int64_t dim, double eps) {
  KILN_CHECK(input.defined(), "[normalize] input is an undefined tensor");
  Tensor norm = kiln::linalg::vector_norm(input, p, dim, true);
  return input / kiln::clamp_min(norm, Scalar(eps));
}

}  // namespace kiln::nn::functional
