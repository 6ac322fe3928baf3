// vjps of the unary elementwise primitives (src/ops/defs/unary.def), written with kiln ops.
// Complex inputs: grad_in = g * conj(f'(z)) for holomorphic f (PyTorch's convention).
#include <cmath>

#include "autograd/vjp.h"

namespace kiln::detail {

namespace {

constexpr double kPi = 3.14159265358979323846;

Tensor zeros_for(const Tensor& like) { return kiln::zeros_like(like); }

// Trigamma psi_1(x) for real x, from kiln ops (differentiable, so digamma's double backward
// works): recurrence to x + 6, asymptotic series there, reflection for x < 0.5.
Tensor trigamma(const Tensor& x) {
  auto direct = [](const Tensor& t) {
    Tensor acc = kiln::zeros_like(t);
    for (int k = 0; k < 6; ++k) acc = acc + kiln::reciprocal(kiln::square(t + k));
    Tensor y = t + 6;
    Tensor iy = kiln::reciprocal(y), iy2 = iy * iy;
    // 1/y + 1/(2y^2) + 1/(6y^3) - 1/(30y^5) + 1/(42y^7) - 1/(30y^9) + 5/(66 y^11)
    Tensor series =
        iy + iy2 * 0.5 +
        iy * iy2 *
            (1.0 / 6 + iy2 * (-1.0 / 30 + iy2 * (1.0 / 42 + iy2 * (-1.0 / 30 + iy2 * (5.0 / 66)))));
    return acc + series;
  };
  Tensor low = x < 0.5;
  if (!kiln::any(low).item<bool>()) return direct(x);
  Tensor xr = kiln::where(low, 1 - x, x);  // reflected argument, >= 0.5
  Tensor d = direct(xr);
  Tensor s = kiln::sin(x * kPi);
  Tensor refl = (kPi * kPi) / (s * s) - d;
  return kiln::where(low, refl, d);
}

}  // namespace

void register_unary_vjps() {
  set_vjp(
      OpId::Abs, [](VjpContext& c) { c.set(0, c.grad() * kiln::sgn(c.in(0))); }, kIn0);
  set_vjp(
      OpId::Neg, [](VjpContext& c) { c.set(0, -c.grad()); }, 0);
  set_vjp(
      OpId::Sign, [](VjpContext& c) {}, 0);  // zero gradient
  set_vjp(
      OpId::Sgn,
      [](VjpContext& c) {
        Tensor x = c.in(0);
        if (!x.is_complex()) return;  // real sgn = sign: zero gradient
        // d sgn/dz = 1/(2|z|), d sgn/dz* = -sgn^2/(2|z|)  ->  (g - sgn^2 conj(g)) / (2|z|)
        Tensor g = c.grad(), s = c.out(0), a = kiln::abs(x);
        Tensor safe = kiln::where(a == 0, kiln::ones_like(a), a);
        Tensor r = (g - s * s * kiln::conj_physical(g)) / (safe * 2);
        c.set(0, kiln::where(a == 0, kiln::zeros_like(r), r));
      },
      kIn0 | kOut0);
  set_vjp(
      OpId::Exp, [](VjpContext& c) { c.set(0, c.grad() * conj_if(c.out(0))); }, kOut0);
  set_vjp(
      OpId::Exp2, [](VjpContext& c) { c.set(0, c.grad() * conj_if(c.out(0) * std::log(2.0))); },
      kOut0);
  set_vjp(
      OpId::Expm1, [](VjpContext& c) { c.set(0, c.grad() * conj_if(c.out(0) + 1)); }, kOut0);
  set_vjp(
      OpId::Log, [](VjpContext& c) { c.set(0, c.grad() / conj_if(c.in(0))); }, kIn0);
  set_vjp(
      OpId::Log2, [](VjpContext& c) { c.set(0, c.grad() / conj_if(c.in(0) * std::log(2.0))); },
      kIn0);
  set_vjp(
      OpId::Log10, [](VjpContext& c) { c.set(0, c.grad() / conj_if(c.in(0) * std::log(10.0))); },
      kIn0);
  set_vjp(
      OpId::Log1p, [](VjpContext& c) { c.set(0, c.grad() / conj_if(c.in(0) + 1)); }, kIn0);
  set_vjp(
      OpId::Sqrt, [](VjpContext& c) { c.set(0, c.grad() / (conj_if(c.out(0)) * 2)); }, kOut0);
  set_vjp(
      OpId::Rsqrt,
      [](VjpContext& c) {
        Tensor y = c.out(0);
        c.set(0, c.grad() * conj_if(y * y * y * -0.5));
      },
      kOut0);
  set_vjp(
      OpId::Square, [](VjpContext& c) { c.set(0, c.grad() * conj_if(c.in(0) * 2)); }, kIn0);
  set_vjp(
      OpId::Reciprocal,
      [](VjpContext& c) {
        Tensor y = c.out(0);
        c.set(0, -c.grad() * conj_if(y * y));
      },
      kOut0);
  set_vjp(
      OpId::Sin, [](VjpContext& c) { c.set(0, c.grad() * conj_if(kiln::cos(c.in(0)))); }, kIn0);
  set_vjp(
      OpId::Cos, [](VjpContext& c) { c.set(0, -c.grad() * conj_if(kiln::sin(c.in(0)))); }, kIn0);
  set_vjp(
      OpId::Tan,
      [](VjpContext& c) {
        Tensor y = c.out(0);
        c.set(0, c.grad() * conj_if(y * y + 1));
      },
      kOut0);
  set_vjp(
      OpId::Asin,
      [](VjpContext& c) {
        Tensor x = c.in(0);
        c.set(0, c.grad() / conj_if(kiln::sqrt(1 - x * x)));
      },
      kIn0);
  set_vjp(
      OpId::Acos,
      [](VjpContext& c) {
        Tensor x = c.in(0);
        c.set(0, -c.grad() / conj_if(kiln::sqrt(1 - x * x)));
      },
      kIn0);
  set_vjp(
      OpId::Atan,
      [](VjpContext& c) {
        Tensor x = c.in(0);
        c.set(0, c.grad() / conj_if(x * x + 1));
      },
      kIn0);
  set_vjp(
      OpId::Sinh, [](VjpContext& c) { c.set(0, c.grad() * conj_if(kiln::cosh(c.in(0)))); }, kIn0);
  set_vjp(
      OpId::Cosh, [](VjpContext& c) { c.set(0, c.grad() * conj_if(kiln::sinh(c.in(0)))); }, kIn0);
  set_vjp(
      OpId::Tanh,
      [](VjpContext& c) {
        Tensor y = c.out(0);
        c.set(0, c.grad() * conj_if(1 - y * y));
      },
      kOut0);
  set_vjp(
      OpId::Asinh,
      [](VjpContext& c) {
        Tensor x = c.in(0);
        c.set(0, c.grad() / conj_if(kiln::sqrt(x * x + 1)));
      },
      kIn0);
  set_vjp(
      OpId::Acosh,
      [](VjpContext& c) {
        Tensor x = c.in(0);
        c.set(0, c.grad() / conj_if(kiln::sqrt(x - 1) * kiln::sqrt(x + 1)));
      },
      kIn0);
  set_vjp(
      OpId::Atanh,
      [](VjpContext& c) {
        Tensor x = c.in(0);
        c.set(0, c.grad() / conj_if(1 - x * x));
      },
      kIn0);
  set_vjp(
      OpId::Sigmoid,
      [](VjpContext& c) {
        Tensor y = c.out(0);
        c.set(0, c.grad() * conj_if(y * (1 - y)));
      },
      kOut0);
  set_vjp(
      OpId::Logit,
      [](VjpContext& c) {
        Tensor x = c.in(0);
        Tensor r = c.grad() / (x * (1 - x));
        double eps = c.attrs().s0.to<double>();
        if (eps >= 0) r = kiln::where((x < eps) | (x > 1 - eps), kiln::zeros_like(r), r);
        c.set(0, r);
      },
      kIn0);
  set_vjp(
      OpId::Erf,
      [](VjpContext& c) {
        Tensor x = c.in(0);
        c.set(0, c.grad() * kiln::exp(-x * x) * (2 / std::sqrt(kPi)));
      },
      kIn0);
  set_vjp(
      OpId::Erfc,
      [](VjpContext& c) {
        Tensor x = c.in(0);
        c.set(0, c.grad() * kiln::exp(-x * x) * (-2 / std::sqrt(kPi)));
      },
      kIn0);
  set_vjp(
      OpId::Erfinv,
      [](VjpContext& c) {
        Tensor y = c.out(0);
        c.set(0, c.grad() * kiln::exp(y * y) * (std::sqrt(kPi) / 2));
      },
      kOut0);
  set_vjp(
      OpId::Lgamma, [](VjpContext& c) { c.set(0, c.grad() * kiln::digamma(c.in(0))); }, kIn0);
  set_vjp(
      OpId::Digamma, [](VjpContext& c) { c.set(0, c.grad() * trigamma(c.in(0))); }, kIn0);
  for (OpId id : {OpId::Floor, OpId::Ceil, OpId::Round, OpId::RoundDecimals, OpId::Trunc})
    set_vjp(
        id, [](VjpContext& c) {}, 0);  // piecewise constant: zero gradient
  set_vjp(
      OpId::Frac, [](VjpContext& c) { c.set(0, c.grad()); }, 0);
  set_vjp(
      OpId::Relu,
      [](VjpContext& c) {
        Tensor g = c.grad();
        c.set(0, kiln::where(c.out(0) > 0, g, kiln::zeros_like(g)));
      },
      kOut0);
  set_vjp(
      OpId::Gelu,
      [](VjpContext& c) {
        Tensor x = c.in(0);
        Tensor cdf = (kiln::erf(x * (1 / std::sqrt(2.0))) + 1) * 0.5;
        Tensor pdf = kiln::exp(x * x * -0.5) * (1 / std::sqrt(2 * kPi));
        c.set(0, c.grad() * (cdf + x * pdf));
      },
      kIn0);
  set_vjp(
      OpId::GeluTanh,
      [](VjpContext& c) {
        Tensor x = c.in(0);
        const double k = std::sqrt(2 / kPi), a = 0.044715;
        Tensor x2 = x * x;
        Tensor t = kiln::tanh((x + x * x2 * a) * k);
        Tensor d = (t + 1) * 0.5 + x * (1 - t * t) * ((x2 * (3 * a) + 1) * (0.5 * k));
        c.set(0, c.grad() * d);
      },
      kIn0);
  set_vjp(
      OpId::Silu,
      [](VjpContext& c) {
        Tensor x = c.in(0);
        Tensor s = kiln::sigmoid(x);
        c.set(0, c.grad() * conj_if(s * (x * (1 - s) + 1)));
      },
      kIn0);
  set_vjp(
      OpId::Softplus,
      [](VjpContext& c) {
        Tensor x = c.in(0), g = c.grad();
        Scalar beta = c.attrs().s0, threshold = c.attrs().s1;
        Tensor bx = x * beta;
        c.set(0, kiln::where(bx > threshold, g, g * kiln::sigmoid(bx)));
      },
      kIn0);
  set_vjp(
      OpId::NanToNum,
      [](VjpContext& c) {
        Tensor g = c.grad();
        c.set(0, kiln::where(kiln::isfinite(c.in(0)), g, kiln::zeros_like(g)));
      },
      kIn0);
  set_vjp(
      OpId::ConjPhysical, [](VjpContext& c) { c.set(0, conj_if(c.grad())); }, 0);
  set_vjp(
      OpId::Angle,
      [](VjpContext& c) {
        Tensor x = c.in(0);
        if (!x.is_complex()) return;  // real angle is piecewise constant
        // d angle: i g z / |z|^2 (0 at z = 0)
        Tensor a2 = kiln::square(kiln::abs(x));
        Tensor safe = kiln::where(a2 == 0, kiln::ones_like(a2), a2);
        Tensor r = c.grad() * x / safe * Scalar(complex<double>(0, 1));
        c.set(0, kiln::where(a2 == 0, kiln::zeros_like(r), r));
      },
      kIn0);
  (void)zeros_for;
}

}  // namespace kiln::detail
