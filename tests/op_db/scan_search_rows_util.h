// Op-table rows for quantile/nanquantile, unique/unique_consecutive, searchsorted, bucketize,
// histc and bincount (included once by scan_rows_test.cpp). References are plain double loops.
#pragma once

#include <algorithm>
#include <numeric>

#include "op_db/scan_rows_util.h"

namespace kiln::testing::shape_rows {

inline DType same_dtype(DType d) { return d; }
inline const uint32_t kRealMaskNoBool = detail::kIntMask | detail::kFloatMask;
using detail::kFloatMask;
using detail::kIntMask;
using detail::kRealMask;

// PyTorch's lerp formula (exact at both ends).
inline double ref_lerp(double a, double b, double w) {
  return w < 0.5 ? a + w * (b - a) : b - (b - a) * (1 - w);
}

// Quantile of one line: sorted values with NaNs last; rank = q (m - 1) over the m valid values
// (quantile: NaN when any NaN); q values used are exact in binary, so the rank is exact too.
inline double ref_quantile(Vals line, double q, const std::string& mode, bool ignore_nan) {
  std::vector<double> v;
  bool nan = false;
  for (const C& x : line) {
    if (std::isnan(x.real()))
      nan = true;
    else
      v.push_back(x.real());
  }
  if ((nan && !ignore_nan) || v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  const double rank = q * static_cast<double>(v.size() - 1);
  const double lo = std::floor(rank), hi = std::ceil(rank);
  if (mode == "lower") return v[static_cast<size_t>(lo)];
  if (mode == "higher") return v[static_cast<size_t>(hi)];
  if (mode == "nearest") return v[static_cast<size_t>(std::nearbyint(rank))];
  const double w = mode == "midpoint" ? 0.5 : rank - lo;
  return ref_lerp(v[static_cast<size_t>(lo)], v[static_cast<size_t>(hi)], w);
}

// ints = {dim} (absent: all elements); flag = keepdim; scalars = q values (a 1-D q when more
// than one, or when desc says "q tensor").
inline std::vector<Sample> quantile_samples(DType) {
  std::vector<Sample> v;
  auto add = [&](Sample s, std::vector<double> q) {
    for (double x : q) s.scalars.push_back(x);
    v.push_back(s);
  };
  add(sample({rnd({7}, 1)}, {0}, "[7] q .25"), {0.25});
  add(sample({rnd({3, 5}, 2)}, {1}, "[3,5] dim 1 q tensor"), {0, 0.375, 0.5, 1});
  add(sample({rnd({3, 5}, 3)}, {-2}, "[3,5] dim -2 keepdim", true), {0.625});
  add(sample({rnd({4, 6}, 4)}, {}, "all elements"), {0.75});
  add(sample({rnd({4, 6}, 5)}, {}, "all elements keepdim q tensor", true), {0.25, 0.5});
  add(sample({rnd({}, 6)}, {}, "0-dim"), {0.5});
  add(sample({ties({3, 9}, 7)}, {1}, "ties"), {0.25, 0.375, 0.625});
  add(sample({rnd({2, 4000}, 8)}, {1}, "large"), {0.5, 0.75});
  add(sample({vals({1, kNaN, 3, 2, kNaN, kNaN, kNaN, kNaN, 5, -1, kInf, 0}, {3, 4})}, {1},
             "NaN rows"),
      {0.25, 0.5});
  return v;
}

inline std::vector<OpRow> quantile_rows() {
  std::vector<OpRow> rows;
  const uint32_t f32_64 = detail::dtype_bit(kFloat32) | detail::dtype_bit(kFloat64);
  for (bool nan : {false, true}) {
    for (std::string mode : {"linear", "lower", "higher", "midpoint", "nearest"}) {
      OpRow r = row(
          std::string(nan ? "nanquantile." : "quantile.") + mode, {OpId::Quantile}, f32_64,
          quantile_samples,
          [nan, mode](const std::vector<Tensor>& in, const Sample& s) {
            std::optional<int64_t> dim;
            if (!s.ints.empty()) dim = s.ints[0];
            const bool qt = s.scalars.size() > 1 || s.desc.find("q tensor") != std::string::npos;
            if (!qt) {
              const double q = s.scalars[0].to<double>();
              return nan ? nanquantile(in[0], q, dim, s.flag, mode)
                         : quantile(in[0], q, dim, s.flag, mode);
            }
            std::vector<double> qs;
            for (auto& x : s.scalars) qs.push_back(x.to<double>());
            Tensor q = from_vector(qs, TensorOptions(kFloat64)).to(in[0].dtype());
            return nan ? nanquantile(in[0], q, dim, s.flag, mode)
                       : quantile(in[0], q, dim, s.flag, mode);
          },
          [nan, mode](const std::vector<Tensor>& in, const Sample& s) {
            const bool qt = s.scalars.size() > 1 || s.desc.find("q tensor") != std::string::npos;
            const Tensor& x = in[0];
            const bool all = s.ints.empty();
            Tensor src = all ? from_values(values(x), {x.numel()}, kFloat64) : x;
            const int64_t dim = all ? 0 : s.ints[0];
            Vals out;
            Shape shape;
            for (auto& qv : s.scalars) {
              const double q = qv.to<double>();
              Tensor t = ref_lines(
                  src, dim, 1, kFloat64,
                  [&](const Vals& line) { return Vals{ref_quantile(line, q, mode, nan)}; },
                  !all && s.flag);
              shape = shape_of(t);
              for (const C& c : values(t)) out.push_back(c);
            }
            if (all) shape = s.flag ? Shape(x.dim(), 1) : Shape{};
            if (qt) shape.insert(shape.begin(), static_cast<int64_t>(s.scalars.size()));
            return from_values(out, shape, kFloat64);
          },
          same_dtype);
      if (!nan && mode == "linear")
        r.errors = {
            err("float or double", [] { return quantile(arange(3), 0.5); }),
            err("range [0, 1]", [] { return quantile(ones({3}), 1.5); }),
            err("interpolation", [] { return quantile(ones({3}), 0.5, 0, false, "cubic"); }),
            err("same dtype", [] { return quantile(ones({3}), ones({1}, kFloat64)); }),
            err("non-empty", [] { return quantile(ones({0}), 0.5); })};
      rows.push_back(r);
    }
  }
  return rows;
}

// ---- unique ----
// Groups of the order `order` of rows of x (as (n, m) values): consecutive equal rows merge.
struct RefUnique {
  Vals values;
  std::vector<int64_t> inverse, counts;
  int64_t k = 0;
};
inline RefUnique ref_unique(const Vals& v, int64_t n, int64_t m, bool consecutive) {
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  auto row_less = [&](int64_t a, int64_t b) {
    for (int64_t j = 0; j < m; ++j) {
      const double x = v[a * m + j].real(), y = v[b * m + j].real();
      if (nan_less(x, y)) return true;
      if (nan_less(y, x)) return false;
    }
    return false;
  };
  auto row_eq = [&](int64_t a, int64_t b) {
    for (int64_t j = 0; j < m; ++j)
      if (!(v[a * m + j].real() == v[b * m + j].real())) return false;
    return true;
  };
  if (!consecutive) std::stable_sort(order.begin(), order.end(), row_less);
  RefUnique r;
  r.inverse.assign(n, 0);
  for (int64_t i = 0; i < n; ++i) {
    if (i == 0 || !row_eq(order[i - 1], order[i])) {
      for (int64_t j = 0; j < m; ++j) r.values.push_back(v[order[i] * m + j]);
      r.counts.push_back(0);
      ++r.k;
    }
    r.inverse[order[i]] = r.k - 1;
    ++r.counts.back();
  }
  return r;
}

// ints = {dim} (absent: flattened); which output in the row name.
inline std::vector<OpRow> unique_rows() {
  std::vector<OpRow> rows;
  auto samples = [](DType d) {
    std::vector<Sample> v = {sample({ties({12}, 1)}, {}, "[12]"),
                             sample({ties({3, 5}, 2)}, {}, "[3,5] flat"),
                             sample({ties({}, 3)}, {}, "0-dim"),
                             sample({rnd({0, 3}, 4)}, {}, "empty"),
                             sample({ties({300}, 5)}, {}, "[300] radix path"),
                             sample({ties({4, 2}, 6)}, {0}, "dim 0"),
                             sample({ties({3, 6}, 7)}, {1}, "dim 1"),
                             sample({ties({2, 5, 2}, 8)}, {-2}, "dim -2")};
    // rows that repeat exactly (unique along a dim needs equal slices to be interesting)
    v.push_back(sample({vals({1, 2, 1, 2, 0, 5, 1, 2, 0, 5}, {5, 2})}, {0}, "repeated rows"));
    if (is_floating_point(d))
      v.push_back(sample({vals({1, kNaN, 1, kNaN, -0.0, 0.0}, {6})}, {}, "NaN distinct"));
    return v;
  };
  for (bool consecutive : {false, true}) {
    for (int which : {0, 1, 2}) {
      static const char* names[] = {"values", "inverse", "counts"};
      std::string name =
          std::string(consecutive ? "unique_consecutive." : "unique.") + names[which];
      OpRow r = row(
          name, {OpId::Unique}, kRealMask, samples,
          [consecutive, which](const std::vector<Tensor>& in, const Sample& s) {
            std::optional<int64_t> dim;
            if (!s.ints.empty()) dim = s.ints[0];
            auto t = consecutive ? unique_consecutive(in[0], true, true, dim)
                                 : unique(in[0], true, true, true, dim);
            return which == 0 ? std::get<0>(t) : which == 1 ? std::get<1>(t) : std::get<2>(t);
          },
          [consecutive, which](const std::vector<Tensor>& in, const Sample& s) {
            const Tensor& x = in[0];
            Shape xs = shape_of(x);
            int64_t d = s.ints.empty() ? -1 : (s.ints[0] < 0 ? s.ints[0] + x.dim() : s.ints[0]);
            // move dim d to the front, row-major (n, m)
            const Vals xv = values(x);
            int64_t n = d < 0 ? x.numel() : xs[d],
                    m = d < 0 ? 1 : x.numel() / std::max<int64_t>(n, 1);
            Shape moved = xs;
            if (d >= 0) {
              moved.erase(moved.begin() + d);
              moved.insert(moved.begin(), xs[d]);
            }
            Vals mv(xv.size());
            for (int64_t o = 0; o < static_cast<int64_t>(xv.size()); ++o) {
              if (d < 0) {
                mv[o] = xv[o];
                continue;
              }
              Shape mi = unravel(o, moved), xi(xs.size());
              for (int64_t a = 0, b = 1; a < static_cast<int64_t>(xs.size()); ++a)
                xi[a] = a == d ? mi[0] : mi[b++];
              mv[o] = xv[ravel(xi, xs)];
            }
            RefUnique u = ref_unique(mv, n, m, consecutive);
            if (which == 1) {
              Vals iv(u.inverse.begin(), u.inverse.end());
              return from_values(iv, d < 0 ? xs : Shape{n}, kFloat64);
            }
            if (which == 2) {
              Vals cv(u.counts.begin(), u.counts.end());
              return from_values(cv, {u.k}, kFloat64);
            }
            if (d < 0) return from_values(u.values, {u.k}, kFloat64);
            Shape vs = moved;
            vs[0] = u.k;
            // back to x's dim order
            Shape os = xs;
            os[d] = u.k;
            Vals ov(u.values.size());
            for (int64_t o = 0; o < static_cast<int64_t>(ov.size()); ++o) {
              Shape oi = unravel(o, os), mi;
              mi.push_back(oi[d]);
              for (int64_t a = 0; a < static_cast<int64_t>(os.size()); ++a)
                if (a != d) mi.push_back(oi[a]);
              ov[o] = u.values[ravel(mi, vs)];
            }
            return from_values(ov, os, kFloat64);
          },
          which == 0 ? std::function<DType(DType)>(same_dtype)
                     : std::function<DType(DType)>([](DType) { return kInt64; }));
      if (which == 0 && !consecutive)
        r.errors = {
            err("complex", [] { return unique(ones({2}, kComplex64)); }),
            err("dimension out of range", [] { return unique(ones({2}), true, false, false, 1); })};
      rows.push_back(r);
    }
  }
  return rows;
}

// ---- searchsorted / bucketize / histc / bincount ----
// count of s in line with !(s >= v) (left) or !(s > v) (right): the bound of a sorted line.
inline int64_t ref_bound(const Vals& seq, double v, bool right) {
  int64_t c = 0;
  for (const C& s : seq) c += right ? !(s.real() > v) : !(s.real() >= v);
  return c;
}

inline std::vector<OpRow> search_rows() {
  std::vector<OpRow> rows;
  const uint32_t real_nb = kRealMaskNoBool;
  // inputs: seq (sorted, values in [0, 2)), values; flag = right
  auto sorted_master = [](Shape shape, uint64_t seed) {
    Tensor t = rnd(shape, seed, 0, 2);
    Vals v = values(t);
    const int64_t m = shape.back();
    for (int64_t l = 0; l < static_cast<int64_t>(v.size()) / m; ++l)
      std::sort(v.begin() + l * m, v.begin() + (l + 1) * m,
                [](const C& a, const C& b) { return a.real() < b.real(); });
    return from_values(v, shape, kFloat64);
  };
  auto samples = [sorted_master](DType d) {
    std::vector<Sample> v;
    for (bool right : {false, true}) {
      std::string r = right ? " right" : " left";
      v.push_back(
          sample({sorted_master({9}, 1), rnd({4, 5}, 2, -0.5, 2.5)}, {}, "1-D seq" + r, right));
      v.push_back(sample({sorted_master({9}, 3), ties({7}, 4)}, {}, "ties" + r, right));
      v.push_back(
          sample({sorted_master({3, 6}, 5), rnd({3, 4}, 6, -0.5, 2.5)}, {}, "N-D seq" + r, right));
      v.push_back(sample({sorted_master({5}, 7), rnd({}, 8, 0, 2)}, {}, "0-dim value" + r, right));
      v.push_back(sample({sorted_master({6}, 9), rnd({0}, 10)}, {}, "no values" + r, right));
      v.push_back(sample({sorted_master({1000}, 11), rnd({50, 100}, 12, -0.5, 2.5)}, {},
                         "large" + r, right));
      if (is_floating_point(d))
        v.push_back(sample({sorted_master({4}, 13), vals({kNaN, kInf, -kInf, 0.5}, {4})}, {},
                           "special" + r, right));
    }
    return v;
  };
  auto ref = [](const std::vector<Tensor>& in, const Sample& s) {
    const Tensor& seq = in[0];
    const Tensor& val = in[1];
    const Vals sv = values(seq), vv = values(val);
    const int64_t m = seq.size(-1);
    const int64_t nv = val.dim() == 0 ? 1 : val.size(-1);
    Vals r;
    for (int64_t i = 0; i < static_cast<int64_t>(vv.size()); ++i) {
      const int64_t line = seq.dim() == 1 ? 0 : i / nv;
      Vals l(sv.begin() + line * m, sv.begin() + (line + 1) * m);
      r.push_back(static_cast<double>(ref_bound(l, vv[i].real(), s.flag)));
    }
    return from_values(r, shape_of(val), kFloat64);
  };
  {
    OpRow r = row(
        "searchsorted", {OpId::SearchSorted}, real_nb, samples,
        [](const std::vector<Tensor>& in, const Sample& s) {
          return searchsorted(in[0], in[1], false, s.flag);
        },
        ref, [](DType) { return kInt64; });
    r.errors = {
        err("side", [] { return searchsorted(ones({3}), ones({2}), false, false, "middle"); }),
        err("opposites", [] { return searchsorted(ones({3}), ones({2}), false, true, "left"); }),
        err("boundaries tensor",
            [] {
              return searchsorted(ones({2, 3}), ones({3, 3}));
            }),
        err("same size", [] {
          return searchsorted(ones({3}), ones({2}), false, false, std::nullopt,
                              from_vector<int64_t>({0, 1}));
        })};
    rows.push_back(r);
  }
  rows.push_back(row(
      "searchsorted.side_int32", {OpId::SearchSorted}, real_nb, samples,
      [](const std::vector<Tensor>& in, const Sample& s) {
        return searchsorted(in[0], in[1], true, false, s.flag ? "right" : "left");
      },
      ref, [](DType) { return kInt32; }));
  // sorter: the sequence is given unsorted with its argsort (computed here by hand).
  rows.push_back(row(
      "searchsorted.sorter", {OpId::SearchSorted}, real_nb,
      [](DType) {
        std::vector<Sample> v;
        for (bool right : {false, true})
          v.push_back(sample({rnd({2, 7}, 21, 0, 2), rnd({2, 5}, 22, -0.5, 2.5)}, {},
                             right ? "right" : "left", right));
        return v;
      },
      [](const std::vector<Tensor>& in, const Sample& s) {
        const Vals sv = values(in[0]);
        std::vector<int64_t> sorter;
        for (int64_t l = 0; l < 2; ++l) {
          std::vector<int64_t> o(7);
          std::iota(o.begin(), o.end(), 0);
          std::stable_sort(o.begin(), o.end(), [&](int64_t a, int64_t b) {
            return sv[l * 7 + a].real() < sv[l * 7 + b].real();
          });
          sorter.insert(sorter.end(), o.begin(), o.end());
        }
        return searchsorted(in[0], in[1], false, s.flag, std::nullopt,
                            from_vector(sorter, {2, 7}, TensorOptions(kInt64)).to(in[0].device()));
      },
      ref, [](DType) { return kInt64; }));
  rows.push_back(row(
      "bucketize", {OpId::SearchSorted}, real_nb,
      [samples](DType d) {
        std::vector<Sample> v;
        for (auto& s : samples(d))
          if (s.inputs[0].dim() == 1) v.push_back(s);  // boundaries are 1-D
        return v;
      },
      [](const std::vector<Tensor>& in, const Sample& s) {
        return bucketize(in[1], in[0], false, s.flag);
      },
      ref, [](DType) { return kInt64; }));
  {
    // scalars = {min, max}; ints = {bins}
    OpRow r = row(
        "histc", {OpId::Histc}, kFloatMask,
        [](DType d) {
          std::vector<Sample> v;
          // Values on a 2^-10 grid: the bin arithmetic is exact in every float dtype.
          auto grid = [](Shape shape, uint64_t seed) {
            Vals v = values(rnd(shape, seed));
            for (auto& x : v) x = std::round(x.real() * 1024) / 1024;
            return from_values(v, shape, kFloat64);
          };
          Sample a = sample({grid({50}, 1)}, {8}, "range [-1, 1]");
          a.scalars = {-1.0, 1.0};
          v.push_back(a);
          Sample b = sample({grid({6, 9}, 2)}, {10}, "data range");
          b.scalars = {0.0, 0.0};
          v.push_back(b);
          Sample c = sample({rnd({0}, 3)}, {4}, "empty");
          c.scalars = {0.0, 0.0};
          v.push_back(c);
          Sample e = sample({grid({20000}, 4)}, {64}, "large");
          e.scalars = {-2.0, 2.0};
          v.push_back(e);
          Sample f = sample({vals({kNaN, kInf, 0.25, 1.0, -1.0, 3.0}, {6})}, {4}, "special");
          f.scalars = {-1.0, 1.0};
          if (is_floating_point(d)) v.push_back(f);
          return v;
        },
        [](const std::vector<Tensor>& in, const Sample& s) {
          return histc(in[0], s.ints[0], s.scalars[0], s.scalars[1]);
        },
        [](const std::vector<Tensor>& in, const Sample& s) {
          const Vals v = values(in[0]);
          double lo = s.scalars[0].to<double>(), hi = s.scalars[1].to<double>();
          const int64_t bins = s.ints[0];
          if (lo == hi && !v.empty()) {
            lo = kInf, hi = -kInf;
            for (const C& x : v) lo = std::min(lo, x.real()), hi = std::max(hi, x.real());
          }
          if (lo == hi) lo -= 1, hi += 1;
          Vals h(bins, C(0));
          for (const C& x : v) {
            const double a = x.real();
            if (!(a >= lo && a <= hi)) continue;
            int64_t b = static_cast<int64_t>(std::floor((a - lo) * bins / (hi - lo)));
            h[std::min(b, bins - 1)] += 1.0;
          }
          return from_values(h, {bins}, kFloat64);
        },
        same_dtype);
    r.errors = {err("bins must be > 0", [] { return histc(ones({3}), 0); }),
                err("larger than min", [] { return histc(ones({3}), 3, 2, 1); }),
                err("floating point", [] { return histc(arange(3)); }),
                err("not finite", [] { return histc(full({2}, kNaN)); })};
    rows.push_back(r);
  }
  auto bincount_ref = [](const std::vector<Tensor>& in, const Sample& s) {
    const Vals x = values(in[0]);
    int64_t len = s.ints.empty() ? 0 : s.ints[0];
    for (const C& v : x) len = std::max<int64_t>(len, static_cast<int64_t>(v.real()) + 1);
    Vals r(len, C(0));
    const Vals w = in.size() > 1 ? values(in[1]) : Vals();
    for (size_t i = 0; i < x.size(); ++i)
      r[static_cast<int64_t>(x[i].real())] += w.empty() ? C(1) : w[i];
    return from_values(r, {len}, kFloat64);
  };
  {
    OpRow r = row(
        "bincount", {OpId::BinCount}, kIntMask,
        [](DType) {
          return std::vector<Sample>{sample({rnd({30}, 1, 0, 2)}, {}, "[30]"),
                                     sample({rnd({30}, 2, 0, 0.5)}, {50}, "minlength"),
                                     sample({rnd({0}, 3)}, {5}, "empty")};
        },
        [](const std::vector<Tensor>& in, const Sample& s) {
          return bincount(in[0], Tensor(), s.ints.empty() ? 0 : s.ints[0]);
        },
        bincount_ref, [](DType) { return kInt64; });
    r.errors = {err("non-negative",
                    [] {
                      return bincount(from_vector<int64_t>({1, -1}));
                    }),
                err("1-d",
                    [] {
                      return bincount(ones({2, 2}, kInt64));
                    }),
                err("same length", [] { return bincount(arange(3), ones({2})); })};
    rows.push_back(r);
  }
  rows.push_back(row(
      "bincount.weights", {OpId::BinCount}, kFloatMask,
      [](DType) {
        Sample a =
            sample({from_values({3, 0, 3, 1, 7, 3}, {6}, kInt64), rnd({6}, 1)}, {}, "weights");
        a.keep_dtype = {true, false};
        Sample b = sample({from_values({}, {0}, kInt64), rnd({0}, 2)}, {2}, "empty");
        b.keep_dtype = {true, false};
        return std::vector<Sample>{a, b};
      },
      [](const std::vector<Tensor>& in, const Sample& s) {
        return bincount(in[0], in[1], s.ints.empty() ? 0 : s.ints[0]);
      },
      bincount_ref, [](DType d) { return d == kFloat32 ? kFloat32 : kFloat64; }));
  return rows;
}

}  // namespace kiln::testing::shape_rows
