// Upsample, RReLU, Softmax2d and the losses CTCLoss, MultiMarginLoss, MultiLabelMarginLoss,
// TripletMarginWithDistanceLoss (the last three written here with kiln ops, so they have
// gradients through autograd).
#include "kiln/nn/modules/extra.h"

#include "kiln/autograd.h"
#include "kiln/nn/functional.h"
#include "kiln/ops.h"
#include "nn/modules/repr.h"

namespace kiln::nn {

namespace F = functional;
using repr::py_float;

namespace {

Tensor reduce(const Tensor& l, Reduction r) {
  switch (r) {
    case Reduction::None:
      return l;
    case Reduction::Sum:
      return l.sum();
    default:
      return l.mean();
  }
}

template <class T>
std::string list_repr(const std::vector<T>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    if constexpr (std::is_floating_point_v<T>)
      s += py_float(v[i]);
    else
      s += std::to_string(v[i]);
  }
  return s + (v.size() == 1 ? ",)" : ")");
}

}  // namespace

// ---- Upsample ----

UpsampleImpl::UpsampleImpl(std::optional<std::vector<int64_t>> size_,
                           std::optional<std::vector<double>> scale_factor_, std::string mode_,
                           std::optional<bool> align_corners_,
                           std::optional<bool> recompute_scale_factor_)
    : Module("Upsample"),
      size(std::move(size_)),
      scale_factor(std::move(scale_factor_)),
      mode(std::move(mode_)),
      align_corners(align_corners_),
      recompute_scale_factor(recompute_scale_factor_) {
  KILN_CHECK(size.has_value() != scale_factor.has_value(),
             "[Upsample] give exactly one of size and scale_factor");
}

Tensor UpsampleImpl::forward(const Tensor& x) {
  return F::interpolate(x, size, scale_factor, mode, align_corners, recompute_scale_factor);
}

std::string UpsampleImpl::extra_repr() const {
  std::string s =
      size ? "size=" + (size->size() == 1 ? std::to_string((*size)[0]) : list_repr(*size))
           : "scale_factor=" + (scale_factor->size() == 1 ? py_float((*scale_factor)[0])
                                                          : list_repr(*scale_factor));
  return s + ", mode='" + mode + "'";
}

UpsamplingNearest2dImpl::UpsamplingNearest2dImpl(std::optional<std::vector<int64_t>> size,
                                                 std::optional<std::vector<double>> scale_factor)
    : UpsampleImpl(std::move(size), std::move(scale_factor), "nearest") {}

UpsamplingBilinear2dImpl::UpsamplingBilinear2dImpl(std::optional<std::vector<int64_t>> size,
                                                   std::optional<std::vector<double>> scale_factor)
    : UpsampleImpl(std::move(size), std::move(scale_factor), "bilinear", true) {}

// ---- RReLU, Softmax2d ----

RReLUImpl::RReLUImpl(double lower_, double upper_, bool inplace_)
    : Module("RReLU"), lower(lower_), upper(upper_), inplace(inplace_) {
  KILN_CHECK(0 <= lower && lower <= upper, "[RReLU] expected 0 <= lower <= upper, got lower ",
             lower, " and upper ", upper);
}

Tensor RReLUImpl::forward(const Tensor& x) {
  if (!is_training()) return F::leaky_relu(x, (lower + upper) / 2, inplace);
  Tensor slope;
  {
    NoGradGuard ng;
    slope = kiln::empty_like(x).uniform_(lower, upper);
  }
  Tensor y = kiln::where(x >= 0, x, x * slope);
  if (!inplace) return y;
  Tensor t = x;
  t.copy_(y);
  return t;
}

std::string RReLUImpl::extra_repr() const {
  return "lower=" + py_float(lower) + ", upper=" + py_float(upper) +
         (inplace ? ", inplace=True" : "");
}

Tensor Softmax2dImpl::forward(const Tensor& x) {
  KILN_CHECK(x.dim() == 3 || x.dim() == 4, "[Softmax2d] expected a 3-D or 4-D input, got ", x.dim(),
             "-D");
  return F::softmax(x, -3);
}

// ---- losses ----

Tensor CTCLossImpl::forward(const Tensor& log_probs, const Tensor& targets,
                            const Tensor& input_lengths, const Tensor& target_lengths) {
  return F::ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, reduction,
                     zero_infinity);
}

MultiMarginLossImpl::MultiMarginLossImpl(int64_t p_, double margin_, Tensor w, Reduction r)
    : LossBase("MultiMarginLoss", r), p(p_), margin(margin_) {
  KILN_CHECK(p == 1 || p == 2, "[MultiMarginLoss] only p == 1 and p == 2 supported, got ", p);
  if (w.defined()) weight = register_buffer("weight", w);
}

Tensor MultiMarginLossImpl::forward(const Tensor& input, const Tensor& target) {
  const char* op = "multi_margin_loss";
  KILN_CHECK(input.dim() == 1 || input.dim() == 2, "[", op, "] expected a 1-D or 2-D input, got ",
             input.sizes());
  const bool one = input.dim() == 1;
  Tensor x = one ? input.unsqueeze(0) : input;
  Tensor y = one ? target.reshape({1}) : target;
  const int64_t N = x.size(0), C = x.size(1);
  KILN_CHECK(y.dim() == 1 && y.size(0) == N, "[", op, "] expected a target of shape [", N,
             "], got ", target.sizes());
  if (weight.defined())
    KILN_CHECK(weight.dim() == 1 && weight.size(0) == C, "[", op, "] expected a weight of shape [",
               C, "], got ", weight.sizes());
  Tensor yi = y.unsqueeze(1);
  Tensor xy = x.gather(1, yi);
  Tensor m = kiln::clamp_min(x - xy + margin, 0);
  if (p == 2) m = m * m;
  if (weight.defined()) m = m * weight.index_select(0, y).unsqueeze(1);
  Tensor not_y = F::one_hot(y, C).eq(0).to(x.dtype());
  Tensor l = (m * not_y).sum(1) / static_cast<double>(C);
  if (one && reduction == Reduction::None) l = l.squeeze(0);
  return reduce(l, reduction);
}

Tensor MultiLabelMarginLossImpl::forward(const Tensor& input, const Tensor& target) {
  const char* op = "multilabel_margin_loss";
  KILN_CHECK(input.dim() == 1 || input.dim() == 2, "[", op, "] expected a 1-D or 2-D input, got ",
             input.sizes());
  KILN_CHECK(target.sizes() == input.sizes(), "[", op, "] expected a target of shape ",
             input.sizes(), ", got ", target.sizes());
  const bool one = input.dim() == 1;
  Tensor x = one ? input.unsqueeze(0) : input;
  Tensor y = one ? target.unsqueeze(0) : target;
  const int64_t C = x.size(1);
  // The targets of a row are its entries before the first -1; count how often each class is
  // listed (a repeated class counts twice, as in PyTorch) and which classes are targets.
  Tensor valid = (y >= 0).to(kInt64).cumprod(1);
  Tensor counts = kiln::zeros(y.sizes(), TensorOptions(x.dtype()).device(x.device()))
                      .scatter_add(1, y.clamp_min(0), valid.to(x.dtype()));
  Tensor is_target = (counts > 0).to(x.dtype());
  // pair[n, j, i] = max(0, 1 - x[n, j] + x[n, i]) for target j and non-target i.
  Tensor pair = kiln::clamp_min(1.0 - x.unsqueeze(2) + x.unsqueeze(1), 0);
  Tensor w = counts.unsqueeze(2) * (1.0 - is_target).unsqueeze(1);
  Tensor l = (pair * w).sum({1, 2}) / static_cast<double>(C);
  if (one && reduction == Reduction::None) l = l.squeeze(0);
  return reduce(l, reduction);
}

TripletMarginWithDistanceLossImpl::TripletMarginWithDistanceLossImpl(Distance d, double margin_,
                                                                     bool swap_, Reduction r)
    : LossBase("TripletMarginWithDistanceLoss", r),
      distance_function(std::move(d)),
      margin(margin_),
      swap(swap_) {
  KILN_CHECK(margin > 0, "[TripletMarginWithDistanceLoss] margin must be > 0, got ", margin);
}

Tensor TripletMarginWithDistanceLossImpl::forward(const Tensor& anchor, const Tensor& positive,
                                                  const Tensor& negative) {
  auto dist = [&](const Tensor& a, const Tensor& b) {
    return distance_function ? distance_function(a, b) : F::pairwise_distance(a, b);
  };
  Tensor dp = dist(anchor, positive), dn = dist(anchor, negative);
  if (swap) dn = kiln::minimum(dn, dist(positive, negative));
  return reduce(kiln::clamp_min(dp - dn + margin, 0), reduction);
}

}  // namespace kiln::nn
