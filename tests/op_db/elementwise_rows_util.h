// Shared builders of the elementwise op-table rows (unary/binary/ternary *_rows_test.cpp):
// references that know the tested dtype (integer results wrap to the output dtype exactly as
// two's-complement arithmetic does), output-dtype rules, and sample tweaks.
#pragma once

#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>

#include "op_db/op_db.h"

namespace kiln::testing::ew {

using C = std::complex<double>;
constexpr uint32_t kB = detail::kBoolMask, kI = detail::kIntMask, kF = detail::kFloatMask,
                   kX = detail::kComplexMask;
constexpr uint32_t kAll = kB | kI | kF | kX, kReal = kB | kI | kF;

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kPi = 3.14159265358979323846;

// ---- output dtype rules (PyTorch's) ----
inline DType same(DType d) { return d; }
inline DType to_float(DType d) { return is_integral(d, true) ? DType::Float32 : d; }
inline DType real_of(DType d) { return to_real(d); }
inline DType float_real(DType d) { return to_real(to_float(d)); }
inline DType boolean(DType) { return DType::Bool; }

// The tested dtype rides in Sample::ints[0] so references can follow dtype-specific rules.
inline DType tested(const Sample& s) { return static_cast<DType>(s.ints.at(0)); }
inline std::vector<Sample> tag(std::vector<Sample> v, DType dt) {
  for (auto& s : v) s.ints.insert(s.ints.begin(), static_cast<int64_t>(dt));
  return v;
}

// Two's-complement wrap of an exact integer into dt's range (C++20 conversions are modular).
inline int64_t wrap(int64_t v, DType dt) {
  switch (dt) {
    case DType::Bool:
      return v != 0;
    case DType::UInt8:
      return static_cast<uint8_t>(v);
    case DType::Int8:
      return static_cast<int8_t>(v);
    case DType::Int16:
      return static_cast<int16_t>(v);
    case DType::Int32:
      return static_cast<int32_t>(v);
    default:
      return v;
  }
}
inline int bits_of(DType dt) { return static_cast<int>(element_size(dt)) * 8; }

// IEEE overflow of a result stored in a narrower float dtype: magnitudes from the largest
// finite value plus half an ulp up round to infinity.
inline double overflow(double v, DType dt) {
  double limit;
  switch (to_real(dt)) {
    case DType::Float16:
      limit = 65520;  // 65504 + 2^4
      break;
    case DType::BFloat16:
      limit = std::ldexp(1.0, 128) - std::ldexp(1.0, 119);
      break;
    case DType::Float32:
      limit = std::ldexp(1.0, 128) - std::ldexp(1.0, 103);
      break;
    default:
      return v;
  }
  return std::abs(v) >= limit ? std::copysign(kInf, v) : v;
}

// The textbook complex product (no C99 Annex G recovery of infinities), as kiln::complex and
// PyTorch's c10::complex multiply.
inline C tmul(C a, C b) {
  return C(a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real());
}

// Replaces values of input k in every random sample by ones at least 0.06 away from 0 (so the
// integer versions, x * 20 truncated, are nonzero): divisors of integer division.
inline std::vector<Sample> nonzero_input(std::vector<Sample> v, size_t k) {
  for (auto& s : v) {
    if (s.desc == "special values" || k >= s.inputs.size()) continue;
    auto vals = values(s.inputs[k]);
    for (auto& x : vals) x = C(x.real() + (x.real() >= 0 ? 0.06 : -0.06), x.imag());
    s.inputs[k] = from_values(vals, s.inputs[k].sizes(), s.inputs[k].dtype());
  }
  return v;
}

// One elementwise row. `ref` computes in double/complex<double> (for floating and complex tested
// dtypes, and for integer ones when `iref` is empty); `iref` computes integer/bool results
// exactly in int64, which are then wrapped to the output dtype.
struct Spec {
  std::string name;
  std::vector<OpId> covers;
  uint32_t dtypes = kF;
  int arity = 1;
  std::function<Tensor(const std::vector<Tensor>&, const Sample&)> fn;
  std::function<C(const std::vector<C>&, const Sample&)> ref;
  std::function<int64_t(const std::vector<int64_t>&, const Sample&)> iref;
  std::function<DType(DType)> out = same;
  double lo = -2, hi = 2;
  bool special = true;
  int nonzero = -1;  // input index that must be nonzero (integer division), or -1
  double tol = 1;
  std::vector<Scalar> scalars;         // Sample::scalars of every sample (op arguments)
  std::function<void(Sample&)> tweak;  // adjusts every sample (e.g. where's bool condition)
};

inline OpRow build(Spec e) {
  OpRow r;
  r.name = e.name;
  r.covers = e.covers;
  r.dtypes = e.dtypes;
  r.tol_scale = e.tol;
  r.samples = [e](DType dt) {
    auto v = elementwise_samples(e.arity, dt, e.lo, e.hi, e.special);
    if (e.nonzero >= 0) v = nonzero_input(std::move(v), static_cast<size_t>(e.nonzero));
    for (auto& s : v) {
      s.scalars = e.scalars;
      if (e.tweak) e.tweak(s);
    }
    return tag(std::move(v), dt);
  };
  r.op = [fn = e.fn](const std::vector<Tensor>& in, const Sample& s) { return fn(in, s); };
  r.ref = [e](const std::vector<Tensor>& in, const Sample& s) {
    DType dt = tested(s), od = e.out(dt);
    bool integer_ref = e.iref && is_integral(dt, true);
    DType master = is_complex(od) ? DType::Complex128 : DType::Float64;
    return ref_map(in, master, [&](const std::vector<C>& a) -> C {
      if (integer_ref) {
        std::vector<int64_t> ia;
        for (const C& x : a) ia.push_back(static_cast<int64_t>(x.real()));
        return static_cast<double>(wrap(e.iref(ia, s), od));
      }
      C v = e.ref(a, s);
      if (od == DType::Bool) return v != C(0) ? 1.0 : 0.0;
      if (is_integral(od)) return static_cast<double>(wrap(static_cast<int64_t>(v.real()), od));
      return is_complex(od) ? C(overflow(v.real(), od), overflow(v.imag(), od))
                            : C(overflow(v.real(), od));
    });
  };
  r.out_dtype = e.out;
  return r;
}

// Shorthands for the common shapes of reference.
using Fn1 = std::function<Tensor(const Tensor&)>;
inline std::function<Tensor(const std::vector<Tensor>&, const Sample&)> call1(Fn1 f) {
  return [f](const std::vector<Tensor>& in, const Sample&) { return f(in[0]); };
}
using Fn2 = std::function<Tensor(const Tensor&, const Tensor&)>;
inline std::function<Tensor(const std::vector<Tensor>&, const Sample&)> call2(Fn2 f) {
  return [f](const std::vector<Tensor>& in, const Sample&) { return f(in[0], in[1]); };
}
inline std::function<C(const std::vector<C>&, const Sample&)> ref1(std::function<C(C)> f) {
  return [f](const std::vector<C>& a, const Sample&) { return f(a[0]); };
}
inline std::function<C(const std::vector<C>&, const Sample&)> ref2(std::function<C(C, C)> f) {
  return [f](const std::vector<C>& a, const Sample&) { return f(a[0], a[1]); };
}
inline std::function<int64_t(const std::vector<int64_t>&, const Sample&)> iref1(
    std::function<int64_t(int64_t)> f) {
  return [f](const std::vector<int64_t>& a, const Sample&) { return f(a[0]); };
}
inline std::function<int64_t(const std::vector<int64_t>&, const Sample&)> iref2(
    std::function<int64_t(int64_t, int64_t)> f) {
  return [f](const std::vector<int64_t>& a, const Sample&) { return f(a[0], a[1]); };
}

// A real function for real tested dtypes and a complex one for complex tested dtypes.
inline std::function<C(const std::vector<C>&, const Sample&)> math1(
    std::function<double(double)> rf, std::function<C(C)> cf = {}) {
  return [rf, cf](const std::vector<C>& a, const Sample& s) -> C {
    return is_complex(tested(s)) ? cf(a[0]) : C(rf(a[0].real()));
  };
}
inline std::function<C(const std::vector<C>&, const Sample&)> math2(
    std::function<double(double, double)> rf, std::function<C(C, C)> cf = {}) {
  return [rf, cf](const std::vector<C>& a, const Sample& s) -> C {
    return is_complex(tested(s)) ? cf(a[0], a[1]) : C(rf(a[0].real(), a[1].real()));
  };
}

}  // namespace kiln::testing::ew
