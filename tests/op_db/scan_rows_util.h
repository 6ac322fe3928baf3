// Helpers of the shape and scan op-table rows (shape_rows_test.cpp, scan_rows_test.cpp):
// row/sample builders and plain-loop references over row-major indices, independent of kiln.
#pragma once

#include <cmath>
#include <limits>
#include <random>
#include <sstream>

#include "op_db/op_db.h"

namespace kiln::testing::shape_rows {

using Vals = std::vector<C>;
using Shape = std::vector<int64_t>;

inline const double kNaN = std::numeric_limits<double>::quiet_NaN();
inline const double kInf = std::numeric_limits<double>::infinity();

inline int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t x : s) n *= x;
  return n;
}
inline Shape shape_of(const Tensor& t) { return t.sizes().vec(); }
// Row-major multi-index of flat index i.
inline Shape unravel(int64_t i, const Shape& s) {
  Shape idx(s.size());
  for (int64_t d = static_cast<int64_t>(s.size()) - 1; d >= 0; --d) {
    idx[d] = s[d] == 0 ? 0 : i % s[d];
    i = s[d] == 0 ? 0 : i / s[d];
  }
  return idx;
}
inline int64_t ravel(const Shape& idx, const Shape& s) {
  int64_t f = 0;
  for (size_t d = 0; d < s.size(); ++d) f = f * s[d] + idx[d];
  return f;
}
inline DType master_of(DType d) { return is_complex(d) ? DType::Complex128 : DType::Float64; }

// out[o] = in[src(o)] (row-major flat index), or `fill` where src returns -1.
inline Tensor ref_index_map(const Tensor& in, const Shape& out_shape,
                            const std::function<int64_t(const Shape&)>& src, C fill = 0) {
  const Vals v = values(in);
  Vals r(numel_of(out_shape));
  for (int64_t o = 0; o < static_cast<int64_t>(r.size()); ++o) {
    const int64_t i = src(unravel(o, out_shape));
    r[o] = i < 0 ? fill : v[i];
  }
  return from_values(r, out_shape, master_of(in.dtype()));
}

// Applies f to every line of `in` along dim (0-dim: one line of one element); f returns out_len
// values, placed along dim of the result (out_len == 1 and !keep drops dim).
inline Tensor ref_lines(const Tensor& in, int64_t dim, int64_t out_len, DType out_dt,
                        const std::function<Vals(const Vals&)>& f, bool keep = true) {
  const Vals v = values(in);
  Shape s = shape_of(in);
  if (s.empty()) {
    Vals r = f(v);
    return from_values(r, {}, out_dt);
  }
  const int64_t nd = static_cast<int64_t>(s.size());
  if (dim < 0) dim += nd;
  Shape os = s;
  os[dim] = out_len;
  Shape other = s;
  other[dim] = 1;
  Vals r(numel_of(os));
  for (int64_t l = 0; l < numel_of(other); ++l) {
    Shape idx = unravel(l, other);
    Vals line;
    for (int64_t i = 0; i < s[dim]; ++i) {
      idx[dim] = i;
      line.push_back(v[ravel(idx, s)]);
    }
    Vals res = f(line);
    for (int64_t i = 0; i < out_len; ++i) {
      idx[dim] = i;
      r[ravel(idx, os)] = res[i];
    }
  }
  if (!keep && out_len == 1) os.erase(os.begin() + dim);
  return from_values(r, os, out_dt);
}

inline Sample sample(std::vector<Tensor> in, std::vector<int64_t> ints, std::string desc,
                     bool flag = false) {
  Sample s;
  s.inputs = std::move(in);
  s.ints = std::move(ints);
  s.desc = std::move(desc);
  s.flag = flag;
  return s;
}

inline OpRow row(std::string name, std::vector<OpId> covers, uint32_t dtypes,
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

// Random float64 master of shape with values in [lo, hi).
inline Tensor rnd(const Shape& shape, uint64_t seed, double lo = -2, double hi = 2) {
  return rand_master(shape, false, seed, lo, hi);
}
// Values drawn from a few levels, so that every dtype (after conversion) has ties.
inline Tensor ties(const Shape& shape, uint64_t seed) {
  static const double lv[] = {-1.5, -0.5, 0.0, 0.5, 1.0, 2.0};
  std::mt19937_64 g(seed);
  Vals v(numel_of(shape));
  for (auto& x : v) x = lv[g() % 6];
  return from_values(v, shape, DType::Float64);
}
inline Tensor vals(const std::vector<double>& v, const Shape& shape) {
  Vals c(v.begin(), v.end());
  return from_values(c, shape, DType::Float64);
}
inline std::string str(const Shape& s) {
  std::ostringstream o;
  o << IntArrayRef(s);
  return o.str();
}

// NaN-largest order on real parts; NaNs are equal to each other.
inline bool nan_less(double a, double b) {
  if (std::isnan(a)) return false;
  return std::isnan(b) || a < b;
}

}  // namespace kiln::testing::shape_rows
