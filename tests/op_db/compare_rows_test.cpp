// Op-table rows of min/max, comparison, logical and bitwise binary ops, and the clamp_min /
// clamp_max primitives. References are the definitions in double or exact int64 arithmetic.
#include "op_db/elementwise_rows_util.h"

namespace kiln::testing {
namespace {

using namespace ew;

double nan_max(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? kNan : std::max(a, b);
}
double nan_min(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? kNan : std::min(a, b);
}
// NaN-ignoring: the other operand when one is NaN.
double ign_max(double a, double b) {
  return std::isnan(a) ? b : (std::isnan(b) ? a : std::max(a, b));
}
double ign_min(double a, double b) {
  return std::isnan(a) ? b : (std::isnan(b) ? a : std::min(a, b));
}

std::vector<OpRow> compare_rows() {
  std::vector<OpRow> rows;
  auto add_row = [&](Spec s) { rows.push_back(build(std::move(s))); };
  auto spec2 = [](std::string name, OpId id, uint32_t dtypes, Fn2 fn) {
    Spec s;
    s.name = std::move(name);
    s.covers = {id};
    s.dtypes = dtypes;
    s.arity = 2;
    s.fn = call2(std::move(fn));
    return s;
  };

  // ---- min / max (bool: or / and) ----
  auto minmax = [&](std::string name, OpId id, Fn2 fn, double (*f)(double, double), bool is_max) {
    Spec s = spec2(name, id, kReal, fn);
    s.ref = math2(f);
    s.iref =
        iref2([is_max](int64_t a, int64_t b) { return is_max ? std::max(a, b) : std::min(a, b); });
    add_row(s);
  };
  minmax(
      "maximum", OpId::Maximum, [](const Tensor& a, const Tensor& b) { return maximum(a, b); },
      nan_max, true);
  minmax(
      "minimum", OpId::Minimum, [](const Tensor& a, const Tensor& b) { return minimum(a, b); },
      nan_min, false);
  minmax(
      "fmax", OpId::Fmax, [](const Tensor& a, const Tensor& b) { return fmax(a, b); }, ign_max,
      true);
  minmax(
      "fmin", OpId::Fmin, [](const Tensor& a, const Tensor& b) { return fmin(a, b); }, ign_min,
      false);
  {
    Spec s = spec2("clamp_min.tensor", OpId::ClampMin, kI | kF,
                   [](const Tensor& a, const Tensor& b) { return clamp_min(a, b); });
    s.ref = math2(nan_max);
    s.iref = iref2([](int64_t a, int64_t b) { return std::max(a, b); });
    add_row(s);
    s.name = "clamp_max.tensor";
    s.covers = {OpId::ClampMax};
    s.fn = call2([](const Tensor& a, const Tensor& b) { return clamp_max(a, b); });
    s.ref = math2(nan_min);
    s.iref = iref2([](int64_t a, int64_t b) { return std::min(a, b); });
    add_row(s);
  }

  // ---- comparisons (bool results; NaN compares unequal) ----
  auto compare = [&](std::string name, OpId id, Fn2 fn, std::function<bool(C, C)> f,
                     uint32_t dtypes) {
    Spec s = spec2(name, id, dtypes, fn);
    s.ref = [f](const std::vector<C>& a, const Sample&) { return C(f(a[0], a[1]) ? 1 : 0); };
    s.out = boolean;
    s.lo = -1, s.hi = 1;  // small integers, so equal pairs occur
    add_row(s);
  };
  compare(
      "eq", OpId::Eq, [](const Tensor& a, const Tensor& b) { return a == b; },
      [](C a, C b) { return a == b; }, kAll);
  compare(
      "ne", OpId::Ne, [](const Tensor& a, const Tensor& b) { return a != b; },
      [](C a, C b) { return a != b; }, kAll);
  compare(
      "lt", OpId::Lt, [](const Tensor& a, const Tensor& b) { return a < b; },
      [](C a, C b) { return a.real() < b.real(); }, kReal);
  compare(
      "le", OpId::Le, [](const Tensor& a, const Tensor& b) { return a <= b; },
      [](C a, C b) { return a.real() <= b.real(); }, kReal);
  compare(
      "gt", OpId::Gt, [](const Tensor& a, const Tensor& b) { return a > b; },
      [](C a, C b) { return a.real() > b.real(); }, kReal);
  compare(
      "ge", OpId::Ge, [](const Tensor& a, const Tensor& b) { return a >= b; },
      [](C a, C b) { return a.real() >= b.real(); }, kReal);
  {
    // Scalar on either side, and the in-place form writing 0/1 in self's dtype.
    Spec s;
    s.name = "lt.scalar";
    s.covers = {OpId::Lt};
    s.dtypes = kReal;
    s.fn = call1([](const Tensor& a) { return (a < 0.5).logical_and(0.5 > a); });
    s.ref = math1([](double a) { return a < 0.5 ? 1.0 : 0.0; });
    s.out = boolean;
    add_row(s);
    s.name = "ge_.inplace";
    s.covers = {OpId::Ge};
    s.dtypes = kI | kF;
    s.fn = call1([](const Tensor& a) {
      Tensor t = a.clone();
      return t.ge_(0);
    });
    s.ref = math1([](double a) { return a >= 0 ? 1.0 : 0.0; });
    s.out = same;
    add_row(s);
  }

  // ---- logical (any dtype; nonzero is true; bool results) ----
  auto logical = [&](std::string name, OpId id, Fn2 fn, std::function<bool(bool, bool)> f) {
    Spec s = spec2(name, id, kAll, fn);
    s.ref = [f](const std::vector<C>& a, const Sample&) {
      return C(f(a[0] != C(0), a[1] != C(0)) ? 1 : 0);
    };
    s.out = boolean;
    s.lo = -0.1, s.hi = 0.1;  // many integer zeros
    add_row(s);
  };
  logical(
      "logical_and", OpId::LogicalAnd,
      [](const Tensor& a, const Tensor& b) { return logical_and(a, b); },
      [](bool a, bool b) { return a && b; });
  logical(
      "logical_or", OpId::LogicalOr,
      [](const Tensor& a, const Tensor& b) { return logical_or(a, b); },
      [](bool a, bool b) { return a || b; });
  logical(
      "logical_xor", OpId::LogicalXor,
      [](const Tensor& a, const Tensor& b) { return logical_xor(a, b); },
      [](bool a, bool b) { return a != b; });

  // ---- bitwise (exact on int64, then wrapped) ----
  auto bitwise = [&](std::string name, OpId id, Fn2 fn,
                     std::function<int64_t(int64_t, int64_t)> f) {
    Spec s = spec2(name, id, kB | kI, fn);
    s.iref = iref2(f);
    add_row(s);
  };
  bitwise(
      "bitwise_and", OpId::BitwiseAnd, [](const Tensor& a, const Tensor& b) { return a & b; },
      [](int64_t a, int64_t b) { return a & b; });
  bitwise(
      "bitwise_or", OpId::BitwiseOr, [](const Tensor& a, const Tensor& b) { return a | b; },
      [](int64_t a, int64_t b) { return a | b; });
  bitwise(
      "bitwise_xor", OpId::BitwiseXor, [](const Tensor& a, const Tensor& b) { return a ^ b; },
      [](int64_t a, int64_t b) { return a ^ b; });
  {
    // Shift counts in (-40, 40): negative and too-large counts follow PyTorch (0 / sign fill).
    Spec s = spec2("bitwise_left_shift", OpId::BitwiseLeftShift, kI,
                   [](const Tensor& a, const Tensor& b) { return a << b; });
    s.iref = [](const std::vector<int64_t>& v, const Sample& smp) -> int64_t {
      int64_t a = v[0], b = v[1];
      if (b < 0 || b >= bits_of(tested(smp))) return 0;
      return static_cast<int64_t>(static_cast<uint64_t>(a) << b);  // modular; wrapped later
    };
    add_row(s);
    s.name = "bitwise_right_shift";
    s.covers = {OpId::BitwiseRightShift};
    s.fn = call2([](const Tensor& a, const Tensor& b) { return a >> b; });
    s.iref = [](const std::vector<int64_t>& v, const Sample& smp) -> int64_t {
      int64_t a = v[0], b = v[1];
      DType dt = tested(smp);
      int max = bits_of(dt) - (dt == DType::UInt8 ? 0 : 1);
      if (b < 0 || b >= max) return a < 0 ? -1 : 0;
      // an arithmetic shift is floor division by 2^b
      int64_t p = int64_t(1) << b, q = a / p;
      return (q * p != a && a < 0) ? q - 1 : q;
    };
    add_row(s);
    s.name = "bitwise_left_shift.scalar";
    s.arity = 1;
    s.covers = {OpId::BitwiseLeftShift};
    s.fn = call1([](const Tensor& a) { return bitwise_left_shift(a, 3); });
    s.iref = iref1([](int64_t a) { return a * 8; });
    add_row(s);
  }

  // ---- error cases ----
  auto errors = [&](const std::string& row, std::vector<OpRow::ErrorCase> cases) {
    for (auto& r : rows)
      if (r.name == row) r.errors.insert(r.errors.end(), cases.begin(), cases.end());
  };
  Tensor f = ones({3}), i = ones({3}, kInt64), b = ones({3}, kBool), z = ones({3}, kComplex64);
  errors("maximum", {{"complex", [z] { maximum(z, z); }}});
  errors("lt", {{"complex", [z] { z < z; }}, {"cannot be broadcast", [f] { f < ones({2}); }}});
  errors("bitwise_and", {{"only supported for integer and bool", [f] { f& f; }}});
  errors("bitwise_left_shift", {{"bool", [b] { b << b; }}});
  errors("clamp_min.tensor", {{"bool", [b] { clamp_min(b, b); }}});
  errors("ge_.inplace", {{"doesn't match the broadcast shape", [f] {
                            Tensor t = ones({1});
                            t.ge_(f);
                          }}});
  return rows;
}

KILN_OP_ROWS(compare_rows);

}  // namespace
}  // namespace kiln::testing
