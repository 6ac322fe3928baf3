// vjps of the nn primitives (src/ops/defs/nn.def): softmax family, layer / rms norm, nll_loss,
// embedding, convolution, pooling and im2col, and the backward ops they call. First-order norm and
// nll_loss gradients use the fused backward ops; under create_graph they switch to composites.
#include "autograd/vjp.h"
#include "kiln/autograd.h"
#include "nn/functional/nn_ops.h"

namespace kiln::detail {

namespace {

Tensor add_opt(const Tensor& a, const Tensor& b) { return a.defined() ? a + b : b; }

TensorOptions opts_of(const TensorMeta& m) { return TensorOptions(m.dtype).device(m.device); }

// ---- layer / rms norm: composite gradient of all three (two) outputs -------------------------
// x as [rows, m]; center: layer norm (else rms norm). Handles grads of the mean/rstd outputs.
void norm_composite(VjpContext& c, bool center) {
  const int64_t m = c.attrs().i0;
  const double eps = c.attrs().s0.to<double>();
  const bool has_w = c.attrs().i1 & 1, has_b = center && (c.attrs().i1 & 2);
  Tensor x = c.in(0);
  const int64_t rows = m == 0 ? 0 : x.numel() / m;
  Tensor xr = x.reshape({rows, m});
  Tensor xc = center ? xr - xr.mean({1}, true) : xr;
  Tensor rstd = kiln::rsqrt((xc * xc).mean({1}, true) + eps);
  Tensor xhat = xc * rstd;
  Tensor gx, gw, gb;
  if (c.has_grad(0)) {
    Tensor gr = c.grad(0).reshape({rows, m});
    Tensor gxhat = has_w ? gr * c.in(1).reshape({1, m}) : gr;
    Tensor inner = gxhat - xhat * (gxhat * xhat).mean({1}, true);
    if (center) inner = inner - gxhat.mean({1}, true);
    gx = rstd * inner;
    if (has_w) gw = (gr * xhat).sum({0});
    if (has_b) gb = gr.sum({0});
  }
  const int stat = center ? 2 : 1;  // output index of rstd
  if (center && c.has_grad(1))
    gx = add_opt(gx, (c.grad(1).reshape({rows, 1}) / static_cast<double>(m)).expand({rows, m}));
  if (c.has_grad(stat)) {
    // d rstd / d x = -rstd^3 * xc / m.
    Tensor gs = c.grad(stat).reshape({rows, 1});
    gx = add_opt(gx, gs * (rstd * rstd * rstd) * xc * (-1.0 / static_cast<double>(m)));
  }
  if (gx.defined()) c.set(0, gx.reshape(c.in_meta(0).sizes));
  if (gw.defined()) c.set(1, gw.reshape(c.in_meta(1).sizes));
  if (gb.defined()) c.set(has_w ? 2 : 1, gb.reshape(c.in_meta(has_w ? 2 : 1).sizes));
}

void layer_norm_vjp(VjpContext& c) {
  const bool only_y = !c.has_grad(1) && !c.has_grad(2);
  if (is_grad_enabled() || !only_y) return norm_composite(c, true);
  const bool has_w = c.attrs().i1 & 1, has_b = c.attrs().i1 & 2;
  Tensor w = has_w ? c.in(1) : Tensor();
  auto [gx, gw, gb] =
      layer_norm_backward_op(c.grad(0), c.in(0), c.out(1), c.out(2), c.attrs().i0, w, has_b);
  c.set(0, gx);
  if (has_w) c.set(1, gw.reshape(c.in_meta(1).sizes));
  if (has_b) c.set(has_w ? 2 : 1, gb.reshape(c.in_meta(has_w ? 2 : 1).sizes));
}

void rms_norm_vjp(VjpContext& c) {
  if (is_grad_enabled() || c.has_grad(1)) return norm_composite(c, false);
  const bool has_w = c.attrs().i1 & 1;
  Tensor w = has_w ? c.in(1) : Tensor();
  auto [gx, gw] = rms_norm_backward_op(c.grad(0), c.in(0), c.out(1), c.attrs().i0, w);
  c.set(0, gx);
  if (has_w) c.set(1, gw.reshape(c.in_meta(1).sizes));
}

// ---- nll_loss on x [n, c, k], target (n*k elements) -------------------------------------------
struct NllParts {
  int64_t n, cls, k;
  Tensor onehot;  // [n, c, k] in x's dtype: target == class and not ignored
  Tensor wsel;    // onehot scaled by the class weight
};

NllParts nll_parts(const VjpContext& c, const Tensor& target, const Tensor& weight) {
  const TensorMeta& m = c.op() == OpId::NllLoss ? c.in_meta(0) : c.out_meta(0);
  NllParts p{m.sizes[0], m.sizes[1], m.sizes[2], {}, {}};
  Tensor t = target.reshape({p.n, 1, p.k});
  Tensor cls = kiln::arange(p.cls, TensorOptions(t.dtype()).device(m.device)).view({1, p.cls, 1});
  Tensor hit = (t == cls) & (t != c.attrs().i0);
  p.onehot = hit.to(m.dtype);
  p.wsel = weight.defined() ? p.onehot * weight.view({1, p.cls, 1}) : p.onehot;
  return p;
}

// The loss's gradient broadcast against [n, c, k].
Tensor nll_grad_b(const Tensor& g, const NllParts& p, int64_t reduction) {
  return reduction == 0 ? g.reshape({p.n, 1, p.k}) : g.reshape({1, 1, 1});
}

void nll_loss_vjp(VjpContext& c) {
  const int64_t red = c.attrs().i1;
  const bool has_w = c.attrs().flag;
  Tensor target = c.in(1), weight = has_w ? c.in(2) : Tensor();
  if (!is_grad_enabled() && !(has_w && c.needs(2)) && !c.has_grad(1)) {
    const TensorMeta& m = c.in_meta(0);
    Tensor shape_only = kiln::empty(m.sizes, opts_of(m));
    DimVector nk{m.sizes[0], m.sizes[2]}, none;
    c.set(0, nll_loss_backward_op(c.grad(0).reshape(red == 0 ? nk : none), shape_only,
                                  target.reshape(nk), weight, c.attrs().i0, red, c.out(1)));
    return;
  }
  NllParts p = nll_parts(c, target, weight);
  Tensor x = c.in(0);
  Tensor gb = nll_grad_b(c.grad(0), p, red);
  Tensor total = p.wsel.sum();
  if (red == 1) gb = gb / total;
  c.set(0, -(gb * p.wsel));
  if (has_w && c.needs(2)) {
    // d loss / d w_c (sum form): -x at the class-c targets; mean adds the quotient term.
    Tensor gw = (-(gb * x * p.onehot)).sum({0, 2});
    if (red == 1) {
      Tensor loss = (-(x * p.wsel)).sum() / total;
      gw = gw - (gb * loss * p.onehot).sum({0, 2});
    }
    if (c.has_grad(1)) gw = gw + c.grad(1) * p.onehot.sum({0, 2});
    c.set(2, gw);
  }
}

// NllLossBackward: in = (grad, target, [weight], total_weight); out = -G * wsel (/ W for mean).
void nll_loss_backward_vjp(VjpContext& c) {
  const int64_t red = c.attrs().i1;
  const bool has_w = c.attrs().flag;
  const int iw = has_w ? 3 : 2;
  Tensor g = c.in(0), weight = has_w ? c.in(2) : Tensor(), total = c.in(iw);
  NllParts p = nll_parts(c, c.in(1), weight);
  Tensor gg = c.grad(0).reshape({p.n, p.cls, p.k});
  Tensor scale = red == 1 ? kiln::reciprocal(total.reshape({1, 1, 1})) : Tensor();
  Tensor gbar = -(gg * p.wsel);  // d out / d G, before the sum over classes
  if (scale.defined()) gbar = gbar * scale;
  if (c.needs(0)) {
    Tensor r = gbar.sum({1});  // [n, k]
    c.set(0, (red == 0 ? r : r.sum()).reshape(c.in_meta(0).sizes));
  }
  Tensor gb = nll_grad_b(g, p, red);
  if (has_w && c.needs(2)) {
    Tensor gw = (-(gg * gb * p.onehot));
    if (scale.defined()) gw = gw * scale;
    c.set(2, gw.sum({0, 2}));
  }
  if (red == 1 && c.needs(iw)) {
    Tensor tw = (gg * gb * p.wsel).sum() / (total * total);
    c.set(iw, tw.reshape(c.in_meta(iw).sizes));
  }
}

// ---- embedding ------------------------------------------------------------------------------
void embedding_vjp(VjpContext& c) {
  Tensor idx = c.in(1);
  const TensorMeta& w = c.in_meta(0);
  DimVector gs(idx.sizes().begin(), idx.sizes().end());
  gs.push_back(w.sizes[1]);
  c.set(0, embedding_backward_op(c.grad(0).reshape(gs), idx, w.sizes[0], c.attrs().i0));
}

// EmbeddingBackward: in = (grad [numel, d], indices); the adjoint is the row lookup.
void embedding_backward_vjp(VjpContext& c) {
  Tensor idx = c.in(1).reshape({-1});
  const int64_t pad = c.attrs().i0;
  Tensor r = embedding_op(c.grad(0), idx);
  if (pad >= 0) r = r * (idx != pad).unsqueeze(1).to(r.dtype());
  c.set(0, r);
}

// ---- convolution / pooling / im2col: parameters back from the attrs ---------------------------
ConvParams conv_params(const VjpContext& c) {
  ConvParams p;
  const auto& v = c.attrs().ints;
  for (int i = 0; i < 3; ++i) {
    p.stride[i] = v[i];
    p.padding[i] = v[3 + i];
    p.dilation[i] = v[6 + i];
  }
  p.groups = c.attrs().i0;
  return p;
}

// Avg pool params; ceil_mode is recovered from the input / pooled sizes.
Pool2dParams pool_params(const VjpContext& c, IntArrayRef in, IntArrayRef out) {
  Pool2dParams p;
  const auto& v = c.attrs().ints;
  for (int i = 0; i < 2; ++i) {
    p.kernel[i] = v[i];
    p.stride[i] = v[2 + i];
    p.padding[i] = v[4 + i];
  }
  for (int i = 0; i < 2; ++i)
    if (pool_output_size(in[2 + i], p.kernel[i], p.stride[i], p.padding[i], 1, false) != out[2 + i])
      p.ceil_mode = true;
  return p;
}

Im2ColParams im2col_params(const VjpContext& c) {
  Im2ColParams p;
  const auto& v = c.attrs().ints;
  for (int i = 0; i < 2; ++i) {
    p.kernel[i] = v[i];
    p.dilation[i] = v[2 + i];
    p.padding[i] = v[4 + i];
    p.stride[i] = v[6 + i];
  }
  return p;
}

// Gathers gg [N, C, H, W] at the flat H*W positions idx [N, C, Ho, Wo] (max pool's adjoint).
Tensor gather_hw(const Tensor& gg, const Tensor& idx) {
  const int64_t n = idx.size(0), ch = idx.size(1);
  Tensor r = gg.reshape({n, ch, -1}).gather(2, idx.reshape({n, ch, -1}));
  return r.reshape(idx.sizes());
}

void register_conv_pool_vjps() {
  // y = C(x, w) is bilinear; B_in(g, w) and B_w(g, x) are its adjoints in x and w, so
  // <gg, B_in(g, w)> = <g, C(gg, w)> and <gg, B_w(g, x)> = <g, C(x, gg)>.
  set_vjp(
      OpId::Convolution,
      [](VjpContext& c) {
        const ConvParams p = conv_params(c);
        Tensor g = c.grad();
        if (c.needs(0)) c.set(0, convolution_backward_input_op(g, c.in(1), c.in_meta(0).sizes, p));
        if (c.needs(1)) c.set(1, convolution_backward_weight_op(g, c.in(0), c.in_meta(1).sizes, p));
        if (c.attrs().flag && c.needs(2)) c.set(2, g.sum({0, 2, 3, 4}));
      },
      kIn0 | kIn1);
  set_vjp(
      OpId::ConvolutionBackwardInput,
      [](VjpContext& c) {
        const ConvParams p = conv_params(c);
        Tensor gg = c.grad(), g = c.in(0);
        if (c.needs(0)) c.set(0, convolution_op(gg, c.in(1), Tensor(), p));
        if (c.needs(1)) c.set(1, convolution_backward_weight_op(g, gg, c.in_meta(1).sizes, p));
      },
      kIn0 | kIn1);
  set_vjp(
      OpId::ConvolutionBackwardWeight,
      [](VjpContext& c) {
        const ConvParams p = conv_params(c);
        Tensor gg = c.grad(), g = c.in(0), x = c.in(1);
        if (c.needs(0)) c.set(0, convolution_op(x, gg, Tensor(), p));
        if (c.needs(1)) c.set(1, convolution_backward_input_op(g, gg, c.in_meta(1).sizes, p));
      },
      kIn0 | kIn1);
  auto max_pool = [](VjpContext& c) {
    c.set(0, max_pool2d_backward_op(c.grad(0), c.out(1), c.in_meta(0).sizes));
  };
  set_vjp(OpId::MaxPool2d, max_pool, kOut1);
  set_vjp(OpId::AdaptiveMaxPool2d, max_pool, kOut1);
  set_vjp(
      OpId::MaxPool2dBackward, [](VjpContext& c) { c.set(0, gather_hw(c.grad(), c.in(1))); }, kIn1);
  set_vjp(
      OpId::AvgPool2d,
      [](VjpContext& c) {
        const auto& in = c.in_meta(0).sizes;
        const Pool2dParams p = pool_params(c, in, c.out_meta(0).sizes);
        c.set(0, avg_pool2d_backward_op(c.grad(), in, p, c.attrs().flag, c.attrs().i0));
      },
      0);
  set_vjp(
      OpId::AvgPool2dBackward,
      [](VjpContext& c) {
        const Pool2dParams p = pool_params(c, c.out_meta(0).sizes, c.in_meta(0).sizes);
        c.set(0, avg_pool2d_op(c.grad(), p, c.attrs().flag, c.attrs().i0));
      },
      0);
  set_vjp(
      OpId::AdaptiveAvgPool2d,
      [](VjpContext& c) {
        c.set(0, adaptive_avg_pool2d_backward_op(c.grad(), c.in_meta(0).sizes));
      },
      0);
  set_vjp(
      OpId::AdaptiveAvgPool2dBackward,
      [](VjpContext& c) {
        const auto& s = c.in_meta(0).sizes;
        c.set(0, adaptive_avg_pool2d_op(c.grad(), s[2], s[3]));
      },
      0);
  // im2col and col2im are each other's adjoints.
  set_vjp(
      OpId::Im2Col,
      [](VjpContext& c) {
        const auto& s = c.in_meta(0).sizes;
        c.set(0, col2im_op(c.grad(), s[2], s[3], im2col_params(c)));
      },
      0);
  set_vjp(
      OpId::Col2Im, [](VjpContext& c) { c.set(0, im2col_op(c.grad(), im2col_params(c))); }, 0);
}

}  // namespace

void register_nn_vjps() {
  register_conv_pool_vjps();
  set_vjp(
      OpId::Softmax,
      [](VjpContext& c) { c.set(0, softmax_backward_op(c.grad(), c.out(0), c.attrs().i0)); },
      kOut0);
  set_vjp(
      OpId::LogSoftmax,
      [](VjpContext& c) { c.set(0, log_softmax_backward_op(c.grad(), c.out(0), c.attrs().i0)); },
      kOut0);
  // SoftmaxBackward(g, y) = y * (g - sum(g * y)).
  set_vjp(
      OpId::SoftmaxBackward,
      [](VjpContext& c) {
        const int64_t d = c.attrs().i0;
        Tensor gg = c.grad(), g = c.in(0), y = c.in(1);
        if (c.needs(0)) c.set(0, softmax_backward_op(gg, y, d));
        if (c.needs(1)) {
          Tensor s = (g * y).sum({d}, true);
          c.set(1, gg * (g - s) - g * (gg * y).sum({d}, true));
        }
      },
      kIn0 | kIn1);
  // LogSoftmaxBackward(g, y) = g - exp(y) * sum(g).
  set_vjp(
      OpId::LogSoftmaxBackward,
      [](VjpContext& c) {
        const int64_t d = c.attrs().i0;
        Tensor gg = c.grad(), g = c.in(0), y = c.in(1);
        Tensor e = kiln::exp(y);
        if (c.needs(0)) c.set(0, gg - (gg * e).sum({d}, true));
        if (c.needs(1)) c.set(1, -(gg * e * g.sum({d}, true)));
      },
      kIn0 | kIn1);
  set_vjp(OpId::LayerNorm, layer_norm_vjp, kIn0 | kIn1 | kOut1 | (1u << 18));
  set_vjp(OpId::RmsNorm, rms_norm_vjp, kIn0 | kIn1 | kOut1);
  set_vjp(OpId::NllLoss, nll_loss_vjp, kIn0 | kIn1 | kIn2 | kOut1);
  set_vjp(OpId::NllLossBackward, nll_loss_backward_vjp, kIn0 | kIn1 | kIn2 | (1u << 3));
  set_vjp(OpId::Embedding, embedding_vjp, kIn1);
  set_vjp(OpId::EmbeddingBackward, embedding_backward_vjp, kIn1);
}

}  // namespace kiln::detail
