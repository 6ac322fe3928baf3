// Op-table rows of the ternary elementwise ops (where, clamp, lerp, addcmul, addcdiv) and the
// scalar-bound clamp forms. References are the documented definitions in double / exact int64.
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

// Input 0 becomes a bool condition (x > 0) passed as it is.
void bool_condition(Sample& s) {
  auto v = values(s.inputs[0]);
  for (auto& x : v) x = x.real() > 0 ? 1.0 : 0.0;
  s.inputs[0] = from_values(v, s.inputs[0].sizes(), DType::Bool);
  s.keep_dtype = {true, false, false};
}

std::vector<OpRow> ternary_rows() {
  std::vector<OpRow> rows;
  auto add_row = [&](Spec s) { rows.push_back(build(std::move(s))); };
  using Fn3 = std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>;
  auto spec3 = [](std::string name, std::vector<OpId> covers, uint32_t dtypes, Fn3 fn) {
    Spec s;
    s.name = std::move(name);
    s.covers = std::move(covers);
    s.dtypes = dtypes;
    s.arity = 3;
    s.fn = [fn](const std::vector<Tensor>& in, const Sample&) { return fn(in[0], in[1], in[2]); };
    return s;
  };

  // ---- where ----
  {
    Spec s =
        spec3("where", {OpId::Where}, kAll,
              [](const Tensor& c, const Tensor& a, const Tensor& b) { return where(c, a, b); });
    s.tweak = bool_condition;
    s.ref = [](const std::vector<C>& v, const Sample&) { return v[0] != C(0) ? v[1] : v[2]; };
    s.iref = [](const std::vector<int64_t>& v, const Sample&) { return v[0] ? v[1] : v[2]; };
    add_row(s);
    s.name = "where.scalar_other";
    s.fn = [](const std::vector<Tensor>& in, const Sample&) { return in[1].where(in[0], 0); };
    s.ref = [](const std::vector<C>& v, const Sample&) { return v[0] != C(0) ? v[1] : C(0); };
    s.iref = [](const std::vector<int64_t>& v, const Sample&) { return v[0] ? v[1] : int64_t(0); };
    s.out = [](DType d) { return d == DType::Bool ? DType::Int64 : d; };  // bool vs int scalar
    add_row(s);
  }
  // ---- clamp ----
  {
    // Scalar bounds: integers for integer dtypes (no promotion), fractions otherwise.
    // (uint8: a non-negative lower bound; -5 would wrap to 251 in the tensor's dtype)
    auto lo = [](DType d) {
      return d == DType::UInt8 ? Scalar(2) : (is_integral(d) ? Scalar(-5) : Scalar(-0.5));
    };
    auto hi = [](DType d) { return is_integral(d) ? Scalar(9) : Scalar(0.75); };
    struct Form {
      const char* name;
      OpId id;
      bool use_lo, use_hi;
    };
    for (Form form :
         {Form{"clamp", OpId::Clamp, true, true}, Form{"clamp_min", OpId::ClampMin, true, false},
          Form{"clamp_max", OpId::ClampMax, false, true}}) {
      Spec s;
      s.name = form.name;
      s.covers = {form.id};
      s.dtypes = kI | kF;
      s.fn = [=](const std::vector<Tensor>& in, const Sample&) {
        DType d = in[0].dtype();
        std::optional<Scalar> l, h;
        if (form.use_lo) l = lo(d);
        if (form.use_hi) h = hi(d);
        return clamp(in[0], l, h);
      };
      s.ref = [=](const std::vector<C>& v, const Sample& smp) -> C {
        DType d = tested(smp);
        double x = v[0].real();
        if (form.use_lo) x = nan_max(x, lo(d).to_double());
        if (form.use_hi) x = nan_min(x, hi(d).to_double());
        return x;
      };
      add_row(s);
    }
    Spec s = spec3("clamp.tensor", {OpId::Clamp}, kI | kF,
                   [](const Tensor& x, const Tensor& l, const Tensor& h) {
                     return clamp(x, std::optional<Tensor>(l), std::optional<Tensor>(h));
                   });
    s.ref = [](const std::vector<C>& v, const Sample&) -> C {
      return nan_min(nan_max(v[0].real(), v[1].real()), v[2].real());  // lo > hi gives hi
    };
    s.iref = [](const std::vector<int64_t>& v, const Sample&) {
      return std::min(std::max(v[0], v[1]), v[2]);
    };
    add_row(s);
  }
  // ---- lerp (no inf/NaN samples: start + w (end - start) is evaluated from the nearer end,
  // which turns some infinite cases into NaN, as in PyTorch) ----
  {
    Spec s = spec3("lerp", {OpId::Lerp}, kF | kX,
                   [](const Tensor& a, const Tensor& b, const Tensor& w) { return lerp(a, b, w); });
    s.special = false;
    s.ref = [](const std::vector<C>& v, const Sample&) { return v[0] + v[2] * (v[1] - v[0]); };
    add_row(s);
    for (double w : {0.25, 0.75}) {
      s.name = w < 0.5 ? "lerp.scalar_0.25" : "lerp.scalar_0.75";
      s.arity = 2;
      s.fn = [w](const std::vector<Tensor>& in, const Sample&) { return in[0].lerp(in[1], w); };
      s.ref = [w](const std::vector<C>& v, const Sample&) { return v[0] + w * (v[1] - v[0]); };
      add_row(s);
    }
  }
  // ---- addcmul / addcdiv ----
  {
    Spec s = spec3("addcmul", {OpId::Addcmul}, kI | kF | kX,
                   [](const Tensor& a, const Tensor& b, const Tensor& c) {
                     return addcmul(a, b, c, is_integral(a.dtype()) ? Scalar(2) : Scalar(0.5));
                   });
    // value * t1 * t2 with complex value (0.5 + 0i): textbook products, as the kernel.
    s.ref = [](const std::vector<C>& v, const Sample& smp) {
      if (!is_complex(tested(smp))) return C(v[0].real() + 0.5 * v[1].real() * v[2].real());
      return v[0] + tmul(tmul(C(0.5), v[1]), v[2]);
    };
    s.iref = [](const std::vector<int64_t>& v, const Sample&) { return v[0] + 2 * v[1] * v[2]; };
    add_row(s);
    s = spec3(
        "addcdiv", {OpId::Addcdiv}, kF | kX,
        [](const Tensor& a, const Tensor& b, const Tensor& c) { return addcdiv(a, b, c, 0.5); });
    s.ref = [](const std::vector<C>& v, const Sample& smp) {
      if (!is_complex(tested(smp))) return C(v[0].real() + 0.5 * v[1].real() / v[2].real());
      return v[0] + 0.5 * v[1] / v[2];
    };
    add_row(s);
  }

  // ---- error cases ----
  auto errors = [&](const std::string& row, std::vector<OpRow::ErrorCase> cases) {
    for (auto& r : rows)
      if (r.name == row) r.errors.insert(r.errors.end(), cases.begin(), cases.end());
  };
  Tensor f = ones({3}), i = ones({3}, kInt64), b = ones({3}, kBool), z = ones({3}, kComplex64);
  errors("where", {{"expected condition to be a boolean tensor", [f] { where(f, f, f); }},
                   {"cannot be broadcast", [b, f] { where(b, f, ones({2})); }}});
  errors("clamp", {{"at least one of 'min' or 'max'", [f] { clamp(f, std::optional<Scalar>()); }},
                   {"complex", [z] { clamp(z, 0, 1); }},
                   {"bool", [b] { clamp(b, false, true); }},
                   {"can't be cast to the desired output type int64", [i] {
                      Tensor t = i;
                      t.clamp_(0.5, 2.5);
                    }}});
  errors("lerp", {{"for `end`", [f] { lerp(f, f.to(kFloat64), 0.5); }},
                  {"for `weight`", [f] { lerp(f, f, f.to(kFloat64)); }},
                  {"floating point", [i] { lerp(i, i, 0.5); }}});
  errors("addcdiv",
         {{"integer division with addcdiv is no longer supported", [i] { addcdiv(i, i, i); }}});
  errors("addcmul", {{"bool", [b] { addcmul(b, b, b); }}});
  return rows;
}

KILN_OP_ROWS(ternary_rows);

}  // namespace
}  // namespace kiln::testing
