// kiln::nn::functional losses: nll_loss (fused primitive), cross_entropy (the fused
// cross_entropy_loss primitive for class indices; the log_softmax + nll_loss composite stays as
// its reference and serves probability targets) and the elementwise/distance losses (composites).
#include <cmath>
#include <numbers>

#include "kiln/nn/functional/activation.h"
#include "kiln/nn/functional/loss.h"
#include "kiln/nn/functional/misc.h"
#include "kiln/ops.h"
#include "nn/functional/nn_ops.h"

namespace kiln::nn::functional {
namespace {

Tensor reduce(const Tensor& loss, Reduction r) {
  switch (r) {
    case Reduction::Mean:
      return loss.mean();
    case Reduction::Sum:
      return loss.sum();
    default:
      return loss;
  }
}

int64_t reduction_code(Reduction r) {
  return r == Reduction::None ? 0 : r == Reduction::Mean ? 1 : 2;
}

void check_pair(const char* op, const Tensor& input, const Tensor& target) {
  KILN_CHECK(input.defined() && target.defined(), "[", op, "] input and target must be defined");
  KILN_CHECK(input.is_floating_point(), "[", op, "] expected a floating point input, but got ",
             dtype_name(input.dtype()));
}

}  // namespace

Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight,
                int64_t ignore_index, Reduction reduction) {
  return std::get<0>(
      detail::nll_loss_op(input, target, weight, ignore_index, reduction_code(reduction)));
}

Tensor cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                     int64_t ignore_index, Reduction reduction, double label_smoothing) {
  const char* op = "cross_entropy";
  check_pair(op, input, target);
  KILN_CHECK(input.dim() >= 1, "[", op, "] input must have at least 1 dim");
  KILN_CHECK(label_smoothing >= 0 && label_smoothing <= 1, "[", op,
             "] label_smoothing must be between 0.0 and 1.0. Got: ", label_smoothing);
  const int64_t cdim = input.dim() == 1 ? 0 : 1;
  const int64_t classes = input.size(cdim);
  if (weight.defined())
    KILN_CHECK(weight.dim() == 1 && weight.numel() == classes, "[", op,
               "] weight should be a 1-D tensor of ", classes, " elements, but got shape ",
               weight.sizes());
  if (!target.is_floating_point()) {
    // Class indices: the fused primitive on [N, C] rows (K-dim inputs moved to rows).
    DimVector want;
    if (input.dim() > 1) {
      want.push_back(input.size(0));
      for (int64_t d = 2; d < input.dim(); ++d) want.push_back(input.size(d));
    }
    KILN_CHECK(target.sizes() == IntArrayRef(want), "[", op, "] expected target of shape ",
               IntArrayRef(want), " for input of shape ", input.sizes(), ", but got ",
               target.sizes());
    Tensor x2 = input;
    if (input.dim() == 1) {
      x2 = input.unsqueeze(0);
    } else if (input.dim() > 2) {
      DimVector perm{0};
      int64_t rows = input.size(0);
      for (int64_t d = 2; d < input.dim(); ++d) perm.push_back(d), rows *= input.size(d);
      perm.push_back(1);
      x2 = input.permute(perm).reshape({rows, classes});
    }
    auto [loss, lse] = detail::cross_entropy_loss_op(x2, target.reshape({-1}), weight, ignore_index,
                                                     reduction_code(reduction), label_smoothing);
    return reduction == Reduction::None ? loss.reshape(target.sizes()) : loss;
  }
  return detail::cross_entropy_composite(input, target, weight, ignore_index,
                                         reduction_code(reduction), label_smoothing);
}

}  // namespace kiln::nn::functional

namespace kiln::detail {

// The composite cross-entropy (log_softmax + nll_loss, or the probability-target sum): the
// reference of the fused primitive, and the path for probability targets.
Tensor cross_entropy_composite(const Tensor& input, const Tensor& target, const Tensor& weight,
                               int64_t ignore_index, int64_t reduction_i, double label_smoothing) {
  namespace F = kiln::nn::functional;
  using F::Reduction;
  const Reduction reduction = reduction_i == 0   ? Reduction::None
                              : reduction_i == 1 ? Reduction::Mean
                                                 : Reduction::Sum;
  const char* op = "cross_entropy";
  const int64_t cdim = input.dim() == 1 ? 0 : 1;
  const int64_t classes = input.size(cdim);
  auto class_view = [&](const Tensor& w) {
    DimVector shape(input.dim(), 1);
    shape[cdim] = w.numel();
    return w.reshape(shape);
  };
  auto reduce = [](const Tensor& loss, Reduction r) {
    return r == Reduction::Mean ? loss.mean() : r == Reduction::Sum ? loss.sum() : loss;
  };
  Tensor logp = F::log_softmax(input, cdim);
  if (target.is_floating_point()) {
    // Class probabilities: -sum_c w_c * t_c * logp_c per sample.
    KILN_CHECK(target.sizes() == input.sizes(), "[", op,
               "] expected probability target of the input's shape ", input.sizes(), ", but got ",
               target.sizes());
    Tensor t =
        label_smoothing > 0 ? target * (1 - label_smoothing) + label_smoothing / classes : target;
    Tensor prod = logp * t;
    if (weight.defined()) prod = prod * class_view(weight);
    Tensor loss = -prod.sum(IntArrayRef{cdim});
    if (reduction == Reduction::Mean)
      return input.numel() == 0 ? loss.sum() / 0.0
                                : loss.sum() / static_cast<double>(input.numel() / classes);
    return reduce(loss, reduction);
  }
  auto [nll, total] = nll_loss_op(logp, target, weight, ignore_index, reduction_i);
  if (label_smoothing == 0) return nll;
  // Smoothing term: -sum_c w_c logp_c, zero at ignored targets; the mean divides by the same
  // total weight as nll_loss.
  Tensor wl = weight.defined() ? logp * class_view(weight) : logp;
  Tensor smooth = -wl.sum(IntArrayRef{cdim});
  smooth = kiln::where(target == ignore_index, Scalar(0.0), smooth);
  Tensor sm;
  switch (reduction) {
    case Reduction::Mean:
      sm = smooth.sum() / total;
      break;
    case Reduction::Sum:
      sm = smooth.sum();
      break;
    default:
      sm = smooth;
  }
  return nll * (1 - label_smoothing) + sm * (label_smoothing / classes);
}

}  // namespace kiln::detail

namespace kiln::nn::functional {

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  check_pair("mse_loss", input, target);
  Tensor d = input - target;
  return reduce(d * d, reduction);
}

Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  check_pair("l1_loss", input, target);
  return reduce(kiln::abs(input - target), reduction);
}

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction reduction, double beta) {
  check_pair("smooth_l1_loss", input, target);
  KILN_CHECK(beta >= 0,
             "[smooth_l1_loss] smooth_l1_loss does not support negative values for beta");
  Tensor d = kiln::abs(input - target);
  if (beta == 0) return reduce(d, reduction);
  return reduce(kiln::where(d < beta, d * d * (0.5 / beta), d - 0.5 * beta), reduction);
}

Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction, double delta) {
  check_pair("huber_loss", input, target);
  KILN_CHECK(delta > 0, "[huber_loss] huber_loss does not support non-positive values for delta");
  Tensor d = kiln::abs(input - target);
  return reduce(kiln::where(d < delta, d * d * 0.5, (d - 0.5 * delta) * delta), reduction);
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const Tensor& weight,
                            Reduction reduction) {
  const char* op = "binary_cross_entropy";
  check_pair(op, input, target);
  KILN_CHECK(input.sizes() == target.sizes(), "[", op, "] Using a target size (", target.sizes(),
             ") that is different to the input size (", input.sizes(), ") is deprecated");
  if (input.is_cpu() && input.numel() > 0)
    KILN_CHECK(!kiln::logical_or(input<0, input> 1).any().item<bool>(), "[", op,
               "] all elements of input should be between 0 and 1");
  Tensor lx = kiln::clamp_min(kiln::log(input), Scalar(-100.0));
  Tensor l1x = kiln::clamp_min(kiln::log1p(-input), Scalar(-100.0));
  Tensor loss = -(target * lx + (1 - target) * l1x);
  if (weight.defined()) loss = loss * weight;
  return reduce(loss, reduction);
}

Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const Tensor& weight, Reduction reduction,
                                        const Tensor& pos_weight) {
  const char* op = "binary_cross_entropy_with_logits";
  check_pair(op, input, target);
  KILN_CHECK(input.sizes() == target.sizes(), "[", op, "] Target size (", target.sizes(),
             ") must be the same as input size (", input.sizes(), ")");
  // log(1 + e^-|x|) + max(-x, 0) = -log(sigmoid(x)), without overflow.
  Tensor sp = kiln::log1p(kiln::exp(-kiln::abs(input))) + kiln::clamp_min(-input, Scalar(0.0));
  Tensor loss;
  if (pos_weight.defined()) {
    Tensor lw = (pos_weight - 1) * target + 1;
    loss = (1 - target) * input + lw * sp;
  } else {
    loss = (1 - target) * input + sp;
  }
  if (weight.defined()) loss = loss * weight;
  return reduce(loss, reduction);
}

Tensor kl_div(const Tensor& input, const Tensor& target, Reduction reduction, bool log_target) {
  check_pair("kl_div", input, target);
  Tensor loss = log_target ? kiln::exp(target) * (target - input)
                           : kiln::where(target == 0, target * 0, target * kiln::log(target)) -
                                 target * input;
  return reduce(loss, reduction);
}

Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, bool log_input, bool full,
                        double eps, Reduction reduction) {
  check_pair("poisson_nll_loss", input, target);
  Tensor loss =
      log_input ? kiln::exp(input) - target * input : input - target * kiln::log(input + eps);
  if (full) {
    Tensor st =
        target * kiln::log(target) - target + kiln::log(target * (2 * std::numbers::pi)) * 0.5;
    loss = loss + kiln::where(target > 1, st, Scalar(0.0));
  }
  return reduce(loss, reduction);
}

Tensor gaussian_nll_loss(const Tensor& input, const Tensor& target, const Tensor& var, bool full,
                         double eps, Reduction reduction) {
  const char* op = "gaussian_nll_loss";
  check_pair(op, input, target);
  KILN_CHECK(var.defined(), "[", op, "] var must be defined");
  Tensor v = var;
  if (v.sizes() != input.sizes() && input.dim() > 0 &&
      v.sizes() == input.sizes().slice(0, input.dim() - 1))
    v = v.unsqueeze(-1);
  if (v.numel() > 0 && v.is_cpu())
    KILN_CHECK(!(v < 0).any().item<bool>(), "[", op, "] var has negative entry/entries");
  v = kiln::clamp_min(v, Scalar(eps));
  Tensor d = input - target;
  Tensor loss = (kiln::log(v) + d * d / v) * 0.5;
  if (full) loss = loss + 0.5 * std::log(2 * std::numbers::pi);
  return reduce(loss, reduction);
}

Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                             double margin, Reduction reduction) {
  const char* op = "cosine_embedding_loss";
  check_pair(op, input1, input2);
  KILN_CHECK(input1.sizes() == input2.sizes(), "[", op, "] input1 ", input1.sizes(), " and input2 ",
             input2.sizes(), " must have the same shape");
  KILN_CHECK(input1.dim() == 1 || input1.dim() == 2, "[", op, "] expected 1-D or 2-D inputs");
  const int64_t d = input1.dim() - 1;
  const double e = 1e-12;
  Tensor prod = (input1 * input2).sum(IntArrayRef{d});
  Tensor m1 = (input1 * input1).sum(IntArrayRef{d}) + e;
  Tensor m2 = (input2 * input2).sum(IntArrayRef{d}) + e;
  Tensor cos = prod / kiln::sqrt(m1 * m2);
  Tensor zero = cos * 0;
  Tensor pos = kiln::where(target == 1, 1 - cos, zero);
  Tensor neg = kiln::where(target == -1, kiln::clamp_min(cos - margin, Scalar(0.0)), zero);
  return reduce(pos + neg, reduction);
}

Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                           double margin, Reduction reduction) {
  check_pair("margin_ranking_loss", input1, input2);
  return reduce(kiln::clamp_min(-target * (input1 - input2) + margin, Scalar(0.0)), reduction);
}

Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target, double margin,
                            Reduction reduction) {
  check_pair("hinge_embedding_loss", input, target);
  Tensor zero = input * 0;
  Tensor m = kiln::where(target != 1, kiln::clamp_min(margin - input, Scalar(0.0)), zero);
  Tensor s = kiln::where(target != -1, input, zero);
  return reduce(m + s, reduction);
}

Tensor soft_margin_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  check_pair("soft_margin_loss", input, target);
  return reduce(kiln::log1p(kiln::exp(-target * input)), reduction);
}

Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                           double margin, double p, double eps, bool swap, Reduction reduction) {
  const char* op = "triplet_margin_loss";
  check_pair(op, anchor, positive);
  KILN_CHECK(margin > 0, "[", op, "] margin must be greater than 0, got ", margin);
  const int64_t ad = anchor.dim();
  KILN_CHECK(positive.dim() == ad && negative.dim() == ad, "[", op,
             "] The anchor, positive, and negative tensors are expected to have the same number "
             "of dimensions, but got: anchor ",
             ad, "D, positive ", positive.dim(), "D, and negative ", negative.dim(), "D inputs");
  Tensor dp = pairwise_distance(anchor, positive, p, eps);
  Tensor dn = pairwise_distance(anchor, negative, p, eps);
  if (swap) dn = kiln::minimum(dn, pairwise_distance(positive, negative, p, eps));
  return reduce(kiln::clamp_min(dp - dn + margin, Scalar(0.0)), reduction);
}

Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target, const Tensor& weight,
                                   Reduction reduction) {
  const char* op = "multilabel_soft_margin_loss";
  check_pair(op, input, target);
  KILN_CHECK(input.dim() >= 1, "[", op, "] expected at least 1-D input");
  Tensor loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input));
  if (weight.defined()) loss = loss * weight;
  const int64_t cdim = input.dim() - 1;
  loss = loss.sum(IntArrayRef{cdim}) / static_cast<double>(input.size(cdim));
  return reduce(loss, reduction);
}

}  // namespace kiln::nn::functional
