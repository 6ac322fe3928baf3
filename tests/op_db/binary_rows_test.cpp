// Op-table rows of the binary arithmetic ops (add ... copysign) and the isclose composite.
// Floating references use std:: math in double (long double where exactness matters);
// integer references compute exactly in int64 (modular uint64 products) and wrap to the dtype.
#include "op_db/elementwise_rows_util.h"

namespace kiln::testing {
namespace {

using namespace ew;

// Computes in the op's compute precision: float for every floating dtype but float64.
bool computes_in_float(const Sample& s) {
  DType d = to_real(tested(s));
  return d != DType::Float64;
}

// Python's a // b for floats (the floor of the exact quotient; IEEE rules at 0, inf and NaN).
double floordiv_ref(double a, double b) {
  if (b == 0 || std::isnan(a) || std::isnan(b)) return a / b;
  if (std::isinf(a)) return kNan;
  if (std::isinf(b)) return (a == 0 || std::signbit(a) == std::signbit(b)) ? 0.0 : -1.0;
  return static_cast<double>(std::floor(static_cast<long double>(a) / b));
}

// Python's a % b: a - b * floor(a / b), the sign of b.
double pymod_ref(double a, double b) {
  if (b == 0 || std::isnan(a) || std::isnan(b) || std::isinf(a)) return kNan;
  if (std::isinf(b)) return (a == 0 || std::signbit(a) == std::signbit(b)) ? a : b;
  long double q = std::floor(static_cast<long double>(a) / b);
  return static_cast<double>(static_cast<long double>(a) - q * b);
}

int64_t floordiv_int(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// a^b for integers by repeated multiplication modulo 2^64; negative b as PyTorch.
int64_t ipow(int64_t a, int64_t b) {
  if (b < 0) return a == 1 ? 1 : (a == -1 ? (b % 2 ? -1 : 1) : 0);
  uint64_t r = 1;
  for (int64_t k = 0; k < b; ++k) r *= static_cast<uint64_t>(a);
  return static_cast<int64_t>(r);
}

std::vector<OpRow> binary_rows() {
  std::vector<OpRow> rows;
  auto add_row = [&](Spec s) { rows.push_back(build(std::move(s))); };
  auto spec2 = [](std::string name, std::vector<OpId> covers, uint32_t dtypes, Fn2 fn) {
    Spec s;
    s.name = std::move(name);
    s.covers = std::move(covers);
    s.dtypes = dtypes;
    s.arity = 2;
    s.fn = call2(std::move(fn));
    return s;
  };

  // ---- add / sub / mul ----
  {
    Spec s =
        spec2("add", {OpId::Add}, kAll, [](const Tensor& a, const Tensor& b) { return a + b; });
    s.ref = ref2([](C a, C b) { return a + b; });
    s.iref = iref2([](int64_t a, int64_t b) { return a + b; });
    add_row(s);
    s.name = "add.alpha";
    s.fn = call2([](const Tensor& a, const Tensor& b) { return add(a, b, 3); });
    s.ref = ref2([](C a, C b) { return a + tmul(C(3), b); });  // alpha is complex (3 + 0i)
    s.iref = iref2([](int64_t a, int64_t b) { return a + 3 * b; });
    add_row(s);
    s.name = "add.scalar";
    s.arity = 1;
    s.fn = call1([](const Tensor& a) { return a.dtype() == kBool ? a + true : 2 + a; });
    s.ref = [](const std::vector<C>& a, const Sample& smp) {
      return tested(smp) == DType::Bool ? C(1) : a[0] + 2.0;
    };
    s.iref = [](const std::vector<int64_t>& a, const Sample& smp) -> int64_t {
      return tested(smp) == DType::Bool ? 1 : a[0] + 2;
    };
    add_row(s);
  }
  {
    Spec s = spec2("sub", {OpId::Sub}, kAll & ~kB,
                   [](const Tensor& a, const Tensor& b) { return a - b; });
    s.ref = ref2([](C a, C b) { return a - b; });
    s.iref = iref2([](int64_t a, int64_t b) { return a - b; });
    add_row(s);
    s.name = "sub.alpha";
    s.fn = call2([](const Tensor& a, const Tensor& b) { return sub(a, b, -2); });
    s.ref = ref2([](C a, C b) { return a - tmul(C(-2), b); });
    s.iref = iref2([](int64_t a, int64_t b) { return a + 2 * b; });
    add_row(s);
    s.name = "sub.scalar_first";
    s.arity = 1;
    s.fn = call1([](const Tensor& a) { return 5 - a; });
    s.ref = ref1([](C a) { return 5.0 - a; });
    s.iref = iref1([](int64_t a) { return 5 - a; });
    add_row(s);
  }
  {
    Spec s =
        spec2("mul", {OpId::Mul}, kAll, [](const Tensor& a, const Tensor& b) { return a * b; });
    s.ref = ref2([](C a, C b) { return a * b; });
    s.iref = iref2([](int64_t a, int64_t b) { return a * b; });
    add_row(s);
  }
  // ---- division family ----
  {
    Spec s =
        spec2("div", {OpId::Div}, kAll, [](const Tensor& a, const Tensor& b) { return a / b; });
    s.ref = math2([](double a, double b) { return a / b; }, [](C a, C b) { return a / b; });
    s.out = to_float;
    add_row(s);
    s.name = "div.scalar_first";
    s.arity = 1;
    s.fn = call1([](const Tensor& a) { return 3 / a; });
    s.ref = math1([](double a) { return 3 / a; }, [](C a) { return 3.0 / a; });
    add_row(s);
  }
  {
    Spec s = spec2("div.trunc", {OpId::DivTrunc}, kI | kF,
                   [](const Tensor& a, const Tensor& b) { return div(a, b, "trunc"); });
    s.ref = [](const std::vector<C>& a, const Sample& smp) -> C {
      double x = a[0].real(), y = a[1].real();
      return computes_in_float(smp) ? std::trunc(static_cast<float>(x) / static_cast<float>(y))
                                    : std::trunc(x / y);
    };
    s.iref = iref2([](int64_t a, int64_t b) { return a / b; });
    s.nonzero = 1;
    add_row(s);
  }
  {
    Spec s = spec2("div.floor", {OpId::DivFloor}, kI | kF,
                   [](const Tensor& a, const Tensor& b) { return div(a, b, "floor"); });
    s.ref = math2(floordiv_ref);
    s.iref = iref2(floordiv_int);
    s.nonzero = 1;
    add_row(s);
    s.name = "floor_divide.scalar";
    s.arity = 1;
    s.nonzero = -1;
    // (uint8: a positive divisor; -3 would wrap to 253 in the tensor's dtype)
    s.fn = call1([](const Tensor& a) { return floor_divide(a, a.dtype() == kUInt8 ? 3 : -3); });
    s.ref = math1([](double a) { return floordiv_ref(a, -3); });
    s.iref = [](const std::vector<int64_t>& a, const Sample& smp) {
      return floordiv_int(a[0], tested(smp) == DType::UInt8 ? 3 : -3);
    };
    add_row(s);
  }
  {
    Spec s = spec2("remainder", {OpId::Remainder}, kI | kF,
                   [](const Tensor& a, const Tensor& b) { return a % b; });
    s.ref = math2(pymod_ref);
    s.iref = iref2([](int64_t a, int64_t b) { return a - b * floordiv_int(a, b); });
    s.nonzero = 1;
    add_row(s);
    s.name = "remainder.scalar_first";
    s.arity = 1;
    s.nonzero = 0;
    s.fn = call1([](const Tensor& b) { return remainder(7, b); });
    s.ref = math1([](double b) { return pymod_ref(7, b); });
    s.iref = iref1([](int64_t b) { return 7 - b * floordiv_int(7, b); });
    add_row(s);
  }
  {
    Spec s = spec2("fmod", {OpId::Fmod}, kI | kF,
                   [](const Tensor& a, const Tensor& b) { return fmod(a, b); });
    s.ref = math2([](double a, double b) { return std::fmod(a, b); });
    s.iref = iref2([](int64_t a, int64_t b) { return a % b; });
    s.nonzero = 1;
    add_row(s);
  }
  // ---- powers ----
  {
    Spec s = spec2("pow", {OpId::Pow}, kI | kF | kX,
                   [](const Tensor& a, const Tensor& b) { return pow(a, b); });
    s.ref = math2([](double a, double b) { return std::pow(a, b); },
                  [](C a, C b) { return std::pow(a, b); });
    s.iref = iref2(ipow);
    s.lo = 0.1, s.hi = 2;  // real bases > 0 (negative ones give NaN for fractional exponents)
    add_row(s);
    s.name = "pow.negative_base";
    s.lo = -2, s.hi = 2;
    s.dtypes = kI | kF;
    add_row(s);
    // Scalar exponents: 3 (integers too), and the ones computed through other ops for floating
    // bases (Note [pow shortcuts]: complex results are textbook products there), plus a
    // generic fractional one.
    for (double e : {3.0, 2.0, 0.5, -0.5, -1.0, -2.0, 1.7}) {
      bool integral = e == 3.0;
      s.name = "pow.scalar_" + std::to_string(e).substr(0, std::to_string(e).find('.') + 2);
      s.arity = 1;
      s.dtypes = integral ? (kI | kF | kX) : (kF | kX);
      s.fn = call1([e, integral](const Tensor& a) { return integral ? pow(a, 3) : pow(a, e); });
      s.ref = math1(
          [e](double a) {
            if (e == 0.5) return std::sqrt(a);  // sqrt(-inf) is NaN, pow(-inf, 0.5) is +inf
            if (e == -0.5) return 1 / std::sqrt(a);
            return std::pow(a, e);
          },
          [e](C z) {
            if (e == 3) return tmul(tmul(z, z), z);
            if (e == 2) return tmul(z, z);
            if (e == -2) return 1.0 / tmul(z, z);
            if (e == -1) return 1.0 / z;
            if (e == 0.5) return std::sqrt(z);
            if (e == -0.5) return 1.0 / std::sqrt(z);
            return std::pow(z, C(e));
          });
      s.iref = iref1([](int64_t a) { return a * a * a; });
      add_row(s);
    }
    s.name = "pow.scalar_base";
    s.dtypes = kReal;
    s.lo = -2, s.hi = 2;
    s.fn = call1([](const Tensor& b) { return pow(2, b); });
    s.ref = math1([](double b) { return std::pow(2.0, b); });
    s.iref = iref1([](int64_t b) { return ipow(2, b); });
    s.out = [](DType d) { return d == DType::Bool ? DType::Int64 : d; };
    add_row(s);
  }
  {
    Spec s = spec2("float_power", {OpId::Pow}, kAll,
                   [](const Tensor& a, const Tensor& b) { return float_power(a, b); });
    s.ref = math2([](double a, double b) { return std::pow(a, b); },
                  [](C a, C b) { return std::pow(a, b); });
    s.out = [](DType d) { return is_complex(d) ? DType::Complex128 : DType::Float64; };
    s.lo = 0.1;
    add_row(s);
  }
  // ---- atan2 / hypot / copysign ----
  {
    Spec s = spec2("atan2", {OpId::Atan2}, kReal,
                   [](const Tensor& a, const Tensor& b) { return atan2(a, b); });
    s.ref = math2([](double a, double b) { return std::atan2(a, b); });
    s.out = to_float;
    add_row(s);
    s = spec2("hypot", {OpId::Hypot}, kF,
              [](const Tensor& a, const Tensor& b) { return hypot(a, b); });
    s.ref = math2([](double a, double b) -> double {
      if (std::isinf(a) || std::isinf(b)) return kInf;  // IEEE: even with a NaN operand
      return std::sqrt(static_cast<long double>(a) * a + static_cast<long double>(b) * b);
    });
    add_row(s);
    s = spec2("copysign", {OpId::Copysign}, kReal,
              [](const Tensor& a, const Tensor& b) { return copysign(a, b); });
    s.ref = math2([](double a, double b) { return std::signbit(b) ? -std::abs(a) : std::abs(a); });
    s.out = to_float;
    add_row(s);
  }
  // ---- isclose (composite) ----
  for (bool equal_nan : {false, true}) {
    // Not in float16/bfloat16: there the op's own roundings (of rtol * b, atol + ..., a - b)
    // move the boundary by more than the samples' spacing; tests/ops covers them by hand.
    Spec s =
        spec2(equal_nan ? "isclose.equal_nan" : "isclose", {}, kAll & ~detail::kReducedFloatMask,
              [equal_nan](const Tensor& a, const Tensor& b) {
                return isclose(a, b, 0.1, 0.05, equal_nan);
              });
    s.ref = [equal_nan](const std::vector<C>& v, const Sample& smp) -> C {
      // |a - b| <= atol + rtol |b|, or equal, or (equal_nan) both NaN; computed in double from
      // the tested values (exact enough: the samples have no values near the boundary's ulp).
      C a = v[0], b = v[1];
      bool nan_a = std::isnan(a.real()) || std::isnan(a.imag());
      bool nan_b = std::isnan(b.real()) || std::isnan(b.imag());
      if (nan_a || nan_b) return (equal_nan && nan_a && nan_b) ? 1.0 : 0.0;
      if (a == b) return 1.0;
      double d = std::abs(a - b);
      return std::isfinite(d) && d <= 0.05 + 0.1 * std::abs(b) ? 1.0 : 0.0;
    };
    s.out = boolean;
    s.lo = 0.9, s.hi = 1.1;
    add_row(s);
  }

  // ---- error cases ----
  auto errors = [&](const std::string& row, std::vector<OpRow::ErrorCase> cases) {
    for (auto& r : rows)
      if (r.name == row) r.errors.insert(r.errors.end(), cases.begin(), cases.end());
  };
  Tensor f = ones({3}), i = ones({3}, kInt64), b = ones({3}, kBool), z = ones({3}, kComplex64);
  Tensor izero = tensor({1, 0, 2});
  errors("add", {{"cannot be broadcast", [f] { ones({2}) + f; }},
                 {"alpha must not be a floating point number", [i] { add(i, i, 0.5); }},
                 {"boolean alpha", [f] { add(f, f, true); }},
                 {"alpha must not be a complex number", [f] { add(f, f, complex<double>(1, 1)); }},
                 {"can't be cast to the desired output type int64",
                  [i, f] {
                    Tensor out = empty({3}, kInt64);
                    add_out(out, i, f);
                  }},
                 {"can't be cast to the desired output type int64",
                  [i] {
                    Tensor t = i;
                    t += 0.5;
                  }},
                 {"doesn't match the broadcast shape", [f] {
                    Tensor t = ones({1});
                    t.add_(f);
                  }}});
  errors("sub", {{"bool", [b] { b - b; }}});
  errors("div.trunc", {{"ZeroDivisionError", [i, izero] { div(i, izero, "trunc"); }},
                       {"rounding_mode", [f] { div(f, f, "round"); }},
                       {"complex", [z] { div(z, z, "trunc"); }}});
  errors("div.floor", {{"ZeroDivisionError", [izero] { floor_divide(izero, 0); }},
                       {"ZeroDivisionError", [i, izero] {
                          // nothing is written when the check fails
                          Tensor t = i.clone();
                          try {
                            t.floor_divide_(izero);
                          } catch (const Error&) {
                            if (!equal(t, i)) throw std::runtime_error("modified");
                            throw;
                          }
                        }}});
  errors("remainder",
         {{"ZeroDivisionError", [i, izero] { i % izero; }}, {"bool", [b] { remainder(b, b); }}});
  errors("fmod", {{"ZeroDivisionError", [i, izero] { fmod(i, izero); }}});
  errors("pow", {{"integers to negative integer powers are not allowed", [i] { pow(i, -2); }},
                 {"integers to negative integer powers are not allowed",
                  [i] {
                    Tensor t = i;
                    t.pow_(-1);
                  }},
                 {"bool", [b] { pow(b, b); }}});
  errors("float_power", {{"requires dtype float64",
                          [f] {
                            Tensor out = empty({3});
                            float_power_out(out, f, f);
                          }},
                         {"requires dtype float64", [f] {
                            Tensor t = f;
                            t.float_power_(2);
                          }}});
  errors("atan2", {{"complex", [z] { atan2(z, z); }}});
  errors("hypot", {{"floating point", [i] { hypot(i, i); }}});
  errors("copysign", {{"complex", [z] { copysign(z, z); }}});
  errors("isclose",
         {{"same dtype", [f, i] { isclose(f, i); }},
          {"rtol must be greater than or equal to zero", [f] { isclose(f, f, -1); }},
          {"atol must be greater than or equal to zero", [f] { isclose(f, f, 0, -1); }}});
  return rows;
}

KILN_OP_ROWS(binary_rows);

}  // namespace
}  // namespace kiln::testing
