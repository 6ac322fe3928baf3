// vjps of the binary elementwise primitives (src/ops/defs/binary.def), written with kiln ops.
// Gradients have the broadcast output's shape: the engine sums them to each input's shape.
#include "autograd/vjp.h"

namespace kiln::detail {

namespace {

Tensor masked(const Tensor& cond, const Tensor& g) {
  return kiln::where(cond, g, kiln::zeros_like(g));
}

}  // namespace

void register_binary_vjps() {
  set_vjp(
      OpId::Add,
      [](VjpContext& c) {
        Tensor g = c.grad();
        c.set(0, g);
        if (c.needs(1)) c.set(1, c.attrs().has_s0 ? times(g, conj_scalar(c.attrs().s0)) : g);
      },
      0);
  set_vjp(
      OpId::Sub,
      [](VjpContext& c) {
        Tensor g = c.grad();
        c.set(0, g);
        if (c.needs(1))
          c.set(1, c.attrs().has_s0 && !is_one(c.attrs().s0) ? g * -conj_scalar(c.attrs().s0) : -g);
      },
      0);
  set_vjp(
      OpId::Mul,
      [](VjpContext& c) {
        Tensor g = c.grad();
        if (c.needs(0)) c.set(0, g * conj_if(c.in(1)));
        if (c.needs(1)) c.set(1, g * conj_if(c.in(0)));
      },
      kIn0 | kIn1);
  set_vjp(
      OpId::Div,
      [](VjpContext& c) {
        Tensor g = c.grad(), b = c.in(1);
        if (c.needs(0)) c.set(0, g / conj_if(b));
        if (c.needs(1)) c.set(1, -g * conj_if(c.in(0) / (b * b)));
      },
      kIn0 | kIn1);
  for (OpId id : {OpId::DivTrunc, OpId::DivFloor})
    set_vjp(
        id, [](VjpContext& c) {}, 0);  // piecewise constant
  set_vjp(
      OpId::Remainder,
      [](VjpContext& c) {
        Tensor g = c.grad();
        c.set(0, g);
        if (c.needs(1)) c.set(1, -g * kiln::div(c.in(0), c.in(1), "floor"));
      },
      kIn0 | kIn1);
  set_vjp(
      OpId::Fmod,
      [](VjpContext& c) {
        Tensor g = c.grad();
        c.set(0, g);
        if (c.needs(1)) c.set(1, -g * kiln::div(c.in(0), c.in(1), "trunc"));
      },
      kIn0 | kIn1);
  set_vjp(
      OpId::Pow,
      [](VjpContext& c) {
        Tensor g = c.grad(), a = c.in(0), b = c.in(1);
        if (c.needs(0)) {
          Tensor d = g * conj_if(b * kiln::pow(a, b - 1));
          c.set(0, kiln::where(b == 0, kiln::zeros_like(d), d));
        }
        if (c.needs(1)) {
          Tensor d = g * conj_if(c.out(0) * kiln::log(a));
          Tensor cond = a.is_complex() ? (a == 0) : ((a == 0) & (b >= 0));
          c.set(1, kiln::where(cond, kiln::zeros_like(d), d));
        }
      },
      kIn0 | kIn1 | kOut0);
  set_vjp(
      OpId::Atan2,
      [](VjpContext& c) {
        Tensor g = c.grad(), a = c.in(0), b = c.in(1);
        Tensor den = a * a + b * b;
        if (c.needs(0)) c.set(0, g * b / den);
        if (c.needs(1)) c.set(1, g * -a / den);
      },
      kIn0 | kIn1);
  set_vjp(
      OpId::Hypot,
      [](VjpContext& c) {
        Tensor g = c.grad(), y = c.out(0);
        if (c.needs(0)) c.set(0, g * c.in(0) / y);
        if (c.needs(1)) c.set(1, g * c.in(1) / y);
      },
      kIn0 | kIn1 | kOut0);
  set_vjp(
      OpId::Copysign,
      [](VjpContext& c) {
        Tensor a = c.in(0);
        Tensor safe = kiln::where(a == 0, kiln::ones_like(a), a);
        Tensor ratio = kiln::where(a == 0, kiln::zeros_like(a), c.out(0) / safe);
        c.set(0, c.grad() * ratio);
      },
      kIn0 | kOut0);
  // maximum/minimum: ties split the gradient evenly (PyTorch).
  auto minmax = [](VjpContext& c, bool is_max) {
    Tensor g = c.grad(), a = c.in(0), b = c.in(1);
    Tensor half = kiln::where(a == b, g * 0.5, g);
    Tensor a_loses = is_max ? a < b : a > b;
    if (c.needs(0)) c.set(0, kiln::where(a_loses, kiln::zeros_like(half), half));
    if (c.needs(1)) c.set(1, kiln::where(is_max ? a > b : a < b, kiln::zeros_like(half), half));
  };
  static void (*mm)(VjpContext&, bool) = minmax;
  set_vjp(
      OpId::Maximum, [](VjpContext& c) { mm(c, true); }, kIn0 | kIn1);
  set_vjp(
      OpId::Minimum, [](VjpContext& c) { mm(c, false); }, kIn0 | kIn1);
  // fmax/fmin: the gradient goes to the operand chosen (NaN operands are skipped).
  set_vjp(
      OpId::Fmax,
      [](VjpContext& c) {
        Tensor g = c.grad(), a = c.in(0), b = c.in(1);
        Tensor pick_a = (a >= b) | kiln::isnan(b);
        if (c.needs(0)) c.set(0, masked(pick_a, g));
        if (c.needs(1)) c.set(1, masked(kiln::logical_not(pick_a), g));
      },
      kIn0 | kIn1);
  set_vjp(
      OpId::Fmin,
      [](VjpContext& c) {
        Tensor g = c.grad(), a = c.in(0), b = c.in(1);
        Tensor pick_a = (a <= b) | kiln::isnan(b);
        if (c.needs(0)) c.set(0, masked(pick_a, g));
        if (c.needs(1)) c.set(1, masked(kiln::logical_not(pick_a), g));
      },
      kIn0 | kIn1);
  set_vjp(
      OpId::ClampMin,
      [](VjpContext& c) {
        Tensor g = c.grad(), x = c.in(0), lo = c.in(1);
        if (c.needs(0)) c.set(0, masked(x >= lo, g));
        if (c.needs(1)) c.set(1, masked(x < lo, g));
      },
      kIn0 | kIn1);
  set_vjp(
      OpId::ClampMax,
      [](VjpContext& c) {
        Tensor g = c.grad(), x = c.in(0), hi = c.in(1);
        if (c.needs(0)) c.set(0, masked(x <= hi, g));
        if (c.needs(1)) c.set(1, masked(x > hi, g));
      },
      kIn0 | kIn1);
}

void register_ternary_vjps() {
  set_vjp(
      OpId::Where,
      [](VjpContext& c) {
        Tensor g = c.grad(), cond = c.in(0);
        if (c.needs(1)) c.set(1, masked(cond, g));
        if (c.needs(2)) c.set(2, masked(kiln::logical_not(cond), g));
      },
      kIn0);
  set_vjp(
      OpId::Clamp,
      [](VjpContext& c) {
        Tensor g = c.grad(), x = c.in(0), lo = c.in(1), hi = c.in(2);
        if (c.needs(0)) c.set(0, masked((x >= lo) & (x <= hi), g));
        if (c.needs(1)) c.set(1, masked((x < lo) & (lo <= hi), g));
        if (c.needs(2)) c.set(2, masked((x > hi) | (lo > hi), g));
      },
      kIn0 | kIn1 | kIn2);
  set_vjp(
      OpId::Lerp,
      [](VjpContext& c) {
        Tensor g = c.grad(), s = c.in(0), e = c.in(1), w = c.in(2);
        if (c.needs(0)) c.set(0, g * conj_if(1 - w));
        if (c.needs(1)) c.set(1, g * conj_if(w));
        if (c.needs(2)) c.set(2, g * conj_if(e - s));
      },
      kIn0 | kIn1 | kIn2);
  set_vjp(
      OpId::Addcmul,
      [](VjpContext& c) {
        Tensor g = c.grad();
        Scalar v = conj_scalar(c.attrs().has_s0 ? c.attrs().s0 : Scalar(1));
        c.set(0, g);
        if (c.needs(1)) c.set(1, g * conj_if(c.in(2)) * v);
        if (c.needs(2)) c.set(2, g * conj_if(c.in(1)) * v);
      },
      kIn1 | kIn2);
  set_vjp(
      OpId::Addcdiv,
      [](VjpContext& c) {
        Tensor g = c.grad(), t1 = c.in(1), t2 = c.in(2);
        Scalar v = conj_scalar(c.attrs().has_s0 ? c.attrs().s0 : Scalar(1));
        c.set(0, g);
        if (c.needs(1)) c.set(1, g / conj_if(t2) * v);
        if (c.needs(2)) c.set(2, -g * conj_if(t1 / (t2 * t2)) * v);
      },
      kIn1 | kIn2);
}

}  // namespace kiln::detail
