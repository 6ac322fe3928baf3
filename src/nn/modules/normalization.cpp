// LayerNorm, RMSNorm, GroupNorm, BatchNorm*, InstanceNorm*.
#include "kiln/nn/modules/normalization.h"

#include "amp/autocast_state.h"
#include "kiln/nn/functional.h"
#include "kiln/nn/init.h"
#include "kiln/ops/factories.h"
#include "nn/grad_scope.h"
#include "nn/modules/repr.h"

namespace kiln::nn {

namespace F = functional;
using repr::py_bool;
using repr::py_float;

LayerNormImpl::LayerNormImpl(std::vector<int64_t> shape, double eps, bool affine, bool with_bias)
    : Module("LayerNorm"),
      normalized_shape(std::move(shape)),
      eps(eps),
      elementwise_affine(affine) {
  if (affine) {
    weight = register_parameter("weight", kiln::empty(normalized_shape));
    bias = register_parameter("bias", with_bias ? kiln::empty(normalized_shape) : Tensor());
  }
  reset_parameters();
}
void LayerNormImpl::reset_parameters() {
  if (weight.defined()) init::ones_(weight);
  if (bias.defined()) init::zeros_(bias);
}
// Under autocast the norms run in float32 (PyTorch's list); the modules cast their own
// arguments because the functional front ends check dtypes first.
Tensor LayerNormImpl::forward(const Tensor& x) {
  if (kiln::detail::autocast_active()) {
    Tensor a = x, w = weight, b = bias;
    kiln::detail::autocast_args(kiln::detail::AutocastPolicy::Float32, {&a, &w, &b});
    return F::layer_norm(a, normalized_shape, w, b, eps);
  }
  return F::layer_norm(x, normalized_shape, weight, bias, eps);
}
std::string LayerNormImpl::extra_repr() const {
  return repr::py_tuple(normalized_shape) + ", eps=" + py_float(eps) +
         ", elementwise_affine=" + py_bool(elementwise_affine);
}

RMSNormImpl::RMSNormImpl(std::vector<int64_t> shape, std::optional<double> eps, bool affine)
    : Module("RMSNorm"), normalized_shape(std::move(shape)), eps(eps), elementwise_affine(affine) {
  if (affine) weight = register_parameter("weight", kiln::empty(normalized_shape));
  reset_parameters();
}
void RMSNormImpl::reset_parameters() {
  if (weight.defined()) init::ones_(weight);
}
Tensor RMSNormImpl::forward(const Tensor& x) {
  if (kiln::detail::autocast_active()) {
    Tensor a = x, w = weight;
    kiln::detail::autocast_args(kiln::detail::AutocastPolicy::Float32, {&a, &w});
    return F::rms_norm(a, normalized_shape, w, eps);
  }
  return F::rms_norm(x, normalized_shape, weight, eps);
}
std::string RMSNormImpl::extra_repr() const {
  return repr::py_tuple(normalized_shape) + ", eps=" + (eps ? py_float(*eps) : "None") +
         ", elementwise_affine=" + py_bool(elementwise_affine);
}

GroupNormImpl::GroupNormImpl(int64_t groups, int64_t channels, double eps, bool affine)
    : Module("GroupNorm"), num_groups(groups), num_channels(channels), eps(eps), affine(affine) {
  KILN_CHECK(groups > 0 && channels % groups == 0,
             "[GroupNorm] num_channels must be divisible by num_groups, got ", channels, " and ",
             groups);
  if (affine) {
    weight = register_parameter("weight", kiln::empty({channels}));
    bias = register_parameter("bias", kiln::empty({channels}));
  }
  reset_parameters();
}
void GroupNormImpl::reset_parameters() {
  if (affine) {
    init::ones_(weight);
    init::zeros_(bias);
  }
}
Tensor GroupNormImpl::forward(const Tensor& x) {
  if (kiln::detail::autocast_active()) {
    Tensor a = x, w = weight, b = bias;
    kiln::detail::autocast_args(kiln::detail::AutocastPolicy::Float32, {&a, &w, &b});
    return F::group_norm(a, num_groups, w, b, eps);
  }
  return F::group_norm(x, num_groups, weight, bias, eps);
}
std::string GroupNormImpl::extra_repr() const {
  return std::to_string(num_groups) + ", " + std::to_string(num_channels) +
         ", eps=" + py_float(eps) + ", affine=" + py_bool(affine);
}

NormBase::NormBase(std::string name, int64_t n, double eps, std::optional<double> momentum,
                   bool affine, bool track)
    : Module(std::move(name)),
      num_features(n),
      eps(eps),
      momentum(momentum),
      affine(affine),
      track_running_stats(track) {
  if (affine) {
    weight = register_parameter("weight", kiln::empty({n}));
    bias = register_parameter("bias", kiln::empty({n}));
  }
  if (track) {
    running_mean = register_buffer("running_mean", kiln::zeros({n}));
    running_var = register_buffer("running_var", kiln::ones({n}));
    num_batches_tracked =
        register_buffer("num_batches_tracked", kiln::zeros({}, TensorOptions(kInt64)));
  }
  reset_parameters();
}
void NormBase::reset_running_stats() {
  if (!track_running_stats) return;
  kiln::detail::NoGradScope ng;
  running_mean.zero_();
  running_var.fill_(1);
  num_batches_tracked.zero_();
}
void NormBase::reset_parameters() {
  reset_running_stats();
  if (affine) {
    init::ones_(weight);
    init::zeros_(bias);
  }
}
std::string NormBase::extra_repr() const {
  return std::to_string(num_features) + ", eps=" + py_float(eps) +
         ", momentum=" + (momentum ? py_float(*momentum) : "None") + ", affine=" + py_bool(affine) +
         ", track_running_stats=" + py_bool(track_running_stats);
}
void NormBase::check_dims(const Tensor& x, int64_t a, int64_t b) const {
  KILN_CHECK(x.dim() == a || x.dim() == b, "[", name(), "] expected ",
             a == b ? std::to_string(a) : std::to_string(a) + "D or " + std::to_string(b),
             "D input (got ", x.dim(), "D input)");
}

BatchNormImpl::BatchNormImpl(std::string name, int64_t a, int64_t b, int64_t n, double eps,
                             std::optional<double> momentum, bool affine, bool track)
    : NormBase(std::move(name), n, eps, momentum, affine, track), dims_a_(a), dims_b_(b) {}

Tensor BatchNormImpl::forward(const Tensor& x) {
  check_dims(x, dims_a_, dims_b_);
  double factor = momentum ? *momentum : 0.0;
  if (is_training() && track_running_stats) {
    {
      kiln::detail::NoGradScope ng;
      num_batches_tracked.add_(1);
    }
    if (!momentum) factor = 1.0 / static_cast<double>(num_batches_tracked.item<int64_t>());
  }
  const bool use_batch_stats = is_training() || !track_running_stats;
  const bool pass_running = !is_training() || track_running_stats;
  return F::batch_norm(x, pass_running ? running_mean : Tensor(),
                       pass_running ? running_var : Tensor(), weight, bias, use_batch_stats, factor,
                       eps);
}

InstanceNormImpl::InstanceNormImpl(std::string name, int64_t dims, int64_t n, double eps,
                                   std::optional<double> momentum, bool affine, bool track)
    : NormBase(std::move(name), n, eps, momentum, affine, track), dims_(dims) {}

Tensor InstanceNormImpl::forward(const Tensor& x) {
  check_dims(x, dims_ - 1, dims_);
  if (x.dim() == dims_ - 1) return forward(x.unsqueeze(0)).squeeze(0);
  const bool use_input_stats = is_training() || !track_running_stats;
  return F::instance_norm(x, running_mean, running_var, weight, bias, use_input_stats,
                          momentum ? *momentum : 0.1, eps);
}

}  // namespace kiln::nn
