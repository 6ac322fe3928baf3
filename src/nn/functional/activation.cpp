// kiln::nn::functional activations (composites of elementwise primitives), the softmax family
// (fused primitives) and dropout (the fused native_dropout primitive; Philox bernoulli masks for
// the feature/alpha variants).
#include <cmath>

#include "kiln/nn/functional/activation.h"
#include "kiln/ops.h"
#include "nn/functional/nn_ops.h"

namespace kiln::nn::functional {
namespace {

// Writes r into input for inplace = true (PyTorch's in-place variants), else returns r.
Tensor maybe_inplace(const Tensor& input, const Tensor& r, bool inplace) {
  if (!inplace) return r;
  Tensor t = input;
  t.copy_(r);
  return t;
}

void check_floating(const char* op, const Tensor& x) {
  KILN_CHECK(x.defined(), "[", op, "] input is an undefined tensor");
  KILN_CHECK(x.is_floating_point(), "[", op, "] expected a floating point input, but got ",
             dtype_name(x.dtype()));
}

constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;

}  // namespace

Tensor relu(const Tensor& input, bool inplace) {
  return maybe_inplace(input, kiln::relu(input), inplace);
}
Tensor relu6(const Tensor& input, bool inplace) { return hardtanh(input, 0.0, 6.0, inplace); }
Tensor leaky_relu(const Tensor& input, double negative_slope, bool inplace) {
  return maybe_inplace(input, kiln::where(input > 0, input, input * negative_slope), inplace);
}
Tensor elu(const Tensor& input, double alpha, bool inplace) {
  check_floating("elu", input);
  return maybe_inplace(input, kiln::where(input > 0, input, kiln::expm1(input) * alpha), inplace);
}
Tensor selu(const Tensor& input, bool inplace) {
  check_floating("selu", input);
  return maybe_inplace(input, elu(input, kSeluAlpha) * kSeluScale, inplace);
}
Tensor celu(const Tensor& input, double alpha, bool inplace) {
  check_floating("celu", input);
  KILN_CHECK(alpha != 0, "[celu] ZeroDivisionError: alpha cannot be 0 for CELU");
  return maybe_inplace(input, kiln::where(input > 0, input, kiln::expm1(input / alpha) * alpha),
                       inplace);
}
Tensor gelu(const Tensor& input, std::string_view approximate) {
  return kiln::gelu(input, approximate);
}
Tensor silu(const Tensor& input, bool inplace) {
  return maybe_inplace(input, kiln::silu(input), inplace);
}
Tensor mish(const Tensor& input, bool inplace) {
  check_floating("mish", input);
  return maybe_inplace(input, input * kiln::tanh(kiln::softplus(input)), inplace);
}
Tensor hardtanh(const Tensor& input, double min_val, double max_val, bool inplace) {
  KILN_CHECK(max_val >= min_val, "[hardtanh] max_val (", max_val, ") cannot be less than min_val (",
             min_val, ")");
  return maybe_inplace(input, kiln::clamp(input, Scalar(min_val), Scalar(max_val)), inplace);
}
Tensor hardsigmoid(const Tensor& input, bool inplace) {
  check_floating("hardsigmoid", input);
  return maybe_inplace(input, kiln::clamp(input / 6.0 + 0.5, Scalar(0.0), Scalar(1.0)), inplace);
}
Tensor hardswish(const Tensor& input, bool inplace) {
  check_floating("hardswish", input);
  return maybe_inplace(input, input * kiln::clamp(input / 6.0 + 0.5, Scalar(0.0), Scalar(1.0)),
                       inplace);
}
Tensor softplus(const Tensor& input, double beta, double threshold) {
  return kiln::softplus(input, beta, threshold);
}
Tensor softsign(const Tensor& input) { return input / (kiln::abs(input) + 1); }
Tensor logsigmoid(const Tensor& input) {
  check_floating("logsigmoid", input);
  // min(x, 0) - log1p(exp(-|x|)): no overflow for either sign.
  return kiln::clamp_max(input, Scalar(0.0)) - kiln::log1p(kiln::exp(-kiln::abs(input)));
}
Tensor sigmoid(const Tensor& input) { return kiln::sigmoid(input); }
Tensor tanh(const Tensor& input) { return kiln::tanh(input); }
Tensor tanhshrink(const Tensor& input) { return input - kiln::tanh(input); }
Tensor softshrink(const Tensor& input, double lambd) {
  KILN_CHECK(lambd >= 0, "[softshrink] lambda must be greater or equal to 0, but found to be ",
             lambd);
  return kiln::where(input > lambd, input - lambd,
                     kiln::where(input < -lambd, input + lambd, input * 0));
}
Tensor hardshrink(const Tensor& input, double lambd) {
  return kiln::where(kiln::logical_and(input >= -lambd, input <= lambd), input * 0, input);
}
Tensor glu(const Tensor& input, int64_t dim) {
  KILN_CHECK(input.dim() > 0,
             "[glu] glu does not support scalars because halving size must be even");
  const int64_t n = input.size(dim);
  KILN_CHECK(n % 2 == 0, "[glu] Halving dimension must be even, but dimension ", dim, " is size ",
             n);
  return input.narrow(dim, 0, n / 2) * kiln::sigmoid(input.narrow(dim, n / 2, n / 2));
}
Tensor threshold(const Tensor& input, double threshold, double value, bool inplace) {
  return maybe_inplace(
      input, kiln::where(input > threshold, input, Scalar(value)).to(input.dtype()), inplace);
}

// ---------------------------------------------------------------- softmax family

namespace {
Tensor cast_for_softmax(const char* op, const Tensor& input, std::optional<DType> dtype) {
  KILN_CHECK(input.defined(), "[", op, "] input is an undefined tensor");
  if (dtype) {
    KILN_CHECK(is_floating_point(*dtype), "[", op, "] dtype must be floating point, but got ",
               dtype_name(*dtype));
    return input.to(*dtype);
  }
  KILN_CHECK(input.is_floating_point(), "[", op, "] expected a floating point input, but got ",
             dtype_name(input.dtype()), " (pass dtype= to cast)");
  return input;
}
}  // namespace

Tensor softmax(const Tensor& input, int64_t dim, std::optional<DType> dtype) {
  return detail::softmax_op(cast_for_softmax("softmax", input, dtype), dim);
}
Tensor log_softmax(const Tensor& input, int64_t dim, std::optional<DType> dtype) {
  return detail::log_softmax_op(cast_for_softmax("log_softmax", input, dtype), dim);
}
Tensor softmin(const Tensor& input, int64_t dim, std::optional<DType> dtype) {
  return detail::softmax_op(-cast_for_softmax("softmin", input, dtype), dim);
}

// ---------------------------------------------------------------- dropout

namespace {
void check_p(const char* op, double p) {
  KILN_CHECK(p >= 0 && p <= 1, "[", op, "] dropout probability has to be between 0 and 1, but got ",
             p);
}

// x * mask / (1 - p) with a bernoulli(1 - p) mask of `mask_shape` (broadcast against x).
Tensor apply_mask(const Tensor& input, IntArrayRef mask_shape, double p, bool inplace) {
  Tensor mask = kiln::bernoulli(kiln::empty(mask_shape, input.options()), 1.0 - p);
  Tensor r = p == 1 ? input * mask : input * mask / (1.0 - p);
  return maybe_inplace(input, r, inplace);
}

Tensor feature_dropout(const char* op, const Tensor& input, double p, bool training, bool inplace,
                       int64_t batched_dim) {
  check_p(op, p);
  check_floating(op, input);
  KILN_CHECK(input.dim() == batched_dim || input.dim() == batched_dim - 1, "[", op, "] expected ",
             batched_dim - 1, "-D or ", batched_dim, "-D input, but got ", input.dim(), "-D");
  if (!training || p == 0) return input;
  DimVector shape(input.sizes().begin(), input.sizes().end());
  const int64_t first = input.dim() == batched_dim ? 2 : 1;
  for (int64_t d = first; d < input.dim(); ++d) shape[d] = 1;
  return apply_mask(input, shape, p, inplace);
}
}  // namespace

Tensor dropout(const Tensor& input, double p, bool training, bool inplace) {
  check_p("dropout", p);
  check_floating("dropout", input);
  if (!training || p == 0) return input;
  // 0 < p < 1: the fused native_dropout primitive (one pass, mask saved for the backward); p = 1
  // keeps the composite (all zeros).
  if (p < 1) return maybe_inplace(input, std::get<0>(detail::native_dropout_op(input, p)), inplace);
  return apply_mask(input, input.sizes(), p, inplace);
}
Tensor dropout1d(const Tensor& input, double p, bool training, bool inplace) {
  return feature_dropout("dropout1d", input, p, training, inplace, 3);
}
Tensor dropout2d(const Tensor& input, double p, bool training, bool inplace) {
  return feature_dropout("dropout2d", input, p, training, inplace, 4);
}
Tensor dropout3d(const Tensor& input, double p, bool training, bool inplace) {
  return feature_dropout("dropout3d", input, p, training, inplace, 5);
}
Tensor alpha_dropout(const Tensor& input, double p, bool training, bool inplace) {
  check_p("alpha_dropout", p);
  check_floating("alpha_dropout", input);
  if (!training || p == 0) return input;
  if (p == 1) return maybe_inplace(input, input * 0, inplace);
  const double alpha = kSeluAlpha * kSeluScale;
  const double a = 1.0 / std::sqrt((alpha * alpha * p + 1) * (1 - p));
  Tensor mask = kiln::bernoulli(kiln::empty(input.sizes(), input.options()), 1.0 - p);
  // kept: a * x + alpha * a * p; dropped: -alpha * a + alpha * a * p.
  Tensor r = input * mask * a + (mask - 1) * (alpha * a) + alpha * a * p;
  return maybe_inplace(input, r, inplace);
}

}  // namespace kiln::nn::functional
