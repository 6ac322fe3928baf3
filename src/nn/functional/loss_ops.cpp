// Internal entry points of the nll_loss, embedding, fused cross-entropy and native_dropout
// primitives (nn_ops.h): checks, output allocation (and Philox counters) and the OpCall for each.
#include "amp/autocast_state.h"
#include "backend/gpu/graph_rng.h"
#include "kernels/philox.h"
#include "kiln/amp.h"
#include "kiln/random.h"
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

// ---- fused cross-entropy (Note [Fused cross-entropy] in src/kernels/cpu/nn_fused_kernels.cpp)

namespace {

DType ce_stat_dtype(DType d) { return d == DType::Float64 ? DType::Float64 : DType::Float32; }

struct CeArgs {
  Tensor logits, target, weight;
};

CeArgs check_ce(const char* op, const Tensor& logits, const Tensor& target, const Tensor& weight,
                int64_t reduction, double label_smoothing) {
  KILN_CHECK(logits.defined() && is_floating_point(logits.dtype()), "[", op,
             "] expected floating point logits");
  KILN_CHECK(logits.dim() == 2, "[", op, "] expected 2-D logits [N, C], but got shape ",
             logits.sizes());
  check_index_dtype(op, target, "target");
  KILN_CHECK(target.dim() == 1 && target.size(0) == logits.size(0), "[", op,
             "] expected target of shape [", logits.size(0), "], but got ", target.sizes());
  KILN_CHECK(target.device() == logits.device(), "[", op, "] target is on ", target.device().str(),
             " but logits are on ", logits.device().str());
  KILN_CHECK(reduction >= 0 && reduction <= 2, "[", op, "] bad reduction ", reduction);
  KILN_CHECK(label_smoothing >= 0 && label_smoothing <= 1, "[", op,
             "] label_smoothing must be between 0.0 and 1.0. Got: ", label_smoothing);
  CeArgs a{logits.contiguous(), target.contiguous(), Tensor()};
  if (a.target.dtype() != DType::Int64) a.target = a.target.to(DType::Int64);
  if (weight.defined()) {
    KILN_CHECK(weight.dim() == 1 && weight.numel() == logits.size(1), "[", op,
               "] weight should be a 1-D tensor of ", logits.size(1), " elements, but got shape ",
               weight.sizes());
    KILN_CHECK(weight.dtype() == logits.dtype(), "[", op, "] weight dtype ",
               dtype_name(weight.dtype()), " differs from input dtype ",
               dtype_name(logits.dtype()));
    KILN_CHECK(weight.device() == logits.device(), "[", op, "] weight is on ",
               weight.device().str(), " but logits are on ", logits.device().str());
    a.weight = weight.contiguous();
  }
  return a;
}

void set_ce_attrs(OpCall& c, const Tensor& weight, int64_t ignore_index, int64_t reduction,
                  double label_smoothing) {
  c.attrs.s0 = label_smoothing;
  c.attrs.has_s0 = true;
  c.attrs.i0 = ignore_index;
  c.attrs.i1 = reduction;
  c.attrs.flag = weight.defined();
}

}  // namespace

// Note [autocast cross-entropy]
// PyTorch's autocast runs cross_entropy in float32: it casts the logits (a float32 copy of the
// whole [N, C] matrix, 3.3 GB for GPT-2 at batch 16 x 1024) and returns a float32 loss. kiln's
// fused op already reads half-precision logits with float32 accumulation, so under autocast it
// keeps the logits as they are and writes a float32 loss (the same value, and the same dtype as
// PyTorch's). With a class weight the inputs are cast to float32 as PyTorch does.
std::tuple<Tensor, Tensor> cross_entropy_loss_op(const Tensor& logits_in, const Tensor& target,
                                                 const Tensor& weight_in, int64_t ignore_index,
                                                 int64_t reduction, double label_smoothing) {
  const char* op = "cross_entropy_loss";
  Tensor logits = logits_in, weight = weight_in;
  bool float_loss = false;
  if (KILN_UNLIKELY(autocast_active()) && logits.defined() &&
      amp::is_autocast_enabled(logits.device().type)) {
    if (weight.defined())
      autocast_args(AutocastPolicy::Float32, {&logits, &weight});
    else
      float_loss = logits.dtype() == DType::Float16 || logits.dtype() == DType::BFloat16;
  }
  CeArgs a = check_ce(op, logits, target, weight, reduction, label_smoothing);
  OpCall c(OpId::CrossEntropyLoss);
  c.in.push_back(a.logits);
  c.in.push_back(a.target);
  if (a.weight.defined()) c.in.push_back(a.weight);
  set_ce_attrs(c, a.weight, ignore_index, reduction, label_smoothing);
  const int64_t n = logits.size(0);
  const DType loss_dtype = float_loss ? DType::Float32 : logits.dtype();
  if (reduction == 0)
    c.out.push_back(empty_impl({n}, loss_dtype, logits.device()));
  else
    c.out.push_back(empty_impl({}, loss_dtype, logits.device()));
  c.out.push_back(empty_impl({n}, ce_stat_dtype(logits.dtype()), logits.device()));
  c.compute = logits.dtype();
  run(c);
  return {c.out[0], c.out[1]};
}

Tensor cross_entropy_loss_backward_op(const Tensor& grad, const Tensor& logits,
                                      const Tensor& target, const Tensor& lse, const Tensor& weight,
                                      int64_t ignore_index, int64_t reduction,
                                      double label_smoothing) {
  const char* op = "cross_entropy_loss_backward";
  CeArgs a = check_ce(op, logits, target, weight, reduction, label_smoothing);
  const int64_t n = logits.size(0);
  KILN_CHECK(grad.defined() && is_floating_point(grad.dtype()), "[", op,
             "] expected a floating point grad");
  KILN_CHECK(reduction == 0 ? (grad.dim() == 1 && grad.size(0) == n) : grad.numel() == 1, "[", op,
             "] grad of shape ", grad.sizes(), " doesn't match the loss");
  KILN_CHECK(lse.defined() && lse.numel() == n && lse.dtype() == ce_stat_dtype(logits.dtype()), "[",
             op, "] expected a saved lse of ", n, " elements of dtype ",
             dtype_name(ce_stat_dtype(logits.dtype())));
  OpCall c(OpId::CrossEntropyLossBackward);
  c.in.push_back(grad.to(logits.dtype()).contiguous());
  c.in.push_back(a.logits);
  c.in.push_back(a.target);
  c.in.push_back(lse.contiguous());
  if (a.weight.defined()) c.in.push_back(a.weight);
  set_ce_attrs(c, a.weight, ignore_index, reduction, label_smoothing);
  c.out.push_back(empty_impl(logits.sizes(), logits.dtype(), logits.device()));
  c.compute = logits.dtype();
  run(c);
  return c.out[0];
}

// ---- native_dropout (Note [Fused dropout] in src/kernels/cpu/nn_fused_kernels.cpp)

namespace {
std::tuple<Tensor, Tensor> run_native_dropout(const Tensor& x, double p, uint64_t seed,
                                              uint64_t offset, const Tensor& state) {
  OpCall c(OpId::NativeDropout);
  c.in.push_back(x.contiguous());
  if (state.defined()) c.in.push_back(state);
  c.attrs.s0 = p;
  c.attrs.has_s0 = true;
  c.attrs.ints.clear();
  c.attrs.ints.push_back(static_cast<int64_t>(seed));
  c.attrs.ints.push_back(static_cast<int64_t>(offset));
  c.out.push_back(empty_impl(x.sizes(), x.dtype(), x.device()));
  c.out.push_back(empty_impl(x.sizes(), DType::Bool, x.device()));
  c.compute = x.dtype();
  run(c);
  return {c.out[0], c.out[1]};
}

void check_dropout(const Tensor& x, double p) {
  KILN_CHECK(x.defined() && is_floating_point(x.dtype()),
             "[native_dropout] expected a floating "
             "point input");
  KILN_CHECK(p >= 0 && p <= 1,
             "[native_dropout] dropout probability has to be between 0 and 1, "
             "but got ",
             p);
}
}  // namespace

std::tuple<Tensor, Tensor> native_dropout_op(const Tensor& x, double p) {
  check_dropout(x, p);
  Generator gen = default_generator(x.device());
  const PhiloxSeedOffset so = gen.reserve(philox_counters(static_cast<uint64_t>(x.numel()), 1));
  Tensor state;
  uint64_t offset = so.offset;
  if (x.is_cuda()) {
    // Captured into a GPU graph: the kernel reads (seed, offset) from the graph's state tensor
    // at replay time (Note [Graph-safe random numbers]).
    gpu::CapturedRng cap = gpu::capture_rng(gen, so, x.device().index);
    if (cap.state.defined()) state = cap.state, offset = cap.offset;
  }
  return run_native_dropout(x, p, so.seed, offset, state);
}

std::tuple<Tensor, Tensor> native_dropout_op(const Tensor& x, double p, uint64_t seed,
                                             uint64_t offset) {
  check_dropout(x, p);
  return run_native_dropout(x, p, seed, offset, Tensor());
}

}  // namespace kiln::detail
