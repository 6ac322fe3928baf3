// Internal entry points of the softmax and layer/rms norm primitives (nn_ops.h): argument checks,
// output allocation and the OpCall for each.
#include "core/wrap_dim.h"
#include "nn/functional/nn_ops.h"
#include "ops/run.h"
#include "ops/tensor_factory.h"

namespace kiln::detail {
namespace {

void check_float(const char* op, const Tensor& t, const char* what) {
  KILN_CHECK(t.defined(), "[", op, "] ", what, " is an undefined tensor");
  KILN_CHECK(is_floating_point(t.dtype()), "[", op, "] expected a floating point ", what,
             ", but got ", dtype_name(t.dtype()));
}

// dtype of the saved statistics: float32 for 16-bit floats, else the input's.
DType stat_dtype(DType d) { return d == DType::Float64 ? DType::Float64 : DType::Float32; }

Tensor softmax_like(OpId id, const Tensor& x, int64_t dim) {
  const char* op = op_name(id);
  check_float(op, x, "input");
  OpCall c(id);
  c.attrs.i0 = x.dim() == 0 ? wrap_dim(dim, 0, op) * 0 : wrap_dim(dim, x.dim(), op);
  c.in.push_back(x.dim() == 0 ? x.unsqueeze(0).contiguous() : x.contiguous());
  c.out.push_back(empty_impl(c.in[0].sizes(), x.dtype(), x.device()));
  c.compute = x.dtype();
  run(c);
  return x.dim() == 0 ? c.out[0].squeeze(0) : c.out[0];
}

Tensor softmax_backward_like(OpId id, const Tensor& grad, const Tensor& y, int64_t dim) {
  const char* op = op_name(id);
  check_float(op, grad, "grad");
  check_float(op, y, "output");
  KILN_CHECK(grad.sizes() == y.sizes(), "[", op, "] grad of shape ", grad.sizes(),
             " doesn't match the output shape ", y.sizes());
  KILN_CHECK(grad.dtype() == y.dtype(), "[", op,
             "] grad and output dtypes differ: ", dtype_name(grad.dtype()), " and ",
             dtype_name(y.dtype()));
  OpCall c(id);
  const bool scalar = y.dim() == 0;
  c.attrs.i0 = scalar ? wrap_dim(dim, 0, op) * 0 : wrap_dim(dim, y.dim(), op);
  c.in.push_back(scalar ? grad.unsqueeze(0).contiguous() : grad.contiguous());
  c.in.push_back(scalar ? y.unsqueeze(0).contiguous() : y.contiguous());
  c.out.push_back(empty_impl(c.in[0].sizes(), y.dtype(), y.device()));
  c.compute = y.dtype();
  run(c);
  return scalar ? c.out[0].squeeze(0) : c.out[0];
}

// Checks that the trailing m elements of x can be normalized by an optional [m] parameter.
Tensor flat_param(const char* op, const Tensor& p, const Tensor& x, int64_t m, const char* what) {
  if (!p.defined()) return p;
  KILN_CHECK(p.numel() == m, "[", op, "] expected ", what, " with ", m, " elements, but got shape ",
             p.sizes());
  KILN_CHECK(p.dtype() == x.dtype(), "[", op, "] expected ", what, " of dtype ",
             dtype_name(x.dtype()), ", but got ", dtype_name(p.dtype()));
  KILN_CHECK(p.device() == x.device(), "[", op, "] ", what, " is on ", p.device().str(),
             " but input is on ", x.device().str());
  return p.contiguous();
}

int64_t rows_of(const char* op, const Tensor& x, int64_t m) {
  KILN_CHECK(m >= 0, "[", op, "] bad normalized size ", m);
  if (m == 0) return 0;
  KILN_CHECK(x.numel() % m == 0, "[", op, "] input of shape ", x.sizes(),
             " does not split into rows of ", m, " elements");
  return x.numel() / m;
}

}  // namespace

Tensor softmax_op(const Tensor& x, int64_t dim) { return softmax_like(OpId::Softmax, x, dim); }
Tensor log_softmax_op(const Tensor& x, int64_t dim) {
  return softmax_like(OpId::LogSoftmax, x, dim);
}
Tensor softmax_backward_op(const Tensor& grad, const Tensor& y, int64_t dim) {
  return softmax_backward_like(OpId::SoftmaxBackward, grad, y, dim);
}
Tensor log_softmax_backward_op(const Tensor& grad, const Tensor& y, int64_t dim) {
  return softmax_backward_like(OpId::LogSoftmaxBackward, grad, y, dim);
}

std::tuple<Tensor, Tensor, Tensor> layer_norm_op(const Tensor& x, int64_t m, const Tensor& weight,
                                                 const Tensor& bias, double eps) {
  const char* op = "layer_norm";
  check_float(op, x, "input");
  const int64_t rows = rows_of(op, x, m);
  OpCall c(OpId::LayerNorm);
  c.in.push_back(x.contiguous());
  Tensor w = flat_param(op, weight, x, m, "weight"), b = flat_param(op, bias, x, m, "bias");
  if (w.defined()) c.in.push_back(w);
  if (b.defined()) c.in.push_back(b);
  c.attrs.i0 = m;
  c.attrs.i1 = (w.defined() ? 1 : 0) | (b.defined() ? 2 : 0);
  c.attrs.s0 = eps;
  c.attrs.has_s0 = true;
  c.out.push_back(empty_impl(x.sizes(), x.dtype(), x.device()));
  c.out.push_back(empty_impl({rows}, stat_dtype(x.dtype()), x.device()));
  c.out.push_back(empty_impl({rows}, stat_dtype(x.dtype()), x.device()));
  c.compute = x.dtype();
  run(c);
  return {c.out[0], c.out[1], c.out[2]};
}

std::tuple<Tensor, Tensor> rms_norm_op(const Tensor& x, int64_t m, const Tensor& weight,
                                       double eps) {
  const char* op = "rms_norm";
  check_float(op, x, "input");
  const int64_t rows = rows_of(op, x, m);
  OpCall c(OpId::RmsNorm);
  c.in.push_back(x.contiguous());
  Tensor w = flat_param(op, weight, x, m, "weight");
  if (w.defined()) c.in.push_back(w);
  c.attrs.i0 = m;
  c.attrs.i1 = w.defined() ? 1 : 0;
  c.attrs.s0 = eps;
  c.attrs.has_s0 = true;
  c.out.push_back(empty_impl(x.sizes(), x.dtype(), x.device()));
  c.out.push_back(empty_impl({rows}, stat_dtype(x.dtype()), x.device()));
  c.compute = x.dtype();
  run(c);
  return {c.out[0], c.out[1]};
}

namespace {
// Shared by the layer/rms norm backward ops. mean undefined for rms norm.
std::vector<Tensor> norm_backward(OpId id, const Tensor& grad, const Tensor& x, const Tensor& mean,
                                  const Tensor& rstd, int64_t m, const Tensor& weight, bool want_dw,
                                  bool want_db) {
  const char* op = op_name(id);
  check_float(op, x, "input");
  check_float(op, grad, "grad");
  KILN_CHECK(grad.sizes() == x.sizes() && grad.dtype() == x.dtype(), "[", op, "] grad (",
             grad.sizes(), ", ", dtype_name(grad.dtype()), ") doesn't match input (", x.sizes(),
             ", ", dtype_name(x.dtype()), ")");
  const int64_t rows = rows_of(op, x, m);
  OpCall c(id);
  c.in.push_back(grad.contiguous());
  c.in.push_back(x.contiguous());
  for (const Tensor* s : {&mean, &rstd}) {
    if (!s->defined()) continue;
    KILN_CHECK(s->numel() == rows && s->dtype() == stat_dtype(x.dtype()), "[", op,
               "] expected saved statistics of ", rows, " elements of dtype ",
               dtype_name(stat_dtype(x.dtype())));
    c.in.push_back(s->contiguous());
  }
  Tensor w = flat_param(op, weight, x, m, "weight");
  if (w.defined()) c.in.push_back(w);
  c.attrs.i0 = m;
  c.attrs.i1 = (w.defined() ? 1 : 0) | (want_dw ? 4 : 0) | (want_db ? 8 : 0);
  c.out.push_back(empty_impl(x.sizes(), x.dtype(), x.device()));
  if (want_dw) c.out.push_back(empty_impl({m}, x.dtype(), x.device()));
  if (want_db) c.out.push_back(empty_impl({m}, x.dtype(), x.device()));
  c.compute = x.dtype();
  run(c);
  return {c.out.begin(), c.out.end()};
}
}  // namespace

std::tuple<Tensor, Tensor, Tensor> layer_norm_backward_op(const Tensor& grad, const Tensor& x,
                                                          const Tensor& mean, const Tensor& rstd,
                                                          int64_t m, const Tensor& weight,
                                                          bool has_bias) {
  KILN_CHECK(mean.defined() && rstd.defined(), "[layer_norm_backward] mean and rstd are required");
  auto o = norm_backward(OpId::LayerNormBackward, grad, x, mean, rstd, m, weight, weight.defined(),
                         has_bias);
  Tensor dw = weight.defined() ? o[1].reshape(weight.sizes()) : Tensor();
  Tensor db = has_bias ? o[weight.defined() ? 2 : 1] : Tensor();
  if (db.defined() && weight.defined()) db = db.reshape(weight.sizes());
  return {o[0], dw, db};
}

std::tuple<Tensor, Tensor> rms_norm_backward_op(const Tensor& grad, const Tensor& x,
                                                const Tensor& rstd, int64_t m,
                                                const Tensor& weight) {
  KILN_CHECK(rstd.defined(), "[rms_norm_backward] rstd is required");
  auto o = norm_backward(OpId::RmsNormBackward, grad, x, Tensor(), rstd, m, weight,
                         weight.defined(), false);
  return {o[0], weight.defined() ? o[1].reshape(weight.sizes()) : Tensor()};
}

}  // namespace kiln::detail
