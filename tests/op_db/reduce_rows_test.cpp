// Op-table rows for the reductions (sum mean nansum nanmean prod amax amin max/min argmax argmin
// var std var_mean std_mean norm logsumexp any all count_nonzero aminmax). References are plain
// double loops over the reduced elements, written here independently of kiln.
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "kiln/ops/reduce.h"
#include "op_db/op_db.h"

namespace kiln::testing {
namespace {

using detail::kBoolMask;
using detail::kComplexMask;
using detail::kFloatMask;
using detail::kIntMask;
using detail::kNumericMask;
using detail::kRealMask;

using Vals = std::vector<C>;
using ReduceFn = std::function<C(const Vals&)>;

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- reference: reduce `in` over dims (all when empty) with f of the reduced values, which it
// receives in row-major order of the reduced dims ----
Tensor ref_reduce(const Tensor& in, std::vector<int64_t> dims, bool keepdim, DType out,
                  const ReduceFn& f) {
  const Vals v = values(in);
  const std::vector<int64_t> shape = in.sizes().vec();
  const int64_t nd = static_cast<int64_t>(shape.size());
  std::vector<bool> red(nd, dims.empty());
  for (int64_t d : dims)
    if (nd > 0) red[d < 0 ? d + nd : d] = true;
  std::vector<int64_t> kept, rdims, out_shape;
  for (int64_t d = 0; d < nd; ++d) {
    (red[d] ? rdims : kept).push_back(d);
    if (!red[d])
      out_shape.push_back(shape[d]);
    else if (keepdim)
      out_shape.push_back(1);
  }
  std::vector<int64_t> stride(nd, 1);
  for (int64_t d = nd - 2; d >= 0; --d) stride[d] = stride[d + 1] * shape[d + 1];
  int64_t n_out = 1, n_red = 1;
  for (int64_t d : kept) n_out *= shape[d];
  for (int64_t d : rdims) n_red *= shape[d];
  Vals result(n_out);
  std::vector<int64_t> ki(kept.size(), 0);
  for (int64_t o = 0; o < n_out; ++o) {
    int64_t base = 0;
    for (size_t j = 0; j < kept.size(); ++j) base += ki[j] * stride[kept[j]];
    Vals r;
    r.reserve(n_red);
    std::vector<int64_t> ri(rdims.size(), 0);
    for (int64_t e = 0; e < n_red; ++e) {
      int64_t off = base;
      for (size_t j = 0; j < rdims.size(); ++j) off += ri[j] * stride[rdims[j]];
      r.push_back(v[off]);
      for (int64_t j = static_cast<int64_t>(rdims.size()) - 1; j >= 0; --j) {
        if (++ri[j] < shape[rdims[j]]) break;
        ri[j] = 0;
      }
    }
    result[o] = f(r);
    for (int64_t j = static_cast<int64_t>(kept.size()) - 1; j >= 0; --j) {
      if (++ki[j] < shape[kept[j]]) break;
      ki[j] = 0;
    }
  }
  return from_values(result, out_shape, out);
}

DType master_of(DType d) { return is_complex(d) ? DType::Complex128 : DType::Float64; }
// ---- samples ----
Sample make(std::vector<int64_t> shape, std::vector<int64_t> dims, bool keepdim, DType dt,
            uint64_t seed, double lo = -2, double hi = 2) {
  Sample s;
  s.inputs.push_back(rand_master(shape, is_complex(dt), seed, lo, hi));
  s.ints = std::move(dims);
  s.flag = keepdim;
  std::ostringstream d;
  d << IntArrayRef(shape) << " dims " << IntArrayRef(s.ints) << (keepdim ? " keepdim" : "");
  s.desc = d.str();
  return s;
}

struct SampleOpts {
  bool empty_reduce = true;  // samples that reduce a zero-size dim (ops with an identity)
  bool single_dim = false;   // only samples with exactly one dim (max.dim, argmax.dim)
  bool large = true;
  bool special = true;  // inf/nan values for floating dtypes
  double lo = -2, hi = 2;
};

std::vector<Sample> reduce_samples(DType dt, SampleOpts o = {}) {
  std::vector<Sample> out;
  uint64_t seed = 100;
  auto add = [&](std::vector<int64_t> shape, std::vector<int64_t> dims, bool keepdim) {
    if (o.single_dim && dims.size() != 1) return;
    out.push_back(make(shape, dims, keepdim, dt, seed++ * 7, o.lo, o.hi));
  };
  add({}, {}, false);
  add({}, {0}, false);
  add({}, {-1}, true);
  add({7}, {0}, false);
  add({7}, {0}, true);
  add({3, 4}, {0}, false);
  add({3, 4}, {1}, true);
  add({3, 4}, {-1}, false);
  add({3, 4}, {0, 1}, true);
  add({3, 4}, {}, false);
  add({2, 3, 5}, {0, 2}, false);
  add({2, 3, 5}, {-1, 0}, true);
  add({2, 3, 5}, {1}, false);
  add({4, 1, 3}, {1}, false);
  add({0, 3}, {1}, false);
  if (o.empty_reduce) {
    add({0, 3}, {0}, true);
    add({0}, {}, false);
  }
  if (o.large) {
    // One output, split over threads (float16 sums of more elements would overflow).
    add({dt == DType::Float16 ? 30001 : 70001}, {0}, false);
    add({2, 40000}, {1}, false);
    add({40000, 3}, {0}, false);  // lane mode
    add({3000, 70}, {0}, true);   // lane mode, a full and a partial lane block
    add({300, 517}, {1}, false);  // many outputs
  }
  if (o.special && (is_floating_point(dt) || is_complex(dt))) {
    Vals sp = {0.0, -0.0, 1.0, -1.0, kInf, -kInf, kNaN, 0.5, -2.5, 3.0, kNaN, 2.0};
    Sample s;
    s.inputs.push_back(from_values(sp, {3, 4}, master_of(dt)));
    s.ints = {1};
    s.desc = "special values [3, 4] dims [1]";
    out.push_back(s);
    Sample t = s;
    t.ints = {0};
    t.desc = "special values [3, 4] dims [0]";
    out.push_back(t);
  }
  return out;
}

// Calls fn(x) for a full reduction (no dims in the sample) or fn_dims(x, dims, keepdim).
OpFn reduce_call(std::function<Tensor(const Tensor&)> full,
                 std::function<Tensor(const Tensor&, IntArrayRef, bool)> with_dims) {
  return [full, with_dims](const std::vector<Tensor>& in, const Sample& s) {
    if (s.ints.empty() && !s.flag && full) return full(in[0]);
    IntArrayRef dims(s.ints.data(), s.ints.size());
    return with_dims(in[0], dims, s.flag);
  };
}

// The reference receives float64/complex128 masters and answers in the same type (integer and
// bool results are compared by value).
OpFn reduce_ref(ReduceFn f) {
  return [f](const std::vector<Tensor>& in, const Sample& s) {
    return ref_reduce(in[0], s.ints, s.flag, master_of(in[0].dtype()), f);
  };
}

DType as_int64(DType) { return DType::Int64; }
DType as_float64(DType) { return DType::Float64; }

// ---- reference math ----
C ref_sum(const Vals& r) {
  C s = 0;
  for (const C& x : r) s += x;
  return s;
}
C ref_prod(const Vals& r) {
  C p = 1;
  for (const C& x : r) p *= x;
  return p;
}
// The mean of nothing is 0/0: NaN (NaN+NaNj for complex), as PyTorch.
C ref_mean(const Vals& r) { return ref_sum(r) / static_cast<double>(r.size()); }
C ref_nansum(const Vals& r) {
  double s = 0;
  for (const C& x : r)
    if (!std::isnan(x.real())) s += x.real();
  return s;
}
C ref_nanmean(const Vals& r) {
  double s = 0;
  int64_t n = 0;
  for (const C& x : r)
    if (!std::isnan(x.real())) s += x.real(), ++n;
  return s / static_cast<double>(n);
}
// Index of the first max (kMax) or min; a NaN is the extreme and the first NaN wins.
template <bool kMax>
int64_t ref_arg(const Vals& r) {
  int64_t best = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    const double x = r[i].real(), b = r[best].real();
    if (std::isnan(b)) break;
    if (std::isnan(x) || (kMax ? x > b : x < b)) best = static_cast<int64_t>(i);
  }
  return best;
}
C ref_var(const Vals& r, double correction) {
  if (r.empty()) return kNaN;
  C m = ref_sum(r) / static_cast<double>(r.size());
  double q = 0;
  for (const C& x : r) q += std::norm(x - m);
  const double n = static_cast<double>(r.size());
  return q / std::max(n - correction, 0.0);
}
C ref_norm(const Vals& r, double p) {
  if (p == kInf || p == -kInf) {
    double best = std::abs(r[0]);
    for (const C& x : r) {
      const double a = std::abs(x);
      if (std::isnan(a)) return kNaN;
      best = p > 0 ? std::max(best, a) : std::min(best, a);
    }
    return best;
  }
  double s = 0;
  for (const C& x : r) {
    const double a = std::abs(x);
    s += p == 0 ? (x != C(0) ? 1.0 : 0.0) : std::pow(a, p);
  }
  return p == 0 || p == 1 ? s : std::pow(s, 1.0 / p);
}
C ref_logsumexp(const Vals& r) {
  double m = -kInf;
  for (const C& x : r) {
    if (std::isnan(x.real())) return kNaN;
    m = std::max(m, x.real());
  }
  if (std::isinf(m)) {  // all -inf, or some +inf
    return m;
  }
  double s = 0;
  for (const C& x : r) s += std::exp(x.real() - m);
  return m + std::log(s);
}

DType sum_out_dtype(DType d) { return is_integral(d, true) ? DType::Int64 : d; }

OpRow row(std::string name, std::vector<OpId> covers, uint32_t dtypes,
          std::function<std::vector<Sample>(DType)> samples, OpFn op, OpFn ref,
          std::function<DType(DType)> out_dtype = nullptr) {
  OpRow r;
  r.name = std::move(name);
  r.covers = std::move(covers);
  r.dtypes = dtypes;
  r.samples = std::move(samples);
  r.op = std::move(op);
  r.ref = std::move(ref);
  r.out_dtype = std::move(out_dtype);
  return r;
}

template <class F>
OpRow::ErrorCase err(std::string contains, F f) {
  return {std::move(contains), [f] { (void)f(); }};
}

std::vector<OpRow> sum_rows() {
  std::vector<OpRow> rows;
  // Values in [-1, 3): sums of many elements stay far from zero, so tolerances relative to the
  // result are meaningful (no catastrophic cancellation in the reference comparison).
  auto sum_samples = [](DType dt) { return reduce_samples(dt, {.lo = -1, .hi = 3}); };
  {
    OpRow r = row("sum", {OpId::Sum}, kNumericMask, sum_samples,
                  reduce_call([](const Tensor& x) { return x.sum(); },
                              [](const Tensor& x, IntArrayRef d, bool k) { return x.sum(d, k); }),
                  reduce_ref(ref_sum), sum_out_dtype);
    r.errors = {
        err("dimension out of range",
            [] {
              return ones({2, 3}).sum(2);
            }),
        err("appears multiple times",
            [] {
              return ones({2, 3}).sum({1, -1});
            }),
        err("dimension out of range", [] { return full({}, 1.0).sum(1); }),
    };
    rows.push_back(r);
  }
  rows.push_back(row("sum.dtype_float64", {OpId::Sum}, kRealMask, sum_samples,
                     reduce_call(nullptr, [](const Tensor& x, IntArrayRef d,
                                             bool k) { return x.sum(d, k, kFloat64); }),
                     reduce_ref(ref_sum), as_float64));
  rows.push_back(row("sum.dtype_int32", {OpId::Sum}, kIntMask | kBoolMask, sum_samples,
                     reduce_call(nullptr, [](const Tensor& x, IntArrayRef d,
                                             bool k) { return x.sum(d, k, kInt32); }),
                     reduce_ref(ref_sum), [](DType) { return kInt32; }));
  rows.push_back(row("sum.out", {OpId::Sum}, kNumericMask, sum_samples,
                     reduce_call(nullptr,
                                 [](const Tensor& x, IntArrayRef d, bool k) {
                                   Tensor out = empty({0}, TensorOptions(sum_out_dtype(x.dtype())));
                                   sum_out(out, x, d, k);
                                   return out;
                                 }),
                     reduce_ref(ref_sum), sum_out_dtype));
  {
    OpRow r = row("mean", {OpId::Mean}, kFloatMask | kComplexMask, sum_samples,
                  reduce_call([](const Tensor& x) { return x.mean(); },
                              [](const Tensor& x, IntArrayRef d, bool k) { return x.mean(d, k); }),
                  reduce_ref(ref_mean), [](DType d) { return d; });
    r.errors = {
        err("could not infer output dtype", [] { return arange(4).mean(); }),
        err("could not infer output dtype", [] { return ones({2}).mean(kInt64); }),
    };
    rows.push_back(r);
  }
  rows.push_back(row(
      "mean.dtype_float64", {OpId::Mean}, kRealMask, sum_samples,
      reduce_call([](const Tensor& x) { return x.mean(kFloat64); },
                  [](const Tensor& x, IntArrayRef d, bool k) { return x.mean(d, k, kFloat64); }),
      reduce_ref(ref_mean), as_float64));
  {
    OpRow r =
        row("nansum", {OpId::NanSum}, kRealMask, sum_samples,
            reduce_call([](const Tensor& x) { return x.nansum(); },
                        [](const Tensor& x, IntArrayRef d, bool k) { return x.nansum(d, k); }),
            reduce_ref(ref_nansum), sum_out_dtype);
    r.errors = {err("complex", [] { return ones({2}, kComplex64).nansum(); })};
    rows.push_back(r);
  }
  {
    OpRow r =
        row("nanmean", {OpId::NanMean}, kFloatMask, sum_samples,
            reduce_call([](const Tensor& x) { return x.nanmean(); },
                        [](const Tensor& x, IntArrayRef d, bool k) { return x.nanmean(d, k); }),
            reduce_ref(ref_nanmean), [](DType d) { return d; });
    r.errors = {err("could not infer output dtype", [] { return arange(4).nanmean(); })};
    rows.push_back(r);
  }
  {
    // Small reductions (at most 12 elements) with small values: integer products stay exact
    // in the double reference. Floats also get a long product of values near 1 (lane mode).
    auto prod_samples = [](DType dt) {
      const bool fl = is_floating_point(dt) || is_complex(dt);
      SampleOpts o{.large = false, .lo = fl ? -1.5 : -0.5, .hi = fl ? 1.5 : 0.5};
      auto v = reduce_samples(dt, o);
      if (is_floating_point(dt)) {  // complex values near 1+1j would overflow
        v.push_back(make({40000, 3}, {0}, false, dt, 5, 0.9995, 1.0005));
        v.push_back(make({3, 20000}, {1}, false, dt, 6, 0.9995, 1.0005));
      }
      return v;
    };
    auto prod1 = [](const Tensor& x, IntArrayRef d, bool k) {
      // prod takes one dim; several dims are reduced one after the other (in the reference
      // order), which is exact for the values used here.
      if (d.size() == 1) return x.prod(d[0], k);
      std::vector<int64_t> dims(d.begin(), d.end());
      if (dims.empty())
        for (int64_t i = 0; i < x.dim(); ++i) dims.push_back(i);
      for (auto& i : dims) i = i < 0 ? i + x.dim() : i;
      std::sort(dims.rbegin(), dims.rend());
      Tensor y = x;
      if (x.dim() == 0) return x.prod(0, k);
      for (int64_t i : dims) y = y.prod(i, k);
      return y;
    };
    rows.push_back(row("prod", {OpId::Prod}, kNumericMask, prod_samples,
                       reduce_call([](const Tensor& x) { return x.prod(); }, prod1),
                       reduce_ref(ref_prod), sum_out_dtype));
  }
  auto nz = [](const C& x) { return x != C(0); };
  rows.push_back(row(
      "any", {OpId::Any}, kNumericMask, [](DType dt) { return reduce_samples(dt); },
      reduce_call([](const Tensor& x) { return x.any(); },
                  [](const Tensor& x, IntArrayRef d, bool k) { return x.any(d, k); }),
      reduce_ref(
          [nz](const Vals& r) { return C(std::any_of(r.begin(), r.end(), nz) ? 1.0 : 0.0); }),
      [](DType d) { return d == kUInt8 ? kUInt8 : kBool; }));
  rows.push_back(row(
      "all", {OpId::All}, kNumericMask, [](DType dt) { return reduce_samples(dt); },
      reduce_call([](const Tensor& x) { return x.all(); },
                  [](const Tensor& x, IntArrayRef d, bool k) { return x.all(d, k); }),
      reduce_ref(
          [nz](const Vals& r) { return C(std::all_of(r.begin(), r.end(), nz) ? 1.0 : 0.0); }),
      [](DType d) { return d == kUInt8 ? kUInt8 : kBool; }));
  rows.push_back(row(
      "count_nonzero", {OpId::Sum}, kNumericMask,
      [](DType dt) {
        std::vector<Sample> v;
        for (auto& s : reduce_samples(dt))
          if (!s.flag) v.push_back(s);  // count_nonzero has no keepdim
        return v;
      },
      reduce_call([](const Tensor& x) { return x.count_nonzero(); },
                  [](const Tensor& x, IntArrayRef d, bool) { return x.count_nonzero(d); }),
      reduce_ref([nz](const Vals& r) {
        return C(static_cast<double>(std::count_if(r.begin(), r.end(), nz)));
      }),
      as_int64));
  return rows;
}

template <bool kMax>
C ref_extreme(const Vals& r) {
  return r[ref_arg<kMax>(r)];
}

std::vector<OpRow> extreme_rows() {
  std::vector<OpRow> rows;
  auto nonempty = [](DType dt) { return reduce_samples(dt, {.empty_reduce = false}); };
  auto single = [](DType dt) {
    return reduce_samples(dt, {.empty_reduce = false, .single_dim = true});
  };
  auto same = [](DType d) { return d; };
  {
    OpRow r = row(
        "amax", {OpId::Amax}, kRealMask, nonempty,
        reduce_call(nullptr, [](const Tensor& x, IntArrayRef d, bool k) { return x.amax(d, k); }),
        reduce_ref(ref_extreme<true>), same);
    r.errors = {
        err("Expected reduction dim 0 to have non-zero size",
            [] {
              return zeros({0, 2}).amax(0);
            }),
        err("complex", [] { return ones({2}, kComplex64).amax(); }),
        err("dtype",
            [] {
              Tensor o = empty({2}, kFloat64);
              return amax_out(o, ones({2, 2}), 1);
            }),
    };
    rows.push_back(r);
  }
  rows.push_back(
      row("amin", {OpId::Amin}, kRealMask, nonempty,
          reduce_call(nullptr, [](const Tensor& x, IntArrayRef d, bool k) { return x.amin(d, k); }),
          reduce_ref(ref_extreme<false>), same));
  auto full_samples = [](DType dt) {
    std::vector<Sample> v;
    for (auto& s : reduce_samples(dt, {.empty_reduce = false}))
      if (s.ints.empty() && !s.flag && s.inputs[0].numel() > 0) v.push_back(s);
    for (auto& s : reduce_samples(dt, {.empty_reduce = false, .single_dim = true})) {
      if (s.inputs[0].numel() == 0) continue;
      s.ints.clear();  // the same inputs, reduced over all elements
      s.flag = false;
      s.desc += " (all)";
      v.push_back(s);
    }
    return v;
  };
  {
    OpRow r = row(
        "max.all", {OpId::Amax}, kRealMask, full_samples,
        [](const std::vector<Tensor>& in, const Sample&) { return in[0].max(); },
        reduce_ref(ref_extreme<true>), same);
    r.errors = {err("Expected reduction dim to be specified", [] { return zeros({0}).max(); })};
    rows.push_back(r);
  }
  rows.push_back(row(
      "min.all", {OpId::Amin}, kRealMask, full_samples,
      [](const std::vector<Tensor>& in, const Sample&) { return in[0].min(); },
      reduce_ref(ref_extreme<false>), same));
  for (bool is_max : {true, false}) {
    const std::string n = is_max ? "max" : "min";
    const OpId id = is_max ? OpId::MaxDim : OpId::MinDim;
    auto call = [is_max](const Tensor& x, IntArrayRef d, bool k) {
      return is_max ? x.max(d[0], k) : x.min(d[0], k);
    };
    rows.push_back(row(n + ".dim.values", {id}, kRealMask, single,
                       reduce_call(nullptr, [call](const Tensor& x, IntArrayRef d,
                                                   bool k) { return std::get<0>(call(x, d, k)); }),
                       reduce_ref(is_max ? ref_extreme<true> : ref_extreme<false>), same));
    OpRow r = row(n + ".dim.indices", {id}, kRealMask, single,
                  reduce_call(nullptr, [call](const Tensor& x, IntArrayRef d,
                                              bool k) { return std::get<1>(call(x, d, k)); }),
                  reduce_ref([is_max](const Vals& v) {
                    return C(static_cast<double>(is_max ? ref_arg<true>(v) : ref_arg<false>(v)));
                  }),
                  as_int64);
    r.errors = {
        err("Expected reduction dim 1 to have non-zero size",
            [is_max] {
              return is_max ? zeros({2, 0}).max(1) : zeros({2, 0}).min(1);
            }),
        err("dimension out of range", [] { return ones({2}).max(1); }),
    };
    rows.push_back(r);
  }
  for (bool is_max : {true, false}) {
    const std::string n = is_max ? "argmax" : "argmin";
    auto samples = [](DType dt) {
      auto v = reduce_samples(dt, {.empty_reduce = false, .single_dim = true});
      for (auto& s : reduce_samples(dt, {.empty_reduce = false}))
        if (s.ints.empty() && s.inputs[0].numel() > 0) v.push_back(s);
      Sample k = make({3, 4}, {}, true, dt, 77);  // no dim, keepdim: shape [1, 1]
      v.push_back(k);
      return v;
    };
    OpRow r =
        row(n, {is_max ? OpId::ArgMax : OpId::ArgMin}, kRealMask, samples,
            reduce_call([is_max](const Tensor& x) { return is_max ? x.argmax() : x.argmin(); },
                        [is_max](const Tensor& x, IntArrayRef d, bool k) {
                          std::optional<int64_t> dim;
                          if (!d.empty()) dim = d[0];
                          return is_max ? x.argmax(dim, k) : x.argmin(dim, k);
                        }),
            reduce_ref([is_max](const Vals& v) {
              return C(static_cast<double>(is_max ? ref_arg<true>(v) : ref_arg<false>(v)));
            }),
            as_int64);
    r.errors = {
        err("Expected reduction dim to be specified",
            [] {
              return zeros({0, 3}).argmax();
            }),
        err("Expected reduction dim 0 to have non-zero size",
            [] {
              return zeros({0, 3}).argmin(0);
            }),
        err("dimension out of range",
            [] {
              return ones({2, 3}).argmax(-3);
            }),
    };
    rows.push_back(r);
  }
  rows.push_back(row("aminmax.min", {OpId::Amin}, kRealMask, single,
                     reduce_call(nullptr, [](const Tensor& x, IntArrayRef d,
                                             bool k) { return std::get<0>(x.aminmax(d[0], k)); }),
                     reduce_ref(ref_extreme<false>), same));
  rows.push_back(row(
      "aminmax.max", {OpId::Amax}, kRealMask, full_samples,
      [](const std::vector<Tensor>& in, const Sample&) { return std::get<1>(in[0].aminmax()); },
      reduce_ref(ref_extreme<true>), same));
  return rows;
}

std::vector<OpRow> stats_rows() {
  std::vector<OpRow> rows;
  const uint32_t fc = kFloatMask | kComplexMask;
  auto all_samples = [](DType dt) { return reduce_samples(dt); };
  auto real_of = [](DType d) { return to_real(d); };
  struct VarCase {
    std::string name;
    bool take_sqrt;
    double correction;
  };
  for (const VarCase& vc : {VarCase{"var", false, 1}, VarCase{"var.correction0", false, 0},
                            VarCase{"std", true, 1}, VarCase{"std.correction2_5", true, 2.5}}) {
    const bool sq = vc.take_sqrt;
    const double cor = vc.correction;
    OpRow r =
        row(vc.name, {sq ? OpId::StdMean : OpId::VarMean}, fc, all_samples,
            reduce_call(cor == 1 ? std::function<Tensor(const Tensor&)>(
                                       [sq](const Tensor& x) { return sq ? x.std() : x.var(); })
                                 : nullptr,
                        [sq, cor](const Tensor& x, IntArrayRef d, bool k) {
                          return sq ? x.std(d, cor, k) : x.var(d, cor, k);
                        }),
            reduce_ref([sq, cor](const Vals& v) {
              const C r = ref_var(v, cor);
              return sq ? C(std::sqrt(r.real())) : r;
            }),
            real_of);
    if (vc.name == "var")
      r.errors = {err("floating point and complex", [] { return arange(3).var(); })};
    rows.push_back(r);
  }
  for (bool sq : {false, true}) {
    const std::string n = sq ? "std_mean" : "var_mean";
    const OpId id = sq ? OpId::StdMean : OpId::VarMean;
    auto call = [sq](const Tensor& x, IntArrayRef d, bool k) {
      return sq ? std_mean(x, d, 1, k) : var_mean(x, d, 1, k);
    };
    rows.push_back(row(n + ".first", {id}, fc, all_samples,
                       reduce_call(nullptr, [call](const Tensor& x, IntArrayRef d,
                                                   bool k) { return std::get<0>(call(x, d, k)); }),
                       reduce_ref([sq](const Vals& v) {
                         const C r = ref_var(v, 1);
                         return sq ? C(std::sqrt(r.real())) : r;
                       }),
                       real_of));
    rows.push_back(row(n + ".mean", {id}, fc, all_samples,
                       reduce_call(nullptr, [call](const Tensor& x, IntArrayRef d,
                                                   bool k) { return std::get<1>(call(x, d, k)); }),
                       reduce_ref(ref_mean), [](DType d) { return d; }));
  }
  struct NormCase {
    std::string name;
    double p;
  };
  for (const NormCase& nc :
       {NormCase{"norm.p2", 2}, NormCase{"norm.p1", 1}, NormCase{"norm.pinf", kInf},
        NormCase{"norm.pneginf", -kInf}, NormCase{"norm.p0", 0}, NormCase{"norm.p3", 3},
        NormCase{"norm.p0_5", 0.5}, NormCase{"norm.pneg1_5", -1.5}}) {
    const double p = nc.p;
    const bool no_identity = p < 0 || std::isinf(p);
    OpRow r = row(
        nc.name, {OpId::Norm}, fc,
        [no_identity, p](DType dt) {
          // float16 p < 1 norms of long rows overflow (as in PyTorch).
          const bool large = !(dt == DType::Float16 && p > 0 && p < 1);
          return reduce_samples(dt,
                                {.empty_reduce = !no_identity, .large = large, .lo = -1, .hi = 3});
        },
        reduce_call(nullptr,
                    [p](const Tensor& x, IntArrayRef d, bool k) { return x.norm(p, d, k); }),
        reduce_ref([p](const Vals& v) { return ref_norm(v, p); }), real_of);
    if (no_identity) r.errors = {err("empty tensor", [p] { return zeros({0}).norm(p); })};
    if (p == 2)
      r.errors = {err("floating point or complex", [] { return arange(3).norm(); }), err("nuc", [] {
                    return ones({2, 2}).norm("nuc");
                  })};
    rows.push_back(r);
  }
  rows.push_back(row(
      "norm.fro", {OpId::Norm}, fc,
      [](DType dt) { return reduce_samples(dt, {.lo = -1, .hi = 3}); },
      reduce_call([](const Tensor& x) { return x.norm("fro"); },
                  [](const Tensor& x, IntArrayRef d, bool k) { return x.norm("fro", d, k); }),
      reduce_ref([](const Vals& v) { return ref_norm(v, 2); }), real_of));
  rows.push_back(row(
      "linalg.vector_norm.dtype_float64", {OpId::Norm}, kFloatMask,
      [](DType dt) { return reduce_samples(dt, {.lo = -1, .hi = 3}); },
      reduce_call(nullptr, [](const Tensor& x, IntArrayRef d,
                              bool k) { return linalg::vector_norm(x, 2, d, k, kFloat64); }),
      reduce_ref([](const Vals& v) { return ref_norm(v, 2); }), as_float64));
  {
    OpRow r = row("logsumexp", {OpId::LogSumExp}, kRealMask, all_samples,
                  reduce_call(nullptr, [](const Tensor& x, IntArrayRef d,
                                          bool k) { return x.logsumexp(d, k); }),
                  reduce_ref(ref_logsumexp),
                  [](DType d) { return is_integral(d, true) ? get_default_dtype() : d; });
    r.errors = {err("complex", [] { return ones({2}, kComplex64).logsumexp(0); })};
    rows.push_back(r);
  }
  return rows;
}

std::vector<OpRow> reduce_rows() {
  std::vector<OpRow> rows = sum_rows();
  for (auto& r : extreme_rows()) rows.push_back(std::move(r));
  for (auto& r : stats_rows()) rows.push_back(std::move(r));
  return rows;
}

}  // namespace

KILN_OP_ROWS(reduce_rows);

}  // namespace kiln::testing
