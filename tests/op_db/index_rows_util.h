// Independent references for the index op rows: row-major coordinate helpers and plain loops
// over float64/complex values (nothing here calls a kiln index op).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "op_db/op_db.h"

namespace kiln::testing::index_ref {

using Shape = std::vector<int64_t>;
using Vals = std::vector<C>;

inline int64_t numel_of(const Shape& s) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return n;
}
inline Shape shape_of(const Tensor& t) { return t.sizes().vec(); }
// Row-major coordinates of linear position `lin` in `shape`.
inline Shape unravel(int64_t lin, const Shape& shape) {
  Shape c(shape.size(), 0);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    c[d] = lin % shape[d];
    lin /= shape[d];
  }
  return c;
}
inline int64_t ravel(const Shape& c, const Shape& shape) {
  int64_t lin = 0;
  for (size_t d = 0; d < shape.size(); ++d) lin = lin * shape[d] + c[d];
  return lin;
}
// Integer values of any tensor (row-major).
inline std::vector<int64_t> ints_of(const Tensor& t) {
  std::vector<int64_t> r;
  for (const C& v : values(t)) r.push_back(static_cast<int64_t>(v.real()));
  return r;
}
inline int64_t wrap(int64_t i, int64_t n) { return i < 0 ? i + n : i; }
inline std::string str(const Shape& s) {
  std::ostringstream o;
  o << IntArrayRef(s);
  return o.str();
}

// A deterministic int64 index tensor with values in [lo, hi) (repeats and negatives included).
inline Tensor rand_index(const Shape& shape, int64_t lo, int64_t hi, uint64_t seed,
                         DType dt = DType::Int64) {
  std::vector<std::complex<double>> v(static_cast<size_t>(numel_of(shape)));
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (auto& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = static_cast<double>(lo + static_cast<int64_t>((s >> 33) % static_cast<uint64_t>(hi - lo)));
  }
  return from_values(v, shape, dt);
}
inline Tensor index_of(const std::vector<int64_t>& v, const Shape& shape, DType dt = DType::Int64) {
  std::vector<std::complex<double>> c(v.begin(), v.end());
  return from_values(c, shape, dt);
}
// A deterministic bool mask with about `p` of its elements true.
inline Tensor rand_mask(const Shape& shape, double p, uint64_t seed) {
  std::vector<std::complex<double>> v(static_cast<size_t>(numel_of(shape)));
  uint64_t s = seed * 2862933555777941757ull + 3037000493ull;
  for (auto& x : v) {
    s = s * 2862933555777941757ull + 3037000493ull;
    x = ((s >> 11) % 1000) < static_cast<uint64_t>(p * 1000) ? 1.0 : 0.0;
  }
  return from_values(v, shape, DType::Bool);
}

// Shape treating 0-dim as [1] (index ops accept a 0-dim tensor where a 1-D one is expected).
inline Shape as_1d(const Shape& s) { return s.empty() ? Shape{1} : s; }

// Reduction kinds of the scatter family's reference.
enum class Red { None, Sum, Prod, Mean, Max, Min };

// out = x; for every position p of index (row-major): out[p with dim -> idx[p]] (op)= src[p].
// src: values over src_shape (read at the index's coordinates); include_self as scatter_reduce.
// Integer mean rounds down (is_int).
inline Vals ref_scatter(const Vals& x, const Shape& xshape, int64_t dim, const Tensor& index,
                        const Vals& src, const Shape& src_shape, Red r, bool include_self,
                        bool is_int) {
  const Shape xs = as_1d(xshape), is = as_1d(shape_of(index)), ss = as_1d(src_shape);
  const auto idx = ints_of(index);
  Vals out = x;
  std::vector<int64_t> count(out.size(), include_self ? 1 : 0);
  std::vector<bool> touched(out.size(), false);
  for (int64_t p = 0; p < static_cast<int64_t>(idx.size()); ++p) {
    Shape c = unravel(p, is);
    C v = src.size() == 1 ? src[0] : src[ravel(c, ss)];
    c[dim] = wrap(idx[p], xs[dim]);
    const int64_t o = ravel(c, xs);
    if (!include_self && !touched[o]) {
      touched[o] = true;
      out[o] = v;
      ++count[o];
      continue;
    }
    touched[o] = true;
    ++count[o];
    switch (r) {
      case Red::None:
        out[o] = v;
        break;
      case Red::Sum:
      case Red::Mean:
        out[o] += v;
        break;
      case Red::Prod:
        out[o] *= v;
        break;
      case Red::Max:
        out[o] = (std::isnan(out[o].real()) || std::isnan(v.real()))
                     ? C(std::nan(""))
                     : C(std::max(out[o].real(), v.real()));
        break;
      case Red::Min:
        out[o] = (std::isnan(out[o].real()) || std::isnan(v.real()))
                     ? C(std::nan(""))
                     : C(std::min(out[o].real(), v.real()));
        break;
    }
  }
  if (r == Red::Mean)
    for (size_t o = 0; o < out.size(); ++o)
      if (count[o] > 0) {
        out[o] /= static_cast<double>(count[o]);
        if (is_int) out[o] = std::floor(out[o].real());
      }
  return out;
}

// aten::index reference: indices[k] (undefined = full slice) are int tensors indexing dim k.
inline Tensor ref_index(const Tensor& x, const std::vector<std::optional<Tensor>>& indices,
                        DType out_dtype) {
  const Shape xs = shape_of(x);
  const Vals xv = values(x);
  std::vector<Shape> shapes;
  std::vector<int64_t> dims;
  for (size_t k = 0; k < indices.size(); ++k)
    if (indices[k]) {
      shapes.push_back(shape_of(*indices[k]));
      dims.push_back(static_cast<int64_t>(k));
    }
  const Shape b = ref_broadcast(shapes);
  const int64_t nb = static_cast<int64_t>(b.size());
  bool adjacent = dims.back() - dims.front() + 1 == static_cast<int64_t>(dims.size());
  // Result dims: each is either an x dim (kept) or a broadcast dim.
  Shape rs;
  std::vector<int64_t> kind;  // >= 0: x dim; -1 - j: broadcast dim j
  auto push_b = [&] {
    for (int64_t j = 0; j < nb; ++j) rs.push_back(b[j]), kind.push_back(-1 - j);
  };
  if (!adjacent) push_b();
  for (int64_t d = 0; d < static_cast<int64_t>(xs.size()); ++d) {
    const bool indexed = d < static_cast<int64_t>(indices.size()) && indices[d].has_value();
    if (!indexed) {
      rs.push_back(xs[d]);
      kind.push_back(d);
    } else if (adjacent && d == dims.front()) {
      push_b();
    }
  }
  std::vector<std::vector<int64_t>> iv;
  for (int64_t d : dims) iv.push_back(ints_of(*indices[d]));
  Vals out(static_cast<size_t>(numel_of(rs)));
  for (int64_t p = 0; p < static_cast<int64_t>(out.size()); ++p) {
    Shape rc = unravel(p, rs), bc(nb), xc(xs.size(), 0);
    for (size_t j = 0; j < rc.size(); ++j)
      if (kind[j] >= 0)
        xc[kind[j]] = rc[j];
      else
        bc[-1 - kind[j]] = rc[j];
    for (size_t k = 0; k < dims.size(); ++k) {
      // broadcast: index k's coordinate from the trailing-aligned b coordinate
      const Shape& ks = shapes[k];
      Shape kc(ks.size());
      for (size_t j = 0; j < ks.size(); ++j) kc[j] = ks[j] == 1 ? 0 : bc[nb - ks.size() + j];
      xc[dims[k]] = wrap(iv[k][ravel(kc, ks)], xs[dims[k]]);
    }
    out[p] = xv[ravel(xc, xs)];
  }
  return from_values(out, rs, out_dtype);
}

// ---- references of the rows (all return float64/complex128 tensors, int64 for nonzero) ----
inline DType out_master(const Tensor& t) {
  return is_complex(t.dtype()) ? DType::Complex128 : DType::Float64;
}

inline Tensor ref_index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  const Shape xs = as_1d(shape_of(x));
  const int64_t d = dim < 0 ? dim + static_cast<int64_t>(xs.size()) : dim;
  const auto idx = ints_of(index);
  Shape os = xs;
  os[d] = static_cast<int64_t>(idx.size());
  const Vals xv = values(x);
  Vals out(static_cast<size_t>(numel_of(os)));
  for (int64_t p = 0; p < static_cast<int64_t>(out.size()); ++p) {
    Shape c = unravel(p, os);
    c[d] = wrap(idx[c[d]], xs[d]);
    out[p] = xv[ravel(c, xs)];
  }
  return from_values(out, x.dim() == 0 ? Shape{} : os, out_master(x));
}

inline Tensor ref_gather(const Tensor& x, int64_t dim, const Tensor& index) {
  const Shape xs = as_1d(shape_of(x)), is = as_1d(shape_of(index));
  const int64_t d = dim < 0 ? dim + static_cast<int64_t>(xs.size()) : dim;
  const auto idx = ints_of(index);
  const Vals xv = values(x);
  Vals out(idx.size());
  for (int64_t p = 0; p < static_cast<int64_t>(idx.size()); ++p) {
    Shape c = unravel(p, is);
    c[d] = wrap(idx[p], xs[d]);
    out[p] = xv[ravel(c, xs)];
  }
  return from_values(out, shape_of(index), out_master(x));
}

inline int64_t wrap_dim_ref(int64_t dim, const Tensor& x) {
  const int64_t n = std::max<int64_t>(x.dim(), 1);
  return dim < 0 ? dim + n : dim;
}

// out = x; for each position p of the update shape, out[p with dim -> idx[p[dim]]] (op)= v(p).
inline Tensor ref_index_1d(const std::vector<Tensor>& in, const Sample& s, int mode) {
  const Tensor& x = in[0];
  const Shape xs = as_1d(shape_of(x));
  const int64_t d = wrap_dim_ref(s.ints[0], x);
  const auto idx = ints_of(in[1]);
  Vals out = values(x);
  Shape us = xs;
  us[d] = static_cast<int64_t>(idx.size());
  const Vals src = mode == 2 ? Vals{} : values(in[2]);
  const double alpha = s.scalars[0].to<double>();
  for (int64_t p = 0; p < numel_of(us); ++p) {
    Shape c = unravel(p, us);
    const int64_t j = c[d];
    c[d] = wrap(idx[j], xs[d]);
    C& o = out[ravel(c, xs)];
    if (mode == 0)
      o += alpha * src[p];  // index_add
    else if (mode == 1)
      o = src[p];  // index_copy
    else
      o = alpha;  // index_fill with the sample's scalar
  }
  return from_values(out, shape_of(x), out_master(x));
}

inline std::vector<std::optional<Tensor>> index_list(const std::vector<Tensor>& in, const Sample& s,
                                                     size_t first) {
  std::vector<std::optional<Tensor>> opt(static_cast<size_t>(in[0].dim()));
  for (size_t k = 0; k < s.ints.size(); ++k) opt[s.ints[k]] = in[first + k];
  while (!opt.empty() && !opt.back()) opt.pop_back();
  return opt;
}

inline Tensor ref_index_put(const std::vector<Tensor>& in, const Sample& s, bool accumulate) {
  // Position map: index a tensor of linear positions with the reference, then write in
  // row-major order of the result (the last write wins; accumulate adds all).
  const Tensor& x = in[0];
  std::vector<std::complex<double>> pos(static_cast<size_t>(x.numel()));
  for (size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<double>(i);
  Tensor pt = from_values(pos, x.sizes(), DType::Float64);
  std::vector<Tensor> idx(in.begin() + 1, in.end() - 1);
  Tensor where = ref_index(pt, index_list(in, s, 1), DType::Float64);
  const auto w = ints_of(where);
  const Shape rs = shape_of(where), vs = shape_of(in.back());
  const Vals v = values(in.back());
  Vals out = values(x);
  for (int64_t p = 0; p < static_cast<int64_t>(w.size()); ++p) {
    Shape rc = unravel(p, rs), vc(vs.size());
    for (size_t j = 0; j < vs.size(); ++j) vc[j] = vs[j] == 1 ? 0 : rc[rs.size() - vs.size() + j];
    const C val = v[ravel(vc, vs)];
    if (accumulate)
      out[w[p]] += val;
    else
      out[w[p]] = val;
  }
  return from_values(out, shape_of(x), out_master(x));
}

inline Tensor ref_masked(const std::vector<Tensor>& in, const Sample& s, int mode) {
  const Shape xs = shape_of(in[0]), ms = shape_of(in[1]);
  const Shape bs = ref_broadcast({xs, ms});
  const Vals xv = values(in[0]);
  const auto mv = ints_of(in[1]);
  Vals out, sel;
  int64_t k = 0;
  const Vals src = mode == 2 ? values(in[2]) : Vals{};
  for (int64_t p = 0; p < numel_of(bs); ++p) {
    Shape c = unravel(p, bs), xc(xs.size()), mc(ms.size());
    for (size_t j = 0; j < xs.size(); ++j) xc[j] = xs[j] == 1 ? 0 : c[bs.size() - xs.size() + j];
    for (size_t j = 0; j < ms.size(); ++j) mc[j] = ms[j] == 1 ? 0 : c[bs.size() - ms.size() + j];
    const C v = xv[ravel(xc, xs)];
    const bool m = mv[ravel(mc, ms)] != 0;
    if (mode == 0) out.push_back(m ? C(s.scalars[0].to<double>()) : v);
    if (mode == 1 && m) sel.push_back(v);
    if (mode == 2) out.push_back(m ? src[k++] : v);
  }
  if (mode == 1) return from_values(sel, {static_cast<int64_t>(sel.size())}, out_master(in[0]));
  return from_values(out, bs, out_master(in[0]));
}

inline Tensor ref_nonzero(const Tensor& x) {
  const Shape xs = shape_of(x);
  const Vals v = values(x);
  std::vector<std::complex<double>> out;
  int64_t n = 0;
  for (int64_t p = 0; p < static_cast<int64_t>(v.size()); ++p) {
    if (v[p] == C(0)) continue;
    ++n;
    for (int64_t c : unravel(p, xs)) out.push_back(static_cast<double>(c));
  }
  return from_values(out, {n, static_cast<int64_t>(xs.size())}, DType::Int64);
}

}  // namespace kiln::testing::index_ref
