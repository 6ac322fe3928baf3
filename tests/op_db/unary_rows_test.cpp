// Op-table rows of the unary elementwise ops. References use std:: math in double (complex:
// std::complex<double>), or definitions written out (rounding, sign, relu, ...); the special
// functions without a std:: counterpart are computed independently (see erfinv_ref, digamma_ref).
#include "op_db/elementwise_rows_util.h"

namespace kiln::testing {
namespace {

using namespace ew;

// erfinv by bisection of erf (erfc in the upper half, where 1 - x is exact) in long double.
double erfinv_ref(double x) {
  if (std::isnan(x) || std::abs(x) > 1) return kNan;
  if (std::abs(x) == 1) return std::copysign(kInf, x);
  long double ax = std::abs(x), lo = 0, hi = 10;
  for (int i = 0; i < 200; ++i) {
    long double mid = (lo + hi) / 2;
    bool below = ax < 0.5L ? std::erf(mid) < ax : std::erfc(mid) > 1 - ax;
    (below ? lo : hi) = mid;
  }
  return std::copysign(static_cast<double>((lo + hi) / 2), x);
}

// digamma as the derivative of std::lgamma (long double, 8th-order central differences at
// points >= 2, where the stencil error is ~1e-15), with the textbook identities
// psi(x) = psi(x + 1) - 1/x and psi(x) = psi(1 - x) - pi cot(pi x) to reach them.
double digamma_ref(double x) {
  if (std::isnan(x)) return x;
  if (x == 0) return std::signbit(x) ? kInf : -kInf;
  if (std::isinf(x)) return x > 0 ? kInf : kNan;
  if (x < 0) {
    if (x == std::floor(x)) return kNan;
    long double r = x - std::floor(x);
    return digamma_ref(1 - x) -
           static_cast<double>(std::acos(-1.0L) / std::tan(std::acos(-1.0L) * r));
  }
  long double shift = 0, y = x;
  while (y < 2) shift -= 1 / y, y += 1;
  const long double h = 1e-2L;
  auto f = [&](long double t) { return std::lgamma(t); };
  long double d = (4.0L / 5) * (f(y + h) - f(y - h)) - (1.0L / 5) * (f(y + 2 * h) - f(y - 2 * h)) +
                  (4.0L / 105) * (f(y + 3 * h) - f(y - 3 * h)) -
                  (1.0L / 280) * (f(y + 4 * h) - f(y - 4 * h));
  return static_cast<double>(shift + d / h);
}

// Round half to even, from the definition.
double round_half_even(double x) {
  if (!std::isfinite(x)) return x;
  double f = std::floor(x), diff = x - f;
  if (diff > 0.5) return f + 1;
  if (diff < 0.5) return f == 0 && std::signbit(x) ? -0.0 : f;
  return std::fmod(f, 2) == 0 ? f : f + 1;
}

double sign_ref(double x) { return x > 0 ? 1 : (x < 0 ? -1 : 0); }  // NaN -> 0, as PyTorch

std::vector<OpRow> unary_rows() {
  std::vector<OpRow> rows;
  auto add = [&](Spec s) { rows.push_back(build(std::move(s))); };
  auto math = [&](std::string name, OpId id, Fn1 fn, std::function<double(double)> rf,
                  std::function<C(C)> cf, double lo = -2, double hi = 2, double tol = 1) {
    Spec s;
    s.name = name;
    s.covers = {id};
    s.dtypes = cf ? kAll : kReal;
    s.fn = call1(fn);
    s.ref = math1(rf, cf);
    s.out = to_float;
    s.lo = lo;
    s.hi = hi;
    s.tol = tol;
    add(s);
  };
  // ---- floating functions (integer and bool inputs give float32) ----
  math(
      "exp", OpId::Exp, [](const Tensor& x) { return exp(x); },
      [](double x) { return std::exp(x); }, [](C z) { return std::exp(z); });
  math(
      "exp2", OpId::Exp2, [](const Tensor& x) { return exp2(x); },
      [](double x) { return std::exp2(x); }, [](C z) { return std::exp(z * std::log(2.0)); });
  math(
      "expm1", OpId::Expm1, [](const Tensor& x) { return expm1(x); },
      [](double x) { return std::expm1(x); },
      [](C z) {
        std::complex<long double> w(z.real(), z.imag());
        auto e = std::exp(w) - 1.0L;
        return C(static_cast<double>(e.real()), static_cast<double>(e.imag()));
      });
  math(
      "log", OpId::Log, [](const Tensor& x) { return log(x); },
      [](double x) { return std::log(x); }, [](C z) { return std::log(z); });
  math(
      "log2", OpId::Log2, [](const Tensor& x) { return log2(x); },
      [](double x) { return std::log2(x); }, [](C z) { return std::log(z) / std::log(2.0); });
  math(
      "log10", OpId::Log10, [](const Tensor& x) { return log10(x); },
      [](double x) { return std::log10(x); }, [](C z) { return std::log10(z); });
  math(
      "log1p", OpId::Log1p, [](const Tensor& x) { return log1p(x); },
      [](double x) { return std::log1p(x); },
      [](C z) {
        std::complex<long double> w(1.0L + z.real(), z.imag());
        auto l = std::log(w);
        return C(static_cast<double>(l.real()), static_cast<double>(l.imag()));
      });
  math(
      "sqrt", OpId::Sqrt, [](const Tensor& x) { return sqrt(x); },
      [](double x) { return std::sqrt(x); }, [](C z) { return std::sqrt(z); });
  math(
      "rsqrt", OpId::Rsqrt, [](const Tensor& x) { return rsqrt(x); },
      [](double x) { return 1 / std::sqrt(x); }, [](C z) { return 1.0 / std::sqrt(z); });
  math(
      "reciprocal", OpId::Reciprocal, [](const Tensor& x) { return reciprocal(x); },
      [](double x) { return 1 / x; }, [](C z) { return 1.0 / z; });
  math(
      "sin", OpId::Sin, [](const Tensor& x) { return sin(x); },
      [](double x) { return std::sin(x); }, [](C z) { return std::sin(z); });
  math(
      "cos", OpId::Cos, [](const Tensor& x) { return cos(x); },
      [](double x) { return std::cos(x); }, [](C z) { return std::cos(z); });
  math(
      "tan", OpId::Tan, [](const Tensor& x) { return tan(x); },
      [](double x) { return std::tan(x); }, [](C z) { return std::tan(z); }, -1.5, 1.5);
  math(
      "asin", OpId::Asin, [](const Tensor& x) { return asin(x); },
      [](double x) { return std::asin(x); }, [](C z) { return std::asin(z); }, -1.2, 1.2);
  math(
      "acos", OpId::Acos, [](const Tensor& x) { return acos(x); },
      [](double x) { return std::acos(x); }, [](C z) { return std::acos(z); }, -1.2, 1.2);
  math(
      "atan", OpId::Atan, [](const Tensor& x) { return atan(x); },
      [](double x) { return std::atan(x); }, [](C z) { return std::atan(z); });
  math(
      "sinh", OpId::Sinh, [](const Tensor& x) { return sinh(x); },
      [](double x) { return std::sinh(x); }, [](C z) { return std::sinh(z); });
  math(
      "cosh", OpId::Cosh, [](const Tensor& x) { return cosh(x); },
      [](double x) { return std::cosh(x); }, [](C z) { return std::cosh(z); });
  math(
      "tanh", OpId::Tanh, [](const Tensor& x) { return tanh(x); },
      [](double x) { return std::tanh(x); }, [](C z) { return std::tanh(z); });
  math(
      "asinh", OpId::Asinh, [](const Tensor& x) { return asinh(x); },
      [](double x) { return std::asinh(x); }, [](C z) { return std::asinh(z); });
  math(
      "acosh", OpId::Acosh, [](const Tensor& x) { return acosh(x); },
      [](double x) { return std::acosh(x); }, [](C z) { return std::acosh(z); }, 0.5, 4);
  math(
      "atanh", OpId::Atanh, [](const Tensor& x) { return atanh(x); },
      [](double x) { return std::atanh(x); }, [](C z) { return std::atanh(z); }, -1.2, 1.2);
  // sigmoid(x) = (1 + tanh(x / 2)) / 2 (an identity, not the kernel's formula).
  math(
      "sigmoid", OpId::Sigmoid, [](const Tensor& x) { return sigmoid(x); },
      [](double x) { return 0.5 * (1 + std::tanh(0.5 * x)); },
      [](C z) { return 1.0 / (1.0 + std::exp(-z)); });
  math(
      "erf", OpId::Erf, [](const Tensor& x) { return erf(x); },
      [](double x) { return std::erf(x); }, nullptr);
  math(
      "erfc", OpId::Erfc, [](const Tensor& x) { return erfc(x); },
      [](double x) { return std::erfc(x); }, nullptr);
  math(
      "erfinv", OpId::Erfinv, [](const Tensor& x) { return erfinv(x); }, erfinv_ref, nullptr, -1.1,
      1.1);
  math(
      "lgamma", OpId::Lgamma, [](const Tensor& x) { return lgamma(x); },
      [](double x) { return std::lgamma(x); }, nullptr, -3, 5);
  // digamma: positive arguments for every dtype; negative ones (poles at the integers, where
  // the condition number is unbounded) in float64 only.
  math(
      "digamma", OpId::Digamma, [](const Tensor& x) { return digamma(x); }, digamma_ref, nullptr,
      0.05, 6);
  math(
      "digamma.negative", OpId::Digamma, [](const Tensor& x) { return digamma(x); }, digamma_ref,
      nullptr, -3, 0);
  rows.back().dtypes = detail::dtype_bit(DType::Float64);
  {
    // logit(x) = 2 atanh(2x - 1) (an identity), with and without the eps clamp.
    Spec s;
    s.name = "logit";
    s.covers = {OpId::Logit};
    s.dtypes = kReal;
    s.fn = call1([](const Tensor& x) { return logit(x); });
    s.ref = math1([](double x) { return 2 * std::atanh(2 * x - 1); });
    s.out = to_float;
    s.lo = -0.2, s.hi = 1.2;
    add(s);
    s.name = "logit.eps";
    s.fn = call1([](const Tensor& x) { return logit(x, 0.25); });
    s.ref = math1([](double x) {
      double z = std::isnan(x) ? x : std::min(std::max(x, 0.25), 0.75);
      return 2 * std::atanh(2 * z - 1);
    });
    add(s);
  }
  // ---- sign family, abs, neg, square ----
  {
    Spec s;
    s.name = "abs";
    s.covers = {OpId::Abs};
    s.dtypes = kAll & ~kB;  // PyTorch has no abs for bool
    s.fn = call1([](const Tensor& x) { return abs(x); });
    s.ref = [](const std::vector<C>& a, const Sample&) { return C(std::abs(a[0])); };
    s.iref = iref1([](int64_t v) { return v < 0 ? -v : v; });
    s.out = real_of;
    add(s);
  }
  {
    Spec s;
    s.name = "neg";
    s.covers = {OpId::Neg};
    s.dtypes = kAll & ~kB;
    s.fn = call1([](const Tensor& x) { return -x; });
    s.ref = [](const std::vector<C>& a, const Sample&) { return -a[0]; };
    s.iref = iref1([](int64_t v) { return -v; });
    add(s);
  }
  {
    Spec s;
    s.name = "sign";
    s.covers = {OpId::Sign};
    s.dtypes = kReal;
    s.fn = call1([](const Tensor& x) { return sign(x); });
    s.ref = math1(sign_ref);
    s.iref = iref1([](int64_t v) { return v > 0 ? 1 : (v < 0 ? -1 : 0); });
    add(s);
    s.name = "sgn";
    s.covers = {OpId::Sgn};
    s.dtypes = kAll;
    s.fn = call1([](const Tensor& x) { return sgn(x); });
    s.ref = math1(sign_ref, [](C z) { return z == C(0) ? C(0) : z / std::abs(z); });
    add(s);
  }
  {
    Spec s;
    s.name = "square";
    s.covers = {OpId::Square};
    s.dtypes = kAll;
    s.fn = call1([](const Tensor& x) { return square(x); });
    s.ref = [](const std::vector<C>& a, const Sample&) { return a[0] * a[0]; };
    s.iref = iref1([](int64_t v) { return v * v; });
    s.out = [](DType d) { return d == DType::Bool ? DType::Int64 : d; };
    add(s);
  }
  // ---- rounding (identity on integers) ----
  auto rounding = [&](std::string name, OpId id, Fn1 fn, std::function<double(double)> rf,
                      uint32_t dtypes = kI | kF) {
    Spec s;
    s.name = name;
    s.covers = {id};
    s.dtypes = dtypes;
    s.fn = call1(fn);
    s.ref = math1(rf);
    s.iref = iref1([](int64_t v) { return v; });
    s.lo = -4, s.hi = 4;
    add(s);
  };
  rounding(
      "floor", OpId::Floor, [](const Tensor& x) { return floor(x); },
      [](double x) { return std::floor(x); });
  rounding(
      "ceil", OpId::Ceil, [](const Tensor& x) { return ceil(x); },
      [](double x) { return std::ceil(x); });
  rounding(
      "trunc", OpId::Trunc, [](const Tensor& x) { return trunc(x); },
      [](double x) { return std::trunc(x); });
  rounding(
      "round", OpId::Round, [](const Tensor& x) { return round(x); }, round_half_even);
  rounding(
      "frac", OpId::Frac, [](const Tensor& x) { return frac(x); },
      [](double x) { return std::isinf(x) ? kNan : x - std::trunc(x); }, kF);
  {
    // round(x, decimals), PyTorch's definition evaluated in the op's compute precision (float
    // for 16- and 32-bit floats), so values near a tie round the same way.
    Spec s;
    s.covers = {OpId::RoundDecimals};
    s.lo = -50, s.hi = 50;
    for (int d : {2, -1}) {
      s.name = d > 0 ? "round.decimals_2" : "round.decimals_-1";
      s.fn = call1([d](const Tensor& x) { return round(x, d); });
      s.ref = [d](const std::vector<C>& a, const Sample& smp) -> C {
        double x = a[0].real(), p = std::pow(10.0, std::abs(d));
        if (tested(smp) == DType::Float64)
          return d > 0 ? round_half_even(x * p) / p : round_half_even(x / p) * p;
        float xf = static_cast<float>(x), pf = static_cast<float>(p);
        return d > 0 ? round_half_even(static_cast<float>(xf * pf)) / pf
                     : static_cast<double>(static_cast<float>(round_half_even(xf / pf)) * pf);
      };
      add(s);
    }
  }
  // ---- activations ----
  {
    Spec s;
    s.name = "relu";
    s.covers = {OpId::Relu};
    s.dtypes = kI | kF;
    s.fn = call1([](const Tensor& x) { return relu(x); });
    s.ref = math1([](double x) { return std::isnan(x) ? x : (x > 0 ? x : 0.0); });
    s.iref = iref1([](int64_t v) { return v > 0 ? v : 0; });
    add(s);
  }
  {
    Spec s;
    s.name = "gelu";
    s.covers = {OpId::Gelu};
    s.dtypes = kF;
    s.lo = -4, s.hi = 4;
    s.fn = call1([](const Tensor& x) { return gelu(x); });
    // x * Phi(x) with Phi(x) = erfc(-x / sqrt 2) / 2.
    s.ref = math1([](double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); });
    add(s);
    s.name = "gelu.tanh";
    s.covers = {OpId::GeluTanh};
    s.fn = call1([](const Tensor& x) { return gelu(x, "tanh"); });
    s.ref = math1([](double x) {
      return 0.5 * x * (1 + std::tanh(std::sqrt(2 / kPi) * (x + 0.044715 * x * x * x)));
    });
    add(s);
  }
  {
    Spec s;
    s.name = "silu";
    s.covers = {OpId::Silu};
    s.dtypes = kF | kX;
    // |Im z| < pi keeps complex samples away from the poles of 1 / (1 + e^-z), where float
    // evaluation is ill-conditioned.
    s.lo = -3, s.hi = 3;
    s.fn = call1([](const Tensor& x) { return silu(x); });
    s.ref = math1([](double x) { return x * 0.5 * (1 + std::tanh(0.5 * x)); },
                  [](C z) { return z / (1.0 + std::exp(-z)); });
    add(s);
  }
  for (double beta : {1.0, 2.0}) {
    Spec s;
    s.name = beta == 1 ? "softplus" : "softplus.beta2_threshold3";
    s.covers = {OpId::Softplus};
    s.dtypes = kF;
    s.lo = -6, s.hi = 6;
    double th = beta == 1 ? 20 : 3;
    s.fn = call1([beta, th](const Tensor& x) { return softplus(x, beta, th); });
    s.ref = math1([beta, th](double x) {
      return beta * x > th ? x : std::log(1 + std::exp(beta * x)) / beta;
    });
    add(s);
  }
  // ---- predicates ----
  auto predicate = [&](std::string name, OpId id, Fn1 fn, std::function<bool(C)> f,
                       uint32_t dtypes = kAll) {
    Spec s;
    s.name = name;
    s.covers = {id};
    s.dtypes = dtypes;
    s.fn = call1(fn);
    s.ref = [f](const std::vector<C>& a, const Sample&) { return C(f(a[0]) ? 1.0 : 0.0); };
    s.out = boolean;
    add(s);
  };
  predicate(
      "isnan", OpId::Isnan, [](const Tensor& x) { return isnan(x); },
      [](C z) { return std::isnan(z.real()) || std::isnan(z.imag()); });
  predicate(
      "isinf", OpId::Isinf, [](const Tensor& x) { return isinf(x); },
      [](C z) { return std::isinf(z.real()) || std::isinf(z.imag()); });
  predicate(
      "isfinite", OpId::Isfinite, [](const Tensor& x) { return isfinite(x); },
      [](C z) { return std::isfinite(z.real()) && std::isfinite(z.imag()); });
  predicate(
      "isposinf", OpId::Isposinf, [](const Tensor& x) { return isposinf(x); },
      [](C z) { return z.real() == kInf; }, kReal);
  predicate(
      "isneginf", OpId::Isneginf, [](const Tensor& x) { return isneginf(x); },
      [](C z) { return z.real() == -kInf; }, kReal);
  predicate(
      "logical_not", OpId::LogicalNot, [](const Tensor& x) { return logical_not(x); },
      [](C z) { return z == C(0); });
  {
    Spec s;
    s.name = "bitwise_not";
    s.covers = {OpId::BitwiseNot};
    s.dtypes = kB | kI;
    s.fn = call1([](const Tensor& x) { return ~x; });
    s.iref = [](const std::vector<int64_t>& a, const Sample& smp) -> int64_t {
      return tested(smp) == DType::Bool ? !a[0] : ~a[0];
    };
    add(s);
  }
  // ---- nan_to_num: defaults (0, the dtype's finite max / lowest) and explicit values ----
  for (bool dflt : {true, false}) {
    Spec s;
    s.name = dflt ? "nan_to_num" : "nan_to_num.values";
    s.covers = {OpId::NanToNum};
    s.dtypes = kAll;
    s.fn = call1([dflt](const Tensor& x) {
      return dflt ? nan_to_num(x) : nan_to_num(x, 1.5, 100.0, -200.0);
    });
    s.ref = [dflt](const std::vector<C>& a, const Sample& smp) {
      double big = 0;
      switch (to_real(tested(smp))) {
        case DType::Float16:
          big = 65504;
          break;
        case DType::BFloat16:
          big = std::ldexp(255.0, 120);  // (2 - 2^-7) * 2^127
          break;
        case DType::Float32:
          big = std::numeric_limits<float>::max();
          break;
        default:
          big = std::numeric_limits<double>::max();
      }
      auto fix = [&](double x) {
        if (std::isnan(x)) return dflt ? 0.0 : 1.5;
        if (x == kInf) return dflt ? big : 100.0;
        if (x == -kInf) return dflt ? -big : -200.0;
        return x;
      };
      return C(fix(a[0].real()), fix(a[0].imag()));
    };
    s.iref = iref1([](int64_t v) { return v; });
    add(s);
  }
  // ---- complex parts ----
  {
    Spec s;
    s.name = "conj_physical";
    s.covers = {OpId::ConjPhysical};
    s.dtypes = kAll;
    s.fn = call1([](const Tensor& x) { return conj_physical(x); });
    s.ref = [](const std::vector<C>& a, const Sample&) { return std::conj(a[0]); };
    s.iref = iref1([](int64_t v) { return v; });
    add(s);
    s.name = "angle";
    s.covers = {OpId::Angle};
    s.fn = call1([](const Tensor& x) { return angle(x); });
    s.ref = math1([](double x) { return std::isnan(x) ? x : (x < 0 ? kPi : 0.0); },
                  [](C z) { return C(std::arg(z)); });
    s.iref = nullptr;
    s.out = float_real;
    add(s);
  }
  {
    // polar(abs, angle): a composite (no primitive of its own).
    Spec s;
    s.name = "polar";
    s.dtypes = detail::dtype_bit(DType::Float32) | detail::dtype_bit(DType::Float64);
    s.arity = 2;
    s.special = false;
    s.fn = call2([](const Tensor& r, const Tensor& t) { return polar(r, t); });
    s.ref = [](const std::vector<C>& a, const Sample&) {
      return std::polar(a[0].real(), a[1].real());
    };
    s.out = [](DType d) { return to_complex(d); };
    s.lo = 0, s.hi = 3;
    add(s);
  }

  // ---- error cases (attached to the rows of the ops they exercise) ----
  auto errors = [&](const std::string& row, std::vector<OpRow::ErrorCase> cases) {
    for (auto& r : rows)
      if (r.name == row) r.errors.insert(r.errors.end(), cases.begin(), cases.end());
  };
  Tensor f = ones({3}), i = ones({3}, kInt64), b = ones({3}, kBool), z = ones({3}, kComplex64);
  errors("neg", {{"bool", [b] { neg(b); }}, {"logical_not", [b] { -b; }}});
  errors("sign", {{"sgn", [z] { sign(z); }}});
  errors("abs", {{"in-place abs is not supported for complex",
                  [z] {
                    Tensor t = z;
                    t.abs_();
                  }},
                 {"bool", [b] { abs(b); }}});
  errors("exp", {{"can't be cast to the desired output type int64",
                  [i] {
                    Tensor t = i;
                    t.exp_();
                  }},
                 {"doesn't match the broadcast shape", [f] {
                    Tensor out = empty({2});
                    exp_out(out, f);
                  }}});
  errors("floor", {{"complex", [z] { floor(z); }}, {"bool", [b] { floor(b); }}});
  errors("frac", {{"floating point", [i] { frac(i); }}});
  errors("round.decimals_2", {{"floating point", [i] { round(i, 2); }}});
  errors("relu",
         {{"boolean inputs are not supported", [b] { relu(b); }}, {"complex", [z] { relu(z); }}});
  errors("gelu", {{"floating point", [i] { gelu(i); }},
                  {"approximate argument must be either", [f] { gelu(f, "fast"); }}});
  errors("softplus", {{"floating point", [i] { softplus(i); }}});
  errors("logit", {{"complex", [z] { logit(z); }}});
  errors("erfinv", {{"complex", [z] { erfinv(z); }}});
  errors("isposinf", {{"complex", [z] { isposinf(z); }}});
  errors("bitwise_not", {{"only supported for integer and bool", [f] { bitwise_not(f); }}});
  errors("square", {{"can't be cast to the desired output type bool", [b] {
                       Tensor t = b;
                       t.square_();
                     }}});
  errors("angle", {{"non-complex", [f] { imag(f); }}});
  errors("polar",
         {{"same dtype", [f] { polar(f, f.to(kFloat64)); }},
          {"float32 and float64", [] { polar(ones({2}, kFloat16), ones({2}, kFloat16)); }}});
  return rows;
}

KILN_OP_ROWS(unary_rows);

}  // namespace
}  // namespace kiln::testing
