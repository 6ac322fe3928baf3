// Linear, Bilinear, Flatten, Unflatten.
#include "kiln/nn/modules/linear.h"

#include <cmath>

#include "amp/autocast_state.h"
#include "kiln/nn/functional.h"
#include "kiln/nn/init.h"
#include "kiln/ops/factories.h"
#include "nn/modules/repr.h"

namespace kiln::nn {

namespace F = functional;

LinearImpl::LinearImpl(int64_t in, int64_t out, bool with_bias, DType dtype)
    : Module("Linear"), in_features(in), out_features(out) {
  KILN_CHECK(in >= 0 && out >= 0, "[Linear] features must be non-negative, got ", in, " and ", out);
  weight = register_parameter("weight", kiln::empty({out, in}, TensorOptions(dtype)));
  bias =
      register_parameter("bias", with_bias ? kiln::empty({out}, TensorOptions(dtype)) : Tensor());
  reset_parameters();
}

void LinearImpl::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const double bound = in_features > 0 ? 1 / std::sqrt(static_cast<double>(in_features)) : 0;
    init::uniform_(bias, -bound, bound);
  }
}

// Under autocast the module casts its own arguments (kiln::linear checks dtypes first).
Tensor LinearImpl::forward(const Tensor& x) {
  if (!kiln::detail::autocast_active()) return F::linear(x, weight, bias);
  Tensor a = x, w = weight, b = bias;
  kiln::detail::autocast_args(kiln::detail::AutocastPolicy::Lower, {&a, &w, &b});
  return F::linear(a, w, b);
}

std::string LinearImpl::extra_repr() const {
  return "in_features=" + std::to_string(in_features) +
         ", out_features=" + std::to_string(out_features) +
         ", bias=" + repr::py_bool(bias.defined());
}

BilinearImpl::BilinearImpl(int64_t in1, int64_t in2, int64_t out, bool with_bias)
    : Module("Bilinear"), in1_features(in1), in2_features(in2), out_features(out) {
  weight = register_parameter("weight", kiln::empty({out, in1, in2}));
  bias = register_parameter("bias", with_bias ? kiln::empty({out}) : Tensor());
  reset_parameters();
}

void BilinearImpl::reset_parameters() {
  const double bound = 1 / std::sqrt(static_cast<double>(weight.size(1)));
  init::uniform_(weight, -bound, bound);
  if (bias.defined()) init::uniform_(bias, -bound, bound);
}

Tensor BilinearImpl::forward(const Tensor& x1, const Tensor& x2) {
  if (!kiln::detail::autocast_active()) return F::bilinear(x1, x2, weight, bias);
  Tensor a = x1, c = x2, w = weight, b = bias;
  kiln::detail::autocast_args(kiln::detail::AutocastPolicy::Lower, {&a, &c, &w, &b});
  return F::bilinear(a, c, w, b);
}

std::string BilinearImpl::extra_repr() const {
  return "in1_features=" + std::to_string(in1_features) +
         ", in2_features=" + std::to_string(in2_features) +
         ", out_features=" + std::to_string(out_features) +
         ", bias=" + repr::py_bool(bias.defined());
}

std::string FlattenImpl::extra_repr() const {
  return "start_dim=" + std::to_string(start_dim) + ", end_dim=" + std::to_string(end_dim);
}

std::string UnflattenImpl::extra_repr() const {
  return "dim=" + std::to_string(dim) + ", unflattened_size=" + repr::py_tuple(sizes);
}

}  // namespace kiln::nn
