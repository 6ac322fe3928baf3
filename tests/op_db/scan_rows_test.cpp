// Op-table rows for the scans, sorting and searching ops (cumsum cumprod cummax cummin
// logcumsumexp diff sort argsort msort topk kthvalue median nanmedian mode quantile nanquantile
// unique unique_consecutive searchsorted bucketize histc bincount). References are plain double
// loops over each line (stable sorts with NaN largest), written independently of kiln.
#include <algorithm>
#include <map>
#include <numeric>

#include "op_db/scan_rows_util.h"
#include "op_db/scan_search_rows_util.h"

namespace kiln::testing {
namespace {

using namespace shape_rows;
using detail::kBoolMask;
using detail::kComplexMask;
using detail::kFloatMask;
using detail::kIntMask;
using detail::kNumericMask;
using detail::kRealMask;

DType same(DType d) { return d; }
DType as_i64(DType) { return kInt64; }
bool is_fp(DType d) { return is_floating_point(d) || is_complex(d); }

// Line samples: ints = {dim}, flag free for the row. Shapes cover 0-dim, empty, 1-D, negative
// dims, ties and (floating) NaN/inf.
std::vector<Sample> line_samples(DType dt, bool empty = true, bool large = true, double lo = -2,
                                 double hi = 2) {
  std::vector<Sample> v;
  uint64_t sd = 50;
  v.push_back(sample({rnd({}, sd++, lo, hi)}, {0}, "0-dim dim 0"));
  v.push_back(sample({rnd({}, sd++, lo, hi)}, {-1}, "0-dim dim -1"));
  v.push_back(sample({rnd({7}, sd++, lo, hi)}, {0}, "[7]"));
  v.push_back(sample({rnd({3, 4}, sd++, lo, hi)}, {1}, "[3,4] dim 1"));
  v.push_back(sample({rnd({3, 4}, sd++, lo, hi)}, {-2}, "[3,4] dim -2"));
  v.push_back(sample({rnd({2, 3, 5}, sd++, lo, hi)}, {1}, "[2,3,5] dim 1"));
  v.push_back(sample({ties({4, 9}, sd++)}, {1}, "ties [4,9] dim 1"));
  v.push_back(sample({ties({300}, sd++)}, {0}, "ties [300] (radix path)"));
  if (empty) v.push_back(sample({rnd({0, 3}, sd++)}, {0}, "empty [0,3] dim 0"));
  v.push_back(sample({rnd({0, 3}, sd++)}, {1}, "empty [0,3] dim 1"));
  if (large) {
    v.push_back(sample({rnd({2, 40000}, sd++, lo, hi)}, {1}, "[2,40000] dim 1"));
    v.push_back(sample({rnd({3000, 30}, sd++, lo, hi)}, {0}, "[3000,30] dim 0"));
  }
  if (is_fp(dt)) {
    v.push_back(
        sample({vals({0.0, -0.0, 1.0, kNaN, -kInf, kInf, 0.5, kNaN, -1.0, 2.0, 0.0, -2.5}, {2, 6})},
               {1}, "special values"));
    v.push_back(sample({vals({kNaN, 1.0, kNaN, 1.0, -kInf, 3.0}, {6})}, {0}, "NaN first"));
  }
  return v;
}

// Runs ref f over each line of in[0] along s.ints[0] (same length out).
OpFn line_ref(std::function<Vals(const Vals&)> f, std::function<DType(DType)> out) {
  return [f, out](const std::vector<Tensor>& in, const Sample& s) {
    const int64_t dim = s.ints[0];
    const int64_t n = in[0].dim() == 0 ? 1 : in[0].size(dim);
    return ref_lines(in[0], dim, n, out(in[0].dtype()), f);
  };
}

// Stable order of a line (NaN largest, real parts), ascending or descending.
std::vector<int64_t> stable_order(const Vals& v, bool desc) {
  std::vector<int64_t> o(v.size());
  std::iota(o.begin(), o.end(), 0);
  std::stable_sort(o.begin(), o.end(), [&](int64_t a, int64_t b) {
    return desc ? nan_less(v[b].real(), v[a].real()) : nan_less(v[a].real(), v[b].real());
  });
  return o;
}

// ---- scans ----
std::vector<OpRow> scan_rows() {
  std::vector<OpRow> rows;
  auto cum = [](bool prod) {
    return [prod](const Vals& v) {
      Vals r;
      C acc = prod ? 1.0 : 0.0;
      for (const C& x : v) r.push_back(acc = prod ? acc * x : acc + x);
      return r;
    };
  };
  auto cum_out = [](DType d) { return is_integral(d, true) ? kInt64 : d; };
  auto ref_dt = [](DType d) { return master_of(d); };
  {
    OpRow r = row(
        "cumsum", {OpId::CumSum}, kNumericMask, [](DType d) { return line_samples(d); },
        [](const std::vector<Tensor>& in, const Sample& s) { return cumsum(in[0], s.ints[0]); },
        line_ref(cum(false), ref_dt), cum_out);
    r.errors = {err("dimension out of range",
                    [] {
                      return cumsum(ones({2, 3}), 2);
                    }),
                err("dimension out of range", [] { return cumsum(full({}, 1.0), 1); })};
    rows.push_back(r);
  }
  rows.push_back(row(
      "cumsum.dtype_float64", {OpId::CumSum}, kRealMask, [](DType d) { return line_samples(d); },
      [](const std::vector<Tensor>& in, const Sample& s) {
        return in[0].cumsum(s.ints[0], kFloat64);
      },
      line_ref(cum(false), ref_dt), [](DType) { return kFloat64; }));
  rows.push_back(row(
      "cumsum_", {OpId::CumSum}, kFloatMask | kComplexMask, [](DType d) { return line_samples(d); },
      [](const std::vector<Tensor>& in, const Sample& s) {
        Tensor y = in[0];
        return y.cumsum_(s.ints[0]);
      },
      line_ref(cum(false), ref_dt), same));
  {
    // Short lines of small values keep integer products exact; floats also get long lines of
    // values near 1.
    auto samples = [](DType d) {
      std::vector<Sample> v = line_samples(d, true, false, -1.2, 1.2);
      if (is_floating_point(d)) {
        v.push_back(sample({rnd({2, 40000}, 3, 0.9995, 1.0005)}, {1}, "long near 1"));
        v.push_back(sample({rnd({3000, 3}, 4, 0.999, 1.001)}, {0}, "lanes near 1"));
      }
      std::vector<Sample> keep;
      for (auto& s : v)
        if (is_fp(d) || s.desc.find("ties [300]") == std::string::npos) keep.push_back(s);
      return keep;
    };
    rows.push_back(row(
        "cumprod", {OpId::CumProd}, kNumericMask, samples,
        [](const std::vector<Tensor>& in, const Sample& s) { return cumprod(in[0], s.ints[0]); },
        line_ref(cum(true), ref_dt), cum_out));
  }
  for (bool mx : {true, false}) {
    for (bool idx : {false, true}) {
      auto f = [mx, idx](const Vals& v) {
        Vals r;
        double best = v.empty() ? 0 : v[0].real();
        int64_t bi = 0;
        for (size_t i = 0; i < v.size(); ++i) {
          const double x = v[i].real();
          if (std::isnan(x) || (!std::isnan(best) && (mx ? x >= best : x <= best))) {
            best = x;
            bi = static_cast<int64_t>(i);
          }
          r.push_back(idx ? C(static_cast<double>(bi)) : C(best));
        }
        return r;
      };
      std::string name = std::string(mx ? "cummax" : "cummin") + (idx ? ".indices" : ".values");
      OpRow r = row(
          name, {mx ? OpId::CumMax : OpId::CumMin}, kRealMask,
          [](DType d) { return line_samples(d); },
          [mx, idx](const std::vector<Tensor>& in, const Sample& s) {
            auto t = mx ? cummax(in[0], s.ints[0]) : cummin(in[0], s.ints[0]);
            return idx ? std::get<1>(t) : std::get<0>(t);
          },
          line_ref(f, [](DType) { return kFloat64; }),
          idx ? std::function<DType(DType)>(as_i64) : std::function<DType(DType)>(same));
      if (mx && !idx) r.errors = {err("complex", [] { return cummax(ones({2}, kComplex64), 0); })};
      rows.push_back(r);
    }
  }
  {
    auto f = [](const Vals& v) {
      Vals r;
      double acc = -kInf;
      for (const C& x : v) {
        const double a = x.real();
        if (std::isnan(acc) || std::isnan(a))
          acc = kNaN;
        else if (std::max(acc, a) == kInf)
          acc = kInf;
        else if (std::max(acc, a) == -kInf)
          acc = -kInf;
        else
          acc = std::max(acc, a) +
                std::log(std::exp(acc - std::max(acc, a)) + std::exp(a - std::max(acc, a)));
        r.push_back(acc);
      }
      return r;
    };
    OpRow r = row(
        "logcumsumexp", {OpId::LogCumSumExp}, kFloatMask, [](DType d) { return line_samples(d); },
        [](const std::vector<Tensor>& in, const Sample& s) {
          return logcumsumexp(in[0], s.ints[0]);
        },
        line_ref(f, [](DType) { return kFloat64; }), same);
    r.errors = {err("floating point", [] { return logcumsumexp(arange(3), 0); })};
    rows.push_back(r);
  }
  {
    // ints = n, dim; inputs: x[, prepend[, append]] (flag: the second input is append)
    auto samples = [](DType dt) {
      std::vector<Sample> v;
      v.push_back(sample({rnd({7}, 1, -1, 1)}, {1, 0}, "[7] n 1"));
      v.push_back(sample({rnd({3, 5}, 2, -1, 1)}, {2, 1}, "[3,5] n 2 dim 1"));
      v.push_back(sample({rnd({3, 5}, 3, -1, 1)}, {1, -2}, "[3,5] dim -2"));
      v.push_back(sample({rnd({3, 5}, 4, -1, 1)}, {0, 1}, "n 0"));
      v.push_back(sample({rnd({3}, 5, -1, 1)}, {5, 0}, "n > size"));
      v.push_back(sample({rnd({2, 3}, 6, -1, 1), rnd({2, 2}, 7, -1, 1)}, {1, 1}, "prepend"));
      v.push_back(sample({rnd({2, 3}, 8, -1, 1), rnd({2, 1}, 9, -1, 1), rnd({2, 2}, 10, -1, 1)},
                         {1, 1}, "prepend and append"));
      v.push_back(sample({rnd({2, 3}, 11, -1, 1), rnd({1, 3}, 12, -1, 1)}, {1, 0}, "append", true));
      for (auto& s : v) s.scalars = {dt == kBool ? 1 : 0};  // bool: differences are x != y
      return v;
    };
    OpRow r = row(
        "diff", {OpId::Cat}, kNumericMask & ~detail::dtype_bit(kUInt8), samples,
        [](const std::vector<Tensor>& in, const Sample& s) {
          Tensor pre = in.size() > 1 && !s.flag ? in[1] : Tensor();
          Tensor app = in.size() > 2 ? in[2] : (in.size() > 1 && s.flag ? in[1] : Tensor());
          return diff(in[0], s.ints[0], s.ints[1], pre, app);
        },
        [](const std::vector<Tensor>& in, const Sample& s) {
          std::vector<Tensor> parts;
          int64_t dim = s.ints[1] < 0 ? s.ints[1] + in[0].dim() : s.ints[1];
          if (in.size() > 1 && !s.flag) parts.push_back(in[1]);
          parts.push_back(in[0]);
          if (in.size() > 2) parts.push_back(in[2]);
          if (in.size() > 1 && s.flag) parts.push_back(in[1]);
          // join along dim by hand
          Shape os = shape_of(in[0]);
          os[dim] = 0;
          for (auto& p : parts) os[dim] += p.size(dim);
          Vals joined(numel_of(os));
          for (int64_t o = 0; o < numel_of(os); ++o) {
            Shape i = unravel(o, os);
            size_t k = 0;
            while (i[dim] >= parts[k].size(dim)) i[dim] -= parts[k++].size(dim);
            joined[o] = values(parts[k])[ravel(i, shape_of(parts[k]))];
          }
          Tensor y = from_values(joined, os, kFloat64);
          const bool is_bool = s.scalars[0].to<int64_t>() == 1;
          for (int64_t t = 0; t < s.ints[0] && y.size(dim) > 0; ++t) {
            Shape ys = shape_of(y), ns = ys;
            ns[dim] -= 1;
            const Vals yv = values(y);
            Vals d(numel_of(ns));
            for (int64_t o = 0; o < numel_of(ns); ++o) {
              Shape i = unravel(o, ns);
              const int64_t lo = ravel(i, ys);
              i[dim] += 1;
              d[o] = yv[ravel(i, ys)] - yv[lo];
              if (is_bool) d[o] = d[o] != C(0) ? 1.0 : 0.0;
            }
            y = from_values(d, ns, kFloat64);
          }
          return y;
        },
        nullptr);
    r.errors = {err("non-negative", [] { return diff(ones({3}), -1); }),
                err("one-dimensional", [] { return diff(full({}, 1.0)); }),
                err("same dimension", [] {
                  return diff(ones({3}), 1, 0, ones({1, 1}));
                })};
    rows.push_back(r);
  }
  return rows;
}

// ---- sorting ----
std::vector<Sample> sort_samples(DType d) {
  std::vector<Sample> v = line_samples(d);
  v.push_back(sample({rnd({100000}, 77)}, {0}, "1e5 radix"));
  v.push_back(sample({rnd({5, 7}, 78)}, {-1}, "[5,7] dim -1"));
  return v;
}

std::vector<OpRow> sort_rows() {
  std::vector<OpRow> rows;
  auto i64dt = [](DType) { return kFloat64; };
  for (bool desc : {false, true}) {
    for (bool idx : {false, true}) {
      std::string name =
          std::string("sort") + (desc ? ".desc" : "") + (idx ? ".indices" : ".values");
      OpRow r = row(
          name, {OpId::Sort}, kRealMask, sort_samples,
          [desc, idx](const std::vector<Tensor>& in, const Sample& s) {
            auto t = sort(in[0], true, s.ints[0], desc);
            return idx ? std::get<1>(t) : std::get<0>(t);
          },
          line_ref(
              [desc, idx](const Vals& v) {
                Vals r;
                for (int64_t i : stable_order(v, desc))
                  r.push_back(idx ? C(static_cast<double>(i)) : v[i]);
                return r;
              },
              i64dt),
          idx ? std::function<DType(DType)>(as_i64) : std::function<DType(DType)>(same));
      if (!desc && !idx)
        r.errors = {err("complex", [] { return sort(ones({3}, kComplex64)); }),
                    err("dimension out of range", [] { return sort(ones({3}), 1); })};
      rows.push_back(r);
    }
  }
  rows.push_back(row(
      "argsort.stable", {OpId::Sort}, kRealMask, [](DType d) { return line_samples(d); },
      [](const std::vector<Tensor>& in, const Sample& s) {
        return argsort(in[0], s.ints[0], false, true);
      },
      line_ref(
          [](const Vals& v) {
            Vals r;
            for (int64_t i : stable_order(v, false)) r.push_back(static_cast<double>(i));
            return r;
          },
          i64dt),
      as_i64));
  rows.push_back(row(
      "msort", {OpId::Sort}, kRealMask,
      [](DType d) {
        std::vector<Sample> v;
        for (auto& s : line_samples(d))
          if (s.ints[0] == 0) v.push_back(s);
        return v;
      },
      [](const std::vector<Tensor>& in, const Sample&) { return msort(in[0]); },
      line_ref(
          [](const Vals& v) {
            Vals r;
            for (int64_t i : stable_order(v, false)) r.push_back(v[i]);
            return r;
          },
          i64dt),
      same));
  // topk: ints = {dim, k}; flag = largest.
  auto topk_samples = [](DType d) {
    std::vector<Sample> v;
    for (auto& s : line_samples(d)) {
      const Tensor& x = s.inputs[0];
      const int64_t n = x.dim() == 0 ? 1 : x.size(s.ints[0]);
      for (int64_t k : {int64_t(0), std::min<int64_t>(n, 1), std::min<int64_t>(n, 3), n}) {
        for (bool largest : {true, false}) {
          Sample t = s;
          t.ints.push_back(k);
          t.flag = largest;
          t.desc += " k " + std::to_string(k) + (largest ? " largest" : " smallest");
          v.push_back(t);
        }
      }
    }
    return v;
  };
  for (bool idx : {false, true}) {
    OpRow r = row(
        idx ? "topk.indices" : "topk.values", {OpId::TopK}, kRealMask, topk_samples,
        [idx](const std::vector<Tensor>& in, const Sample& s) {
          auto t = topk(in[0], s.ints[1], s.ints[0], s.flag);
          return idx ? std::get<1>(t) : std::get<0>(t);
        },
        [idx](const std::vector<Tensor>& in, const Sample& s) {
          // The first k of the stable sort (largest: descending); ties take the lower index.
          return ref_lines(in[0], s.ints[0], s.ints[1], kFloat64, [&](const Vals& v) {
            Vals r;
            auto o = stable_order(v, s.flag);
            const int64_t k = in[0].dim() == 0 ? 1 : s.ints[1];  // 0-dim: the element
            for (int64_t i = 0; i < k; ++i)
              r.push_back(idx ? C(static_cast<double>(o[i])) : v[o[i]]);
            return r;
          });
        },
        idx ? std::function<DType(DType)>(as_i64) : std::function<DType(DType)>(same));
    if (!idx) r.errors = {err("out of range", [] { return topk(ones({3}), 4); })};
    rows.push_back(r);
  }
  return rows;
}

// ---- one value per line: kthvalue, median, nanmedian, mode ----
// picker(line) -> index into the line of the picked element; value = line[index].
using Picker = std::function<int64_t(const Vals&, const Sample&)>;

std::vector<Sample> pick_samples(DType d) {
  std::vector<Sample> v;
  for (auto& s : line_samples(d, false)) {
    for (bool keep : {false, true}) {
      Sample t = s;
      t.flag = keep;
      if (keep) t.desc += " keepdim";
      v.push_back(t);
    }
  }
  return v;
}

void add_pick_rows(std::vector<OpRow>& rows, const std::string& name, OpId id,
                   std::function<std::tuple<Tensor, Tensor>(const Tensor&, const Sample&)> fn,
                   Picker pick, std::function<std::vector<Sample>(DType)> samples,
                   std::vector<OpRow::ErrorCase> errors) {
  for (bool idx : {false, true}) {
    OpRow r = row(
        name + (idx ? ".indices" : ".values"), {id}, kRealMask, samples,
        [fn, idx](const std::vector<Tensor>& in, const Sample& s) {
          auto t = fn(in[0], s);
          return idx ? std::get<1>(t) : std::get<0>(t);
        },
        [pick, idx](const std::vector<Tensor>& in, const Sample& s) {
          return ref_lines(
              in[0], s.ints[0], 1, kFloat64,
              [&](const Vals& v) {
                const int64_t i = pick(v, s);
                return Vals{idx ? C(static_cast<double>(i)) : v[i]};
              },
              s.flag);
        },
        idx ? std::function<DType(DType)>(as_i64) : std::function<DType(DType)>(same));
    if (!idx) r.errors = errors;
    rows.push_back(r);
  }
}

int64_t first_nan(const Vals& v) {
  for (size_t i = 0; i < v.size(); ++i)
    if (std::isnan(v[i].real())) return static_cast<int64_t>(i);
  return -1;
}

std::vector<OpRow> pick_rows() {
  std::vector<OpRow> rows;
  // kthvalue: ints = {dim, k}
  auto kth_samples = [](DType d) {
    std::vector<Sample> v;
    for (auto& s : pick_samples(d)) {
      const int64_t n = s.inputs[0].dim() == 0 ? 1 : s.inputs[0].size(s.ints[0]);
      for (int64_t k : {int64_t(1), (n + 1) / 2, n}) {
        Sample t = s;
        t.ints.push_back(k);
        t.desc += " k " + std::to_string(k);
        v.push_back(t);
      }
    }
    return v;
  };
  add_pick_rows(
      rows, "kthvalue", OpId::KthValue,
      [](const Tensor& x, const Sample& s) { return kthvalue(x, s.ints[1], s.ints[0], s.flag); },
      [](const Vals& v, const Sample& s) { return stable_order(v, false)[s.ints[1] - 1]; },
      kth_samples, {err("out of range", [] { return kthvalue(ones({3}), 4); })});
  // median: NaN (the first one) if any; else the lower middle of the stable order.
  add_pick_rows(
      rows, "median.dim", OpId::Median,
      [](const Tensor& x, const Sample& s) { return median(x, s.ints[0], s.flag); },
      [](const Vals& v, const Sample&) {
        const int64_t f = first_nan(v);
        return f >= 0 ? f : stable_order(v, false)[(v.size() - 1) / 2];
      },
      pick_samples, {err("non-zero size", [] {
        return median(ones({0, 2}), 0);
      })});
  add_pick_rows(
      rows, "nanmedian.dim", OpId::Median,
      [](const Tensor& x, const Sample& s) { return nanmedian(x, s.ints[0], s.flag); },
      [](const Vals& v, const Sample&) {
        int64_t valid = 0;
        for (const C& x : v) valid += std::isnan(x.real()) ? 0 : 1;
        if (valid == 0) return first_nan(v);
        return stable_order(v, false)[(valid - 1) / 2];
      },
      [](DType d) {
        auto v = pick_samples(d);
        if (is_fp(d))
          v.push_back(sample({vals({kNaN, kNaN, 1, kNaN}, {2, 2})}, {1}, "all NaN row"));
        return v;
      },
      {});
  // mode: the most frequent value (NaNs never equal), the smallest among equally frequent
  // ones; the index of its last occurrence.
  add_pick_rows(
      rows, "mode", OpId::Mode,
      [](const Tensor& x, const Sample& s) { return mode(x, s.ints[0], s.flag); },
      [](const Vals& v, const Sample&) {
        int64_t best = -1, best_count = 0;
        for (size_t i = 0; i < v.size(); ++i) {
          const double x = v[i].real();
          int64_t count = 0, last = static_cast<int64_t>(i);
          for (size_t j = 0; j < v.size(); ++j)
            if (v[j].real() == x) count++, last = static_cast<int64_t>(j);
          if (std::isnan(x)) count = 1;
          if (best < 0 || count > best_count ||
              (count == best_count && nan_less(x, v[best].real()))) {
            best = last;
            best_count = count;
          }
        }
        return best;
      },
      pick_samples, {});
  // median / nanmedian of all elements
  for (bool nan : {false, true}) {
    rows.push_back(row(
        nan ? "nanmedian" : "median", {OpId::Median}, kRealMask,
        [](DType d) {
          std::vector<Sample> v;
          // an empty input gives NaN (floating dtypes only; kiln raises for integer ones)
          for (auto& s : line_samples(d, false))
            if (s.inputs[0].numel() > 0 || is_floating_point(d)) v.push_back(s);
          return v;
        },
        [nan](const std::vector<Tensor>& in, const Sample&) {
          return nan ? nanmedian(in[0]) : median(in[0]);
        },
        [nan](const std::vector<Tensor>& in, const Sample&) {
          Vals v = values(in[0]);
          if (v.empty()) return from_values({C(kNaN)}, {}, kFloat64);
          Vals keep;
          for (const C& x : v)
            if (!std::isnan(x.real())) keep.push_back(x);
          if (!nan && keep.size() < v.size()) return from_values({C(kNaN)}, {}, kFloat64);
          if (keep.empty()) return from_values({C(kNaN)}, {}, kFloat64);
          auto o = stable_order(keep, false);
          return from_values({keep[o[(keep.size() - 1) / 2]]}, {}, kFloat64);
        },
        same));
  }
  return rows;
}

KILN_OP_ROWS(scan_rows);
KILN_OP_ROWS(sort_rows);
KILN_OP_ROWS(pick_rows);
KILN_OP_ROWS(quantile_rows);
KILN_OP_ROWS(unique_rows);
KILN_OP_ROWS(search_rows);

}  // namespace
}  // namespace kiln::testing
