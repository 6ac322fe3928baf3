// vjps of the fused nn primitives (cross_entropy_loss, native_dropout). First-order cross-entropy
// gradients use the fused backward op; under create_graph, or when the class weights need a
// gradient, a composite of kiln ops (Note [Fused cross-entropy] in nn_fused_kernels.cpp).
#include "autograd/vjp.h"
#include "kiln/autograd.h"
#include "nn/functional/nn_ops.h"

namespace kiln::detail {

namespace {

// CrossEntropyLoss: in = (logits [N, C], target [N], [weight [C]]); out = (loss, lse [N]).
void cross_entropy_composite_vjp(VjpContext& c) {
  const int64_t red = c.attrs().i1, ignore = c.attrs().i0;
  const double ls = c.attrs().s0.to<double>();
  const bool has_w = c.attrs().flag;
  Tensor x = c.in(0), target = c.in(1);
  const int64_t n = x.size(0), cls = x.size(1);
  Tensor t = target.reshape({n, 1});
  Tensor ar = kiln::arange(cls, TensorOptions(t.dtype()).device(x.device())).view({1, cls});
  Tensor valid = (t != ignore).to(x.dtype());  // [N, 1]
  Tensor onehot = ((t == ar) & (t != ignore)).to(x.dtype());
  Tensor w = has_w ? c.in(2).reshape({1, cls}) : Tensor();
  Tensor wsel = has_w ? onehot * w : onehot;  // [N, C]
  Tensor wt = wsel.sum({1}, true);            // [N, 1]
  Tensor total = wt.sum();
  Tensor logp = log_softmax_op(x, 1);
  Tensor p = kiln::exp(logp);
  Tensor gl = red == 0 ? c.grad(0).reshape({n, 1}) : c.grad(0).reshape({1, 1});
  if (red == 1) gl = gl / total;
  const double bs = ls / static_cast<double>(cls);
  if (c.needs(0) || c.has_grad(1)) {
    Tensor gx;
    if (c.has_grad(0)) {
      Tensor d = (p * wt - wsel) * (1 - ls);
      if (ls > 0) {
        Tensor sm = has_w ? p * w.sum() - w : p * static_cast<double>(cls) - 1.0;
        d = d + sm * valid * bs;
      }
      gx = gl * d;
    }
    if (c.has_grad(1)) {  // d lse / d x = p
      Tensor gp = c.grad(1).to(x.dtype()).reshape({n, 1}) * p;
      gx = gx.defined() ? gx + gp : gp;
    }
    if (gx.defined()) c.set(0, gx);
  }
  if (has_w && c.needs(2) && c.has_grad(0)) {
    // d S / d w_c = sum_i [(1 - ls) onehot_ic + bs * valid_i] * (-logp_ic); mean adds the
    // quotient term -S / total^2 * sum_i onehot_ic.
    Tensor coef = onehot * (1 - ls);
    if (ls > 0) coef = coef + valid * bs;
    Tensor gw = (-(gl * coef * logp)).sum({0});
    if (red == 1) {
      Tensor per = (-(coef * logp) * w).sum({1}, true);  // loss_i
      Tensor loss = per.sum() / total;
      gw = gw - (gl * loss * onehot).sum({0});
    }
    c.set(2, gw.reshape(c.in_meta(2).sizes));
  }
}

void cross_entropy_vjp(VjpContext& c) {
  const bool has_w = c.attrs().flag;
  if (is_grad_enabled() || c.has_grad(1) || (has_w && c.needs(2)))
    return cross_entropy_composite_vjp(c);
  if (!c.needs(0)) return;
  Tensor w = has_w ? c.in(2) : Tensor();
  c.set(0, cross_entropy_loss_backward_op(c.grad(0), c.in(0), c.in(1), c.out(1), w, c.attrs().i0,
                                          c.attrs().i1, c.attrs().s0.to<double>()));
}

// NativeDropout: out = (y, mask); dy/dx = mask / (1 - p).
void native_dropout_vjp(VjpContext& c) {
  const double p = c.attrs().s0.to<double>();
  const double scale = p < 1 ? 1.0 / (1.0 - p) : 0.0;
  Tensor mask = c.out(1);
  c.set(0, c.grad(0) * mask.to(c.grad(0).dtype()) * scale);
}

}  // namespace

void register_nn_fused_vjps() {
  set_vjp(OpId::CrossEntropyLoss, cross_entropy_vjp, kIn0 | kIn1 | kIn2 | kOut1);
  set_vjp(OpId::NativeDropout, native_dropout_vjp, kOut1);
}

}  // namespace kiln::detail
