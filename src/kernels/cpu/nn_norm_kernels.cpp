// CPU kernels of softmax / log_softmax, layer_norm and rms_norm, forward and backward. float32
// rows (and float16/bfloat16 rows through a float buffer) use the vectorized row loops of
// nn_vec.h; float64 uses plain double loops.
#include <cmath>

#include "kernels/cpu/nn_kernels.h"
#include "kernels/cpu/nn_vec.h"

namespace kiln::cpu {
namespace {

using namespace nnvec;

// ---------------------------------------------------------------- float row loops (vectorized)

// log = false: y = exp(x - max) / sum; log = true: y = x - max - log(sum). x may equal y.
KILN_NN_INLINE void softmax_row_body(const float* x, float* y, int64_t n, bool log) {
  int64_t i = 0;
  VF vm = splat(-__builtin_inff());
  for (; i + kLanes <= n; i += kLanes) vm = vmax(vm, load(x + i));
  float m = hmax(vm);
  for (; i < n; ++i) m = x[i] > m || x[i] != x[i] ? x[i] : m;
  const VF mv = splat(m);
  VF vs = splat(0.0f);
  float s = 0;
  i = 0;
  if (log) {
    for (; i + kLanes <= n; i += kLanes) vs += vexp(load(x + i) - mv);
  } else {
    for (; i + kLanes <= n; i += kLanes) {
      VF e = vexp(load(x + i) - mv);
      store(y + i, e);
      vs += e;
    }
  }
  for (; i < n; ++i) {
    VF e = vexp(splat(x[i] - m));
    if (!log) y[i] = e[0];
    s += e[0];
  }
  s += hsum(vs);
  i = 0;
  if (log) {
    const float c = m + std::log(s);
    const VF cv = splat(c);
    for (; i + kLanes <= n; i += kLanes) store(y + i, load(x + i) - cv);
    for (; i < n; ++i) y[i] = x[i] - c;
  } else {
    const float r = 1.0f / s;
    const VF rv = splat(r);
    for (; i + kLanes <= n; i += kLanes) store(y + i, load(y + i) * rv);
    for (; i < n; ++i) y[i] *= r;
  }
}

KILN_NN_INLINE float row_sum(const float* x, int64_t n) {
  VF acc = splat(0.0f);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) acc += load(x + i);
  float s = 0;
  for (; i < n; ++i) s += x[i];
  return hsum(acc) + s;
}

// Layer norm (center = true) or RMS norm of one row. w/b may be null. Writes mean/rstd.
KILN_NN_INLINE void norm_row_body(const float* x, float* y, const float* w, const float* b,
                                  int64_t n, float eps, bool center, float* mean_out,
                                  float* rstd_out) {
  const float mean = center ? row_sum(x, n) / static_cast<float>(n) : 0.0f;
  const VF mv = splat(mean);
  VF acc = splat(0.0f);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    VF d = load(x + i) - mv;
    acc += d * d;
  }
  float q = 0;
  for (; i < n; ++i) q += (x[i] - mean) * (x[i] - mean);
  q += hsum(acc);
  const float rstd = 1.0f / std::sqrt(q / static_cast<float>(n) + eps);
  const VF rv = splat(rstd);
  i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    VF v = (load(x + i) - mv) * rv;
    if (w) v = v * load(w + i);
    if (b) v = v + load(b + i);
    store(y + i, v);
  }
  for (; i < n; ++i) {
    float v = (x[i] - mean) * rstd;
    if (w) v *= w[i];
    if (b) v += b[i];
    y[i] = v;
  }
  if (mean_out) *mean_out = mean;
  *rstd_out = rstd;
}

#define KILN_NN_ISA_VARIANTS(name, params, args)                        \
  KILN_NN_TARGET_AVX512 void name##_avx512 params { name##_body args; } \
  KILN_NN_TARGET_AVX2 void name##_avx2 params { name##_body args; }     \
  void name##_base params { name##_body args; }                         \
  void name params {                                                    \
    switch (select_isa()) {                                             \
      case Isa::Avx512:                                                 \
        return name##_avx512 args;                                      \
      case Isa::Avx2:                                                   \
        return name##_avx2 args;                                        \
      default:                                                          \
        return name##_base args;                                        \
    }                                                                   \
  }

KILN_NN_ISA_VARIANTS(softmax_row, (const float* x, float* y, int64_t n, bool log), (x, y, n, log))
KILN_NN_ISA_VARIANTS(norm_row,
                     (const float* x, float* y, const float* w, const float* b, int64_t n,
                      float eps, bool center, float* mean_out, float* rstd_out),
                     (x, y, w, b, n, eps, center, mean_out, rstd_out))

// ---------------------------------------------------------------- generic (double) row loops

template <class C>
void softmax_row_generic(const C* x, C* y, int64_t n, bool log) {
  C m = -INFINITY;
  for (int64_t i = 0; i < n; ++i) m = x[i] > m || x[i] != x[i] ? x[i] : m;
  C s = 0;
  for (int64_t i = 0; i < n; ++i) {
    C e = std::exp(x[i] - m);
    if (!log) y[i] = e;
    s += e;
  }
  if (log) {
    const C c = m + std::log(s);
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] - c;
  } else {
    const C r = C(1) / s;
    for (int64_t i = 0; i < n; ++i) y[i] *= r;
  }
}
void softmax_row_any(const float* x, float* y, int64_t n, bool log) { softmax_row(x, y, n, log); }
void softmax_row_any(const double* x, double* y, int64_t n, bool log) {
  softmax_row_generic(x, y, n, log);
}

template <class C>
void norm_row_generic(const C* x, C* y, const C* w, const C* b, int64_t n, C eps, bool center,
                      C* mean_out, C* rstd_out) {
  C mean = 0;
  if (center) {
    for (int64_t i = 0; i < n; ++i) mean += x[i];
    mean /= static_cast<C>(n);
  }
  C q = 0;
  for (int64_t i = 0; i < n; ++i) q += (x[i] - mean) * (x[i] - mean);
  const C rstd = C(1) / std::sqrt(q / static_cast<C>(n) + eps);
  for (int64_t i = 0; i < n; ++i) {
    C v = (x[i] - mean) * rstd;
    if (w) v *= w[i];
    if (b) v += b[i];
    y[i] = v;
  }
  if (mean_out) *mean_out = mean;
  *rstd_out = rstd;
}
void norm_row_any(const float* x, float* y, const float* w, const float* b, int64_t n, float eps,
                  bool center, float* mean_out, float* rstd_out) {
  norm_row(x, y, w, b, n, eps, center, mean_out, rstd_out);
}
void norm_row_any(const double* x, double* y, const double* w, const double* b, int64_t n,
                  double eps, bool center, double* mean_out, double* rstd_out) {
  norm_row_generic(x, y, w, b, n, eps, center, mean_out, rstd_out);
}

// Copies n elements of T (strided by `stride`) into a C buffer, and back.
template <class T, class C>
void to_buf(const T* src, int64_t stride, int64_t n, C* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = detail::convert<C>(src[i * stride]);
}
template <class T, class C>
void from_buf(const C* src, int64_t n, T* dst, int64_t stride) {
  for (int64_t i = 0; i < n; ++i) dst[i * stride] = detail::convert<T>(src[i]);
}

// Shape of a softmax call around dim: [outer, n, inner] of a contiguous tensor.
struct DimSplit {
  int64_t outer = 1, n = 1, inner = 1;
};
DimSplit split_at(const Tensor& t, int64_t dim) {
  DimSplit s;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (d < dim) s.outer *= t.size(d);
    if (d == dim) s.n = t.size(d);
    if (d > dim) s.inner *= t.size(d);
  }
  return s;
}

// Runs row(in_rows..., out_row, n) on each line along dim of contiguous [outer, n, inner]
// tensors: in place on contiguous lines, through C buffers otherwise (strided lines or storage
// type != C).
template <class T, class C, size_t NIn, class F>
void for_each_line(const DimSplit& s, const T* const (&in)[NIn], T* out, const F& row) {
  const int64_t lines = s.outer * s.inner;
  if (lines == 0 || s.n == 0) return;
  const bool direct = std::is_same_v<T, C> && s.inner == 1;
  parallel_for(0, lines, nn_row_grain(s.n), [&](int64_t b, int64_t e) {
    std::vector<C> buf(direct ? 0 : (NIn + 1) * s.n);
    for (int64_t l = b; l < e; ++l) {
      const int64_t o = l / s.inner, k = l % s.inner;
      const int64_t base = o * s.n * s.inner + k;
      if constexpr (std::is_same_v<T, C>) {
        if (direct) {
          const C* ptrs[NIn];
          for (size_t j = 0; j < NIn; ++j) ptrs[j] = in[j] + base;
          row(ptrs, out + base, s.n);
          continue;
        }
      }
      const C* ptrs[NIn];
      for (size_t j = 0; j < NIn; ++j) {
        to_buf(in[j] + base, s.inner, s.n, buf.data() + j * s.n);
        ptrs[j] = buf.data() + j * s.n;
      }
      C* ob = buf.data() + NIn * s.n;
      row(ptrs, ob, s.n);
      from_buf(ob, s.n, out + base, s.inner);
    }
  });
}

template <bool kLog>
void softmax_kernel(OpCall& c) {
  const Tensor& x = c.in[0];
  const DimSplit s = split_at(x, c.attrs.i0);
  detail::dispatch_types<detail::kFloatMask>(x.dtype(), op_name(c.op), [&]<class T>() {
    using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const T* in[1] = {nn_ptr<const T>(x)};
    for_each_line<T, C>(s, in, nn_ptr<T>(c.out[0]), [](const C* const* p, C* y, int64_t n) {
      softmax_row_any(p[0], y, n, kLog);
    });
  });
}

// softmax: dx = y * (g - sum(g * y)); log_softmax: dx = g - exp(y) * sum(g).
template <bool kLog>
void softmax_backward_kernel(OpCall& c) {
  const Tensor& g = c.in[0];
  const DimSplit s = split_at(g, c.attrs.i0);
  detail::dispatch_types<detail::kFloatMask>(g.dtype(), op_name(c.op), [&]<class T>() {
    using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const T* in[2] = {nn_ptr<const T>(g), nn_ptr<const T>(c.in[1])};
    for_each_line<T, C>(s, in, nn_ptr<T>(c.out[0]), [](const C* const* p, C* dx, int64_t n) {
      const C *gr = p[0], *y = p[1];
      double acc = 0;
      for (int64_t i = 0; i < n; ++i) acc += kLog ? double(gr[i]) : double(gr[i]) * y[i];
      const C a = static_cast<C>(acc);
      for (int64_t i = 0; i < n; ++i)
        dx[i] = kLog ? gr[i] - std::exp(y[i]) * a : y[i] * (gr[i] - a);
    });
  });
}

// ---------------------------------------------------------------- layer / rms norm

// in = (x, [w], [b]); out = (y, [mean], rstd). attrs: i0 = row length, s0 = eps,
// i1 bit 1 = weight, bit 2 = bias.
template <bool kCenter>
void norm_kernel(OpCall& c) {
  const Tensor& x = c.in[0];
  const int64_t n = c.attrs.i0;
  const bool has_w = c.attrs.i1 & 1, has_b = c.attrs.i1 & 2;
  const int64_t rows = n == 0 ? 0 : x.numel() / n;
  const double eps = c.attrs.s0.to<double>();
  detail::dispatch_types<detail::kFloatMask>(x.dtype(), op_name(c.op), [&]<class T>() {
    using C = detail::opmath_t<T>;
    // weight / bias as C vectors (converted once).
    std::vector<C> wb;
    const C *w = nullptr, *b = nullptr;
    int next = 1;
    auto take = [&](bool has, const C*& dst, size_t slot) {
      if (!has) return;
      const Tensor& t = c.in[next++];
      if constexpr (std::is_same_v<T, C>) {
        dst = nn_ptr<const C>(t);
      } else {
        wb.resize(2 * n);
        to_buf(nn_ptr<const T>(t), 1, n, wb.data() + slot * n);
        dst = wb.data() + slot * n;
      }
    };
    take(has_w, w, 0);
    take(has_b, b, 1);
    const T* xp = nn_ptr<const T>(x);
    T* yp = nn_ptr<T>(c.out[0]);
    C* mean = kCenter ? nn_ptr<C>(c.out[1]) : nullptr;
    C* rstd = nn_ptr<C>(c.out[kCenter ? 2 : 1]);
    if (rows == 0) return;
    parallel_for(0, rows, nn_row_grain(n), [&](int64_t r0, int64_t r1) {
      std::vector<C> buf(std::is_same_v<T, C> ? 0 : 2 * n);
      for (int64_t r = r0; r < r1; ++r) {
        C* mo = kCenter ? mean + r : nullptr;
        if constexpr (std::is_same_v<T, C>) {
          norm_row_any(xp + r * n, yp + r * n, w, b, n, static_cast<C>(eps), kCenter, mo, rstd + r);
        } else {
          to_buf(xp + r * n, 1, n, buf.data());
          norm_row_any(buf.data(), buf.data() + n, w, b, n, static_cast<C>(eps), kCenter, mo,
                       rstd + r);
          from_buf(buf.data() + n, n, yp + r * n, 1);
        }
      }
    });
  });
}

// in = (grad, x, [mean], rstd, [w]); out = (dx, [dw], [db]) (dw/db present by i1 bits 4/8).
// xhat = (x - mean) * rstd, gw = g * w: dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat))
// (rms norm: no mean(gw) term, mean = 0). dw = sum_rows g * xhat, db = sum_rows g, computed per
// column block over all rows, so the sums do not depend on the thread count.
template <bool kCenter>
void norm_backward_kernel(OpCall& c) {
  const Tensor& g = c.in[0];
  const Tensor& x = c.in[1];
  const int64_t n = c.attrs.i0;
  const bool has_w = c.attrs.i1 & 1, want_dw = c.attrs.i1 & 4, want_db = c.attrs.i1 & 8;
  const int64_t rows = n == 0 ? 0 : x.numel() / n;
  detail::dispatch_types<detail::kFloatMask>(x.dtype(), op_name(c.op), [&]<class T>() {
    using C = detail::opmath_t<T>;
    int next = 2;
    const C* mean = kCenter ? nn_ptr<const C>(c.in[next++]) : nullptr;
    const C* rstd = nn_ptr<const C>(c.in[next++]);
    std::vector<C> wv(has_w ? n : 0);
    if (has_w) to_buf(nn_ptr<const T>(c.in[next++]), 1, n, wv.data());
    const T* gp = nn_ptr<const T>(g);
    const T* xp = nn_ptr<const T>(x);
    T* dx = nn_ptr<T>(c.out[0]);
    parallel_for(0, rows, nn_row_grain(n), [&](int64_t r0, int64_t r1) {
      std::vector<C> gw(n), xh(n);
      for (int64_t r = r0; r < r1; ++r) {
        const C mu = kCenter ? mean[r] : C(0), rs = rstd[r];
        C sum_gw = 0, sum_gwx = 0;
        for (int64_t i = 0; i < n; ++i) {
          xh[i] = (detail::convert<C>(xp[r * n + i]) - mu) * rs;
          gw[i] = detail::convert<C>(gp[r * n + i]) * (has_w ? wv[i] : C(1));
          sum_gw += gw[i];
          sum_gwx += gw[i] * xh[i];
        }
        const C a = kCenter ? sum_gw / static_cast<C>(n) : C(0);
        const C bq = sum_gwx / static_cast<C>(n);
        for (int64_t i = 0; i < n; ++i)
          dx[r * n + i] = detail::convert<T>(rs * (gw[i] - a - xh[i] * bq));
      }
    });
    if (!want_dw && !want_db) return;
    T* dw = want_dw ? nn_ptr<T>(c.out[1]) : nullptr;
    T* db = want_db ? nn_ptr<T>(c.out[want_dw ? 2 : 1]) : nullptr;
    parallel_for(0, n, std::max<int64_t>(16, kGrainSize / std::max<int64_t>(1, rows)),
                 [&](int64_t c0, int64_t c1) {
                   std::vector<C> sw(c1 - c0, C(0)), sb(c1 - c0, C(0));
                   for (int64_t r = 0; r < rows; ++r) {
                     const C mu = kCenter ? mean[r] : C(0), rs = rstd[r];
                     for (int64_t j = c0; j < c1; ++j) {
                       const C gv = detail::convert<C>(gp[r * n + j]);
                       sw[j - c0] += gv * (detail::convert<C>(xp[r * n + j]) - mu) * rs;
                       sb[j - c0] += gv;
                     }
                   }
                   for (int64_t j = c0; j < c1; ++j) {
                     if (dw) dw[j] = detail::convert<T>(sw[j - c0]);
                     if (db) db[j] = detail::convert<T>(sb[j - c0]);
                   }
                 });
  });
}

}  // namespace

void register_nn_norm_kernels(detail::KernelRegistry& r) {
  r.set(OpId::Softmax, kCPU, &softmax_kernel<false>);
  r.set(OpId::LogSoftmax, kCPU, &softmax_kernel<true>);
  r.set(OpId::SoftmaxBackward, kCPU, &softmax_backward_kernel<false>);
  r.set(OpId::LogSoftmaxBackward, kCPU, &softmax_backward_kernel<true>);
  r.set(OpId::LayerNorm, kCPU, &norm_kernel<true>);
  r.set(OpId::RmsNorm, kCPU, &norm_kernel<false>);
  r.set(OpId::LayerNormBackward, kCPU, &norm_backward_kernel<true>);
  r.set(OpId::RmsNormBackward, kCPU, &norm_backward_kernel<false>);
}

}  // namespace kiln::cpu
