// Internal entry points of the nll_loss and embedding primitives (nn_ops.h): checks, output
// allocation and the OpCall for each.
#include "nn/functional/nn_ops.h"
#include "ops/run.h"
#include "ops/tensor_factory.h"

namespace kiln::detail {
namespace {

void check_index_dtype(const char* op, const Tensor& t, const char* what) {
  KILN_CHECK(t.defined(), "[", op, "] ", what, " is an undefined tensor");
  KILN_CHECK(t.dtype() == DType::Int64 || t.dtype() == DType::Int32, "[", op, "] expected ", what,
             " of dtype int64 or int32, but got ", dtype_name(t.dtype()));
}

// input viewed as [N, C, K] and the target shape it implies.
struct NllShape {
  int64_t n, c, k;
  DimVector target;  // expected target shape
};
NllShape nll_shape(const char* op, const Tensor& input) {
  KILN_CHECK(input.dim() >= 1, "[", op, "] input must have at least 1 dim, but got a 0-dim tensor");
  NllShape s{};
  if (input.dim() == 1) {
    s.n = 1, s.c = input.size(0), s.k = 1;
    return s;
  }
  s.n = input.size(0), s.c = input.size(1), s.k = 1;
  s.target.push_back(s.n);
  for (int64_t d = 2; d < input.dim(); ++d) {
    s.k *= input.size(d);
    s.target.push_back(input.size(d));
  }
  return s;
}

void check_nll_args(const char* op, const Tensor& input, const Tensor& target, const Tensor& weight,
                    const NllShape& s, int64_t reduction) {
  KILN_CHECK(input.defined() && is_floating_point(input.dtype()), "[", op,
             "] expected a floating point input");
  check_index_dtype(op, target, "target");
  KILN_CHECK(target.sizes() == IntArrayRef(s.target), "[", op, "] expected target of shape ",
             IntArrayRef(s.target), " for input of shape ", input.sizes(), ", but got ",
             target.sizes());
  KILN_CHECK(reduction >= 0 && reduction <= 2, "[", op, "] bad reduction ", reduction);
  if (weight.defined()) {
    KILN_CHECK(weight.dim() == 1 && weight.numel() == s.c, "[", op,
               "] weight should be a 1-D tensor of ", s.c, " elements, but got shape ",
               weight.sizes());
    KILN_CHECK(weight.dtype() == input.dtype(), "[", op, "] weight dtype ",
               dtype_name(weight.dtype()), " differs from input dtype ", dtype_name(input.dtype()));
  }
}

}  // namespace

std::tuple<Tensor, Tensor> nll_loss_op(const Tensor& input, const Tensor& target,
                                       const Tensor& weight, int64_t ignore_index,
                                       int64_t reduction) {
  const char* op = "nll_loss";
  const NllShape s = nll_shape(op, input);
  check_nll_args(op, input, target, weight, s, reduction);
  OpCall c(OpId::NllLoss);
  c.in.push_back(input.contiguous().reshape({s.n, s.c, s.k}));
  c.in.push_back(target.contiguous());
  if (weight.defined()) c.in.push_back(weight.contiguous());
  c.attrs.flag = weight.defined();
  c.attrs.i0 = ignore_index;
  c.attrs.i1 = reduction;
  if (reduction == 0)
    c.out.push_back(empty_impl(s.target, input.dtype(), input.device()));
  else
    c.out.push_back(empty_impl({}, input.dtype(), input.device()));
  c.out.push_back(empty_impl({}, input.dtype(), input.device()));
  c.compute = input.dtype();
  run(c);
  return {c.out[0], c.out[1]};
}

Tensor nll_loss_backward_op(const Tensor& grad, const Tensor& input, const Tensor& target,
                            const Tensor& weight, int64_t ignore_index, int64_t reduction,
                            const Tensor& total_weight) {
  const char* op = "nll_loss_backward";
  const NllShape s = nll_shape(op, input);
  check_nll_args(op, input, target, weight, s, reduction);
  KILN_CHECK(grad.defined() && grad.dtype() == input.dtype(), "[", op,
             "] grad must have the input's dtype");
  KILN_CHECK(reduction == 0 ? grad.sizes() == IntArrayRef(s.target) : grad.numel() == 1, "[", op,
             "] grad of shape ", grad.sizes(), " doesn't match the loss");
  KILN_CHECK(
      total_weight.defined() && total_weight.numel() == 1 && total_weight.dtype() == input.dtype(),
      "[", op, "] expected a one-element total_weight of the input's dtype");
  OpCall c(OpId::NllLossBackward);
  c.in.push_back(grad.contiguous());
  c.in.push_back(target.contiguous());
  if (weight.defined()) c.in.push_back(weight.contiguous());
  c.in.push_back(total_weight.contiguous());
  c.attrs.flag = weight.defined();
  c.attrs.i0 = ignore_index;
  c.attrs.i1 = reduction;
  c.out.push_back(empty_impl({s.n, s.c, s.k}, input.dtype(), input.device()));
  c.compute = input.dtype();
  run(c);
  return c.out[0].reshape(input.sizes());
}

Tensor embedding_op(const Tensor& weight, const Tensor& indices, int64_t padding_idx) {
  const char* op = "embedding";
  KILN_CHECK(weight.defined() && weight.dim() == 2, "[", op, "] weight must be 2-D, but got shape ",
             weight.defined() ? weight.sizes() : IntArrayRef());
  check_index_dtype(op, indices, "indices");
  OpCall c(OpId::Embedding);
  c.in.push_back(weight.contiguous());
  c.in.push_back(indices.contiguous());
  c.attrs.i0 = padding_idx;
  DimVector shape(indices.sizes().begin(), indices.sizes().end());
  shape.push_back(weight.size(1));
  c.out.push_back(empty_impl({indices.numel(), weight.size(1)}, weight.dtype(), weight.device()));
  c.compute = weight.dtype();
  run(c);
  return c.out[0].reshape(shape);
}

Tensor embedding_backward_op(const Tensor& grad, const Tensor& indices, int64_t num_weights,
                             int64_t padding_idx) {
  const char* op = "embedding_backward";
  check_index_dtype(op, indices, "indices");
  KILN_CHECK(grad.defined() && is_floating_point(grad.dtype()), "[", op,
             "] expected a floating point grad");
  KILN_CHECK(
      grad.dim() == indices.dim() + 1 && grad.sizes().slice(0, indices.dim()) == indices.sizes(),
      "[", op, "] grad of shape ", grad.sizes(), " doesn't match indices of shape ",
      indices.sizes());
  KILN_CHECK(num_weights >= 0, "[", op, "] num_weights must be >= 0");
  const int64_t d = grad.size(-1);
  OpCall c(OpId::EmbeddingBackward);
  c.in.push_back(grad.contiguous().reshape({indices.numel(), d}));
  c.in.push_back(indices.contiguous());
  c.attrs.i0 = padding_idx;
  c.out.push_back(empty_impl({num_weights, d}, grad.dtype(), grad.device()));
  c.compute = grad.dtype();
  run(c);
  return c.out[0];
}

void embedding_renorm_op(const Tensor& weight, const Tensor& indices, double max_norm,
                         double norm_type) {
  const char* op = "embedding_renorm_";
  KILN_CHECK(weight.defined() && weight.dim() == 2 && is_floating_point(weight.dtype()), "[", op,
             "] weight must be a 2-D floating point tensor");
  check_index_dtype(op, indices, "indices");
  KILN_CHECK(max_norm >= 0 && norm_type > 0, "[", op, "] need max_norm >= 0 and norm_type > 0");
  OpCall c(OpId::EmbeddingRenorm);
  c.in.push_back(indices.contiguous());
  c.out.push_back(weight);
  c.provided_out = c.inplace = true;
  c.attrs.s0 = max_norm;
  c.attrs.s1 = norm_type;
  c.attrs.has_s0 = c.attrs.has_s1 = true;
  c.compute = weight.dtype();
  run(c);
}

}  // namespace kiln::detail
