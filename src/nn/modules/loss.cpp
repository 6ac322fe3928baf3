// Loss modules: forwards through kiln::nn::functional.
#include "kiln/nn/modules/loss.h"

#include "kiln/nn/functional.h"

namespace kiln::nn {

namespace F = functional;

Tensor MSELossImpl::forward(const Tensor& i, const Tensor& t) {
  return F::mse_loss(i, t, reduction);
}
Tensor L1LossImpl::forward(const Tensor& i, const Tensor& t) { return F::l1_loss(i, t, reduction); }
Tensor SoftMarginLossImpl::forward(const Tensor& i, const Tensor& t) {
  return F::soft_margin_loss(i, t, reduction);
}

CrossEntropyLossImpl::CrossEntropyLossImpl(Tensor w, int64_t ignore, Reduction r, double ls)
    : LossBase("CrossEntropyLoss", r), ignore_index(ignore), label_smoothing(ls) {
  if (w.defined()) weight = register_buffer("weight", w);
}
Tensor CrossEntropyLossImpl::forward(const Tensor& i, const Tensor& t) {
  return F::cross_entropy(i, t, weight, ignore_index, reduction, label_smoothing);
}

NLLLossImpl::NLLLossImpl(Tensor w, int64_t ignore, Reduction r)
    : LossBase("NLLLoss", r), ignore_index(ignore) {
  if (w.defined()) weight = register_buffer("weight", w);
}
Tensor NLLLossImpl::forward(const Tensor& i, const Tensor& t) {
  return F::nll_loss(i, t, weight, ignore_index, reduction);
}

BCELossImpl::BCELossImpl(Tensor w, Reduction r) : LossBase("BCELoss", r) {
  if (w.defined()) weight = register_buffer("weight", w);
}
Tensor BCELossImpl::forward(const Tensor& i, const Tensor& t) {
  return F::binary_cross_entropy(i, t, weight, reduction);
}

BCEWithLogitsLossImpl::BCEWithLogitsLossImpl(Tensor w, Reduction r, Tensor pw)
    : LossBase("BCEWithLogitsLoss", r) {
  if (w.defined()) weight = register_buffer("weight", w);
  if (pw.defined()) pos_weight = register_buffer("pos_weight", pw);
}
Tensor BCEWithLogitsLossImpl::forward(const Tensor& i, const Tensor& t) {
  return F::binary_cross_entropy_with_logits(i, t, weight, reduction, pos_weight);
}

Tensor SmoothL1LossImpl::forward(const Tensor& i, const Tensor& t) {
  return F::smooth_l1_loss(i, t, reduction, beta);
}
Tensor HuberLossImpl::forward(const Tensor& i, const Tensor& t) {
  return F::huber_loss(i, t, reduction, delta);
}
Tensor KLDivLossImpl::forward(const Tensor& i, const Tensor& t) {
  return F::kl_div(i, t, reduction, log_target);
}
Tensor PoissonNLLLossImpl::forward(const Tensor& i, const Tensor& t) {
  return F::poisson_nll_loss(i, t, log_input, full, eps, reduction);
}
Tensor GaussianNLLLossImpl::forward(const Tensor& i, const Tensor& t, const Tensor& var) {
  return F::gaussian_nll_loss(i, t, var, full, eps, reduction);
}
Tensor CosineEmbeddingLossImpl::forward(const Tensor& a, const Tensor& b, const Tensor& t) {
  return F::cosine_embedding_loss(a, b, t, margin, reduction);
}
Tensor MarginRankingLossImpl::forward(const Tensor& a, const Tensor& b, const Tensor& t) {
  return F::margin_ranking_loss(a, b, t, margin, reduction);
}
Tensor HingeEmbeddingLossImpl::forward(const Tensor& i, const Tensor& t) {
  return F::hinge_embedding_loss(i, t, margin, reduction);
}
Tensor TripletMarginLossImpl::forward(const Tensor& a, const Tensor& p_, const Tensor& n) {
  return F::triplet_margin_loss(a, p_, n, margin, p, eps, swap, reduction);
}

MultiLabelSoftMarginLossImpl::MultiLabelSoftMarginLossImpl(Tensor w, Reduction r)
    : LossBase("MultiLabelSoftMarginLoss", r) {
  if (w.defined()) weight = register_buffer("weight", w);
}
Tensor MultiLabelSoftMarginLossImpl::forward(const Tensor& i, const Tensor& t) {
  return F::multilabel_soft_margin_loss(i, t, weight, reduction);
}

}  // namespace kiln::nn
