// Independent double-precision references for the nn op-table rows (nn_rows_test.cpp): softmax,
// norms, nll, direct-loop convolutions (forward, transposed, weight gradient), pooling, im2col,
// and a central-difference vjp used as the reference of the backward ops.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <sstream>

#include "op_db/op_db.h"

namespace kiln::testing::nn_rows {

using Shape = std::vector<int64_t>;
using Vec = std::vector<double>;

struct Arr {
  Vec v;
  Shape shape;
};

inline Arr arr(const Tensor& t) {
  Arr a;
  for (const C& x : values(t)) a.v.push_back(x.real());
  a.shape = t.sizes().vec();
  return a;
}
inline Tensor tens(const Vec& v, const Shape& shape, DType dt = DType::Float64) {
  std::vector<C> c(v.begin(), v.end());
  return from_values(c, shape, dt);
}
inline int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t x : s) n *= x;
  return n;
}
inline std::vector<int64_t> ints(const Tensor& t) {
  std::vector<int64_t> out;
  for (const C& x : values(t)) out.push_back(static_cast<int64_t>(x.real()));
  return out;
}
// Deterministic pseudo-random integers in [lo, hi).
inline std::vector<int64_t> rand_ints(int64_t n, int64_t lo, int64_t hi, uint64_t seed) {
  std::vector<int64_t> v(n);
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (auto& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = lo + static_cast<int64_t>((s >> 33) % static_cast<uint64_t>(hi - lo));
  }
  return v;
}
inline Tensor index_tensor(const std::vector<int64_t>& v, const Shape& shape,
                           DType dt = DType::Int64) {
  return from_vector(v, shape).to(dt);
}
inline std::string shape_str(const Shape& s) {
  std::ostringstream o;
  o << IntArrayRef(s);
  return o.str();
}

// ---- softmax family along dim of a row-major array ----
// mode 0 softmax, 1 log_softmax.
inline Arr ref_softmax(const Arr& x, int64_t dim, int mode) {
  Arr y = x;
  if (x.shape.empty()) {
    y.v[0] = mode == 0 ? 1.0 : 0.0;
    if (std::isnan(x.v[0]) || std::isinf(x.v[0])) y.v[0] = std::nan("");
    return y;
  }
  const int64_t nd = static_cast<int64_t>(x.shape.size());
  if (dim < 0) dim += nd;
  int64_t outer = 1, n = x.shape[dim], inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= x.shape[d];
  for (int64_t d = dim + 1; d < nd; ++d) inner *= x.shape[d];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < inner; ++k) {
      auto at = [&](int64_t i) { return (o * n + i) * inner + k; };
      double m = -INFINITY;
      bool nan = false;
      for (int64_t i = 0; i < n; ++i) {
        nan |= std::isnan(x.v[at(i)]);
        m = std::max(m, x.v[at(i)]);
      }
      double s = 0;
      for (int64_t i = 0; i < n; ++i) s += std::exp(x.v[at(i)] - m);
      for (int64_t i = 0; i < n; ++i) {
        const double e = x.v[at(i)] - m;
        y.v[at(i)] = nan || std::isinf(m) ? std::nan("")
                     : mode == 0          ? std::exp(e) / s
                                          : e - std::log(s);
      }
    }
  return y;
}

// ---- layer norm (center) / rms norm over the trailing m elements ----
inline Vec ref_norm(const Vec& x, int64_t m, const Vec* w, const Vec* b, double eps, bool center) {
  Vec y(x.size());
  const int64_t rows = m == 0 ? 0 : static_cast<int64_t>(x.size()) / m;
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, q = 0;
    if (center) {
      for (int64_t i = 0; i < m; ++i) mean += x[r * m + i];
      mean /= m;
    }
    for (int64_t i = 0; i < m; ++i) q += (x[r * m + i] - mean) * (x[r * m + i] - mean);
    const double rs = 1 / std::sqrt(q / m + eps);
    for (int64_t i = 0; i < m; ++i) {
      double v = (x[r * m + i] - mean) * rs;
      if (w) v *= (*w)[i];
      if (b) v += (*b)[i];
      y[r * m + i] = v;
    }
  }
  return y;
}

// ---- central-difference vjp: g . d f(x) / d x, f in double (5-point stencil, O(h^4)) ----
inline Vec num_vjp(const std::function<Vec(const Vec&)>& f, Vec x, const Vec& g, double h = 1e-3) {
  Vec out(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double x0 = x[i];
    const double hi = h * std::max(1.0, std::abs(x0));
    double acc[4];
    const double steps[4] = {2, 1, -1, -2};
    for (int k = 0; k < 4; ++k) {
      x[i] = x0 + steps[k] * hi;
      const Vec y = f(x);
      double s = 0;
      for (size_t j = 0; j < g.size(); ++j) s += g[j] * y[j];
      acc[k] = s;
    }
    x[i] = x0;
    out[i] = (-acc[0] + 8 * acc[1] - 8 * acc[2] + acc[3]) / (12 * hi);
  }
  return out;
}

// ---- convolution (up to 3 spatial dims), direct loops ----
struct ConvArgs {
  Shape stride, padding, dilation;
  int64_t groups = 1;
};
inline int64_t conv_len(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}
// x [N, C, *sp], w [O, C/g, *k] -> [N, O, *out].
inline Arr ref_conv(const Arr& x, const Arr& w, const Vec* bias, const ConvArgs& a) {
  const int64_t nd = static_cast<int64_t>(x.shape.size()) - 2;
  const int64_t n = x.shape[0], c = x.shape[1], o = w.shape[0], g = a.groups;
  const int64_t cg = c / g, og = o / g;
  Shape in(x.shape.begin() + 2, x.shape.end()), k(w.shape.begin() + 2, w.shape.end()), out;
  for (int64_t i = 0; i < nd; ++i)
    out.push_back(conv_len(in[i], k[i], a.stride[i], a.padding[i], a.dilation[i]));
  Arr y;
  y.shape = {n, o};
  for (int64_t s : out) y.shape.push_back(s);
  y.v.assign(numel(y.shape), 0.0);
  const int64_t in_n = numel(in), out_n = numel(out), k_n = numel(k);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t oc = 0; oc < o; ++oc)
      for (int64_t op = 0; op < out_n; ++op) {
        double s = bias ? (*bias)[oc] : 0.0;
        Shape oi(nd);
        for (int64_t r = op, d = nd - 1; d >= 0; --d) oi[d] = r % out[d], r /= out[d];
        const int64_t grp = oc / og;
        for (int64_t ic = 0; ic < cg; ++ic)
          for (int64_t kp = 0; kp < k_n; ++kp) {
            int64_t lin = 0;
            bool inside = true;
            for (int64_t r = kp, d = nd - 1; d >= 0; --d) {
              const int64_t kk = r % k[d];
              r /= k[d];
              const int64_t pos = oi[d] * a.stride[d] - a.padding[d] + kk * a.dilation[d];
              inside &= pos >= 0 && pos < in[d];
              int64_t mul = 1;
              for (int64_t e = d + 1; e < nd; ++e) mul *= in[e];
              lin += pos * mul;
            }
            if (!inside) continue;
            s += x.v[(b * c + grp * cg + ic) * in_n + lin] * w.v[(oc * cg + ic) * k_n + kp];
          }
        y.v[(b * o + oc) * out_n + op] = s;
      }
  return y;
}

// Transposed convolution by its definition (scatter): x [N, Cin, *in], w [Cin, Cout/g, *k].
inline Arr ref_conv_transpose(const Arr& x, const Arr& w, const Vec* bias, const ConvArgs& a,
                              const Shape& output_padding) {
  const int64_t nd = static_cast<int64_t>(x.shape.size()) - 2;
  const int64_t n = x.shape[0], cin = x.shape[1], g = a.groups, cog = w.shape[1];
  const int64_t cig = cin / g, cout = cog * g;
  Shape in(x.shape.begin() + 2, x.shape.end()), k(w.shape.begin() + 2, w.shape.end()), out;
  for (int64_t i = 0; i < nd; ++i)
    out.push_back((in[i] - 1) * a.stride[i] - 2 * a.padding[i] + a.dilation[i] * (k[i] - 1) +
                  output_padding[i] + 1);
  Arr y;
  y.shape = {n, cout};
  for (int64_t s : out) y.shape.push_back(s);
  y.v.assign(numel(y.shape), 0.0);
  const int64_t in_n = numel(in), out_n = numel(out), k_n = numel(k);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ic = 0; ic < cin; ++ic)
      for (int64_t ip = 0; ip < in_n; ++ip) {
        Shape ii(nd);
        for (int64_t r = ip, d = nd - 1; d >= 0; --d) ii[d] = r % in[d], r /= in[d];
        const int64_t grp = ic / cig;
        for (int64_t oc = 0; oc < cog; ++oc)
          for (int64_t kp = 0; kp < k_n; ++kp) {
            int64_t lin = 0;
            bool inside = true;
            for (int64_t r = kp, d = nd - 1; d >= 0; --d) {
              const int64_t kk = r % k[d];
              r /= k[d];
              const int64_t pos = ii[d] * a.stride[d] - a.padding[d] + kk * a.dilation[d];
              inside &= pos >= 0 && pos < out[d];
              int64_t mul = 1;
              for (int64_t e = d + 1; e < nd; ++e) mul *= out[e];
              lin += pos * mul;
            }
            if (!inside) continue;
            y.v[(b * cout + grp * cog + oc) * out_n + lin] +=
                x.v[(b * cin + ic) * in_n + ip] * w.v[(ic * cog + oc) * k_n + kp];
          }
      }
  if (bias)
    for (int64_t b = 0; b < n; ++b)
      for (int64_t oc = 0; oc < cout; ++oc)
        for (int64_t p = 0; p < out_n; ++p) y.v[(b * cout + oc) * out_n + p] += (*bias)[oc];
  return y;
}

// ---- 2-D pooling on [N, C, H, W] ----
struct PoolArgs {
  int64_t kh, kw, sh, sw, ph, pw, dh = 1, dw = 1;
  bool ceil = false;
};
inline int64_t pool_len(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil) {
  const int64_t span = d * (k - 1) + 1;
  int64_t out = (in + 2 * p - span + (ceil ? s - 1 : 0)) / s + 1;
  if (ceil && (out - 1) * s >= in + p) --out;
  return out;
}
// Returns (values, flat indices) of max pooling; NaN wins, first maximum on ties.
inline std::pair<Arr, std::vector<int64_t>> ref_max_pool(const Arr& x, const PoolArgs& a) {
  const int64_t n = x.shape[0], c = x.shape[1], h = x.shape[2], w = x.shape[3];
  const int64_t oh = pool_len(h, a.kh, a.sh, a.ph, a.dh, a.ceil);
  const int64_t ow = pool_len(w, a.kw, a.sw, a.pw, a.dw, a.ceil);
  Arr y;
  y.shape = {n, c, oh, ow};
  std::vector<int64_t> idx;
  for (int64_t p = 0; p < n * c; ++p)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        double best = -INFINITY;
        int64_t bi = -1;
        for (int64_t u = 0; u < a.kh; ++u)
          for (int64_t v = 0; v < a.kw; ++v) {
            const int64_t r = i * a.sh - a.ph + u * a.dh, q = j * a.sw - a.pw + v * a.dw;
            if (r < 0 || r >= h || q < 0 || q >= w) continue;
            const double val = x.v[p * h * w + r * w + q];
            if (bi < 0 || (!std::isnan(best) && (val > best || std::isnan(val))))
              best = val, bi = r * w + q;
          }
        y.v.push_back(best);
        idx.push_back(bi);
      }
  return {y, idx};
}
inline Arr ref_avg_pool(const Arr& x, const PoolArgs& a, bool include_pad, int64_t divisor) {
  const int64_t n = x.shape[0], c = x.shape[1], h = x.shape[2], w = x.shape[3];
  const int64_t oh = pool_len(h, a.kh, a.sh, a.ph, 1, a.ceil);
  const int64_t ow = pool_len(w, a.kw, a.sw, a.pw, 1, a.ceil);
  Arr y;
  y.shape = {n, c, oh, ow};
  for (int64_t p = 0; p < n * c; ++p)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        // Window positions inside the padded input count for include_pad; inside the input
        // for the sum and the other divisor.
        double s = 0;
        int64_t in_pad = 0, in_img = 0;
        for (int64_t u = 0; u < a.kh; ++u)
          for (int64_t v = 0; v < a.kw; ++v) {
            const int64_t r = i * a.sh - a.ph + u, q = j * a.sw - a.pw + v;
            if (r < h + a.ph && q < w + a.pw) ++in_pad;
            if (r < 0 || r >= h || q < 0 || q >= w) continue;
            s += x.v[p * h * w + r * w + q];
            ++in_img;
          }
        y.v.push_back(s / (divisor ? divisor : include_pad ? in_pad : in_img));
      }
  return y;
}
inline int64_t ad_start(int64_t o, int64_t out, int64_t in) {
  return static_cast<int64_t>(std::floor(static_cast<double>(o * in) / out));
}
inline int64_t ad_end(int64_t o, int64_t out, int64_t in) {
  return static_cast<int64_t>(std::ceil(static_cast<double>((o + 1) * in) / out));
}
// Adaptive pooling: mode 0 average, 1 max (values; indices through idx when given).
inline Arr ref_adaptive(const Arr& x, int64_t oh, int64_t ow, int mode,
                        std::vector<int64_t>* idx = nullptr) {
  const int64_t n = x.shape[0], c = x.shape[1], h = x.shape[2], w = x.shape[3];
  Arr y;
  y.shape = {n, c, oh, ow};
  for (int64_t p = 0; p < n * c; ++p)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        double s = 0, best = -INFINITY;
        int64_t cnt = 0, bi = -1;
        for (int64_t r = ad_start(i, oh, h); r < ad_end(i, oh, h); ++r)
          for (int64_t q = ad_start(j, ow, w); q < ad_end(j, ow, w); ++q) {
            const double v = x.v[p * h * w + r * w + q];
            s += v, ++cnt;
            if (bi < 0 || (!std::isnan(best) && (v > best || std::isnan(v))))
              best = v, bi = r * w + q;
          }
        y.v.push_back(mode == 0 ? s / cnt : best);
        if (idx) idx->push_back(bi);
      }
  return y;
}

// ---- im2col: [N, C, H, W] -> [N, C*kh*kw, L] ----
struct FoldArgs {
  int64_t kh, kw, dh, dw, ph, pw, sh, sw;
};
inline Arr ref_im2col(const Arr& x, const FoldArgs& a) {
  const int64_t n = x.shape[0], c = x.shape[1], h = x.shape[2], w = x.shape[3];
  const int64_t oh = conv_len(h, a.kh, a.sh, a.ph, a.dh), ow = conv_len(w, a.kw, a.sw, a.pw, a.dw);
  Arr y;
  y.shape = {n, c * a.kh * a.kw, oh * ow};
  y.v.assign(numel(y.shape), 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t u = 0; u < a.kh; ++u)
        for (int64_t v = 0; v < a.kw; ++v)
          for (int64_t i = 0; i < oh; ++i)
            for (int64_t j = 0; j < ow; ++j) {
              const int64_t r = i * a.sh - a.ph + u * a.dh, q = j * a.sw - a.pw + v * a.dw;
              const int64_t row = (ch * a.kh + u) * a.kw + v;
              y.v[(b * y.shape[1] + row) * y.shape[2] + i * ow + j] =
                  (r < 0 || r >= h || q < 0 || q >= w) ? 0.0 : x.v[((b * c + ch) * h + r) * w + q];
            }
  return y;
}
// col2im by its definition: each column entry is added to the pixel it was read from.
inline Arr ref_col2im(const Arr& cols, int64_t h, int64_t w, const FoldArgs& a) {
  const int64_t n = cols.shape[0], c = cols.shape[1] / (a.kh * a.kw);
  const int64_t oh = conv_len(h, a.kh, a.sh, a.ph, a.dh), ow = conv_len(w, a.kw, a.sw, a.pw, a.dw);
  Arr y;
  y.shape = {n, c, h, w};
  y.v.assign(numel(y.shape), 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t u = 0; u < a.kh; ++u)
        for (int64_t v = 0; v < a.kw; ++v)
          for (int64_t i = 0; i < oh; ++i)
            for (int64_t j = 0; j < ow; ++j) {
              const int64_t r = i * a.sh - a.ph + u * a.dh, q = j * a.sw - a.pw + v * a.dw;
              if (r < 0 || r >= h || q < 0 || q >= w) continue;
              const int64_t row = (ch * a.kh + u) * a.kw + v;
              y.v[((b * c + ch) * h + r) * w + q] +=
                  cols.v[(b * cols.shape[1] + row) * cols.shape[2] + i * ow + j];
            }
  return y;
}

// ---- row builders ----
inline OpRow mk(std::string name, std::vector<OpId> covers, uint32_t dtypes,
                std::function<std::vector<Sample>(DType)> samples, OpFn op, OpFn ref,
                double tol_scale = 1.0) {
  OpRow r;
  r.name = std::move(name);
  r.covers = std::move(covers);
  r.dtypes = dtypes;
  r.samples = std::move(samples);
  r.op = std::move(op);
  r.ref = std::move(ref);
  r.tol_scale = tol_scale;
  return r;
}
template <class Fn>
OpRow::ErrorCase err(std::string contains, Fn f) {
  return {std::move(contains), [f] { (void)f(); }};
}
inline Tensor rm(const Shape& s, uint64_t seed, double lo = -2, double hi = 2) {
  return rand_master(s, false, seed, lo, hi);
}
inline Tensor vjp_ref(const std::function<Vec(const Vec&)>& f, const Tensor& x, const Tensor& g) {
  return tens(num_vjp(f, arr(x).v, arr(g).v), x.sizes().vec());
}

}  // namespace kiln::testing::nn_rows
