// CPU kernels of convolution (forward, backward input = transposed convolution, backward weight)
// by im2col + OpenBLAS GEMM per (image, group) or Winograd (3x3 stride 1, float32), and of the
// im2col / col2im ops (F.unfold/F.fold).
#include <cstring>
#include <type_traits>

#include "kernels/cpu/matmul_blas.h"
#include "kernels/cpu/nn_conv_winograd.h"
#include "kernels/cpu/nn_kernels.h"

namespace kiln::cpu {
namespace {

// Geometry of one 5-D convolution: input [N, C, D, H, W], weight [O, C/g, KD, KH, KW], output
// [N, O, OD, OH, OW].
struct Geo {
  int64_t n, c, id, ih, iw, o, kd, kh, kw, od, oh, ow, groups;
  int64_t sd, sh, sw, pd, ph, pw, dd, dh, dw;
  int64_t cg() const { return c / groups; }
  int64_t og() const { return o / groups; }
  int64_t kg() const { return cg() * kd * kh * kw; }  // rows of the column matrix per group
  int64_t l() const { return od * oh * ow; }          // columns (output positions)
  int64_t in_plane() const { return id * ih * iw; }
  bool pointwise() const {
    return kd == 1 && kh == 1 && kw == 1 && sd == 1 && sh == 1 && sw == 1 && pd == 0 && ph == 0 &&
           pw == 0;
  }
};

Geo make_geo(const Tensor& x, const Tensor& w, const Tensor& y, const OpAttrs& a) {
  Geo g;
  g.n = x.size(0), g.c = x.size(1), g.id = x.size(2), g.ih = x.size(3), g.iw = x.size(4);
  g.o = w.size(0), g.kd = w.size(2), g.kh = w.size(3), g.kw = w.size(4);
  g.od = y.size(2), g.oh = y.size(3), g.ow = y.size(4);
  g.groups = a.i0;
  g.sd = a.ints[0], g.sh = a.ints[1], g.sw = a.ints[2];
  g.pd = a.ints[3], g.ph = a.ints[4], g.pw = a.ints[5];
  g.dd = a.ints[6], g.dh = a.ints[7], g.dw = a.ints[8];
  return g;
}

// Copies one input row segment into a column row: dst[ow] = src[ow * s - p + k * d] for
// ow in [0, n_out), zero outside [0, n_in).
template <class T>
inline void gather_row(const T* src, int64_t n_in, T* dst, int64_t n_out, int64_t s, int64_t off) {
  if (s == 1) {
    // Valid ow: 0 <= ow + off < n_in.
    const int64_t lo = std::clamp<int64_t>(-off, 0, n_out);
    const int64_t hi = std::clamp<int64_t>(n_in - off, lo, n_out);
    for (int64_t i = 0; i < lo; ++i) dst[i] = T(0);
    if (hi > lo) std::memcpy(dst + lo, src + lo + off, (hi - lo) * sizeof(T));
    for (int64_t i = hi; i < n_out; ++i) dst[i] = T(0);
    return;
  }
  for (int64_t i = 0; i < n_out; ++i) {
    const int64_t j = i * s + off;
    dst[i] = (j >= 0 && j < n_in) ? src[j] : T(0);
  }
}
template <class T>
inline void scatter_row(const T* src, int64_t n_out, T* dst, int64_t n_in, int64_t s, int64_t off) {
  for (int64_t i = 0; i < n_out; ++i) {
    const int64_t j = i * s + off;
    if (j >= 0 && j < n_in) dst[j] += src[i];
  }
}

// cols [cg * kd * kh * kw, od * oh * ow] of channels [c0, c0 + cg) of one image x [C, D, H, W].
// Parallel over the rows (c, kd, kh).
template <class T>
void im2col(const Geo& g, const T* x, T* cols) {
  const int64_t rows = g.cg() * g.kd * g.kh;
  const int64_t l = g.l();
  parallel_for(0, rows, nn_row_grain(l * g.kw), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t kh = r % g.kh, kd = (r / g.kh) % g.kd, c = r / (g.kh * g.kd);
      const T* xc = x + c * g.in_plane();
      for (int64_t kw = 0; kw < g.kw; ++kw) {
        T* dst = cols + ((r * g.kw) + kw) * l;
        for (int64_t od = 0; od < g.od; ++od) {
          const int64_t d = od * g.sd - g.pd + kd * g.dd;
          for (int64_t oh = 0; oh < g.oh; ++oh) {
            const int64_t h = oh * g.sh - g.ph + kh * g.dh;
            T* out = dst + (od * g.oh + oh) * g.ow;
            if (d < 0 || d >= g.id || h < 0 || h >= g.ih) {
              std::fill(out, out + g.ow, T(0));
              continue;
            }
            gather_row(xc + (d * g.ih + h) * g.iw, g.iw, out, g.ow, g.sw, kw * g.dw - g.pw);
          }
        }
      }
    }
  });
}

// The adjoint: x [cg, D, H, W] += cols. Parallel over channels (each owns its plane).
template <class T>
void col2im(const Geo& g, const T* cols, T* x) {
  const int64_t l = g.l();
  parallel_for(0, g.cg(), nn_row_grain(l * g.kd * g.kh * g.kw), [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      T* xc = x + c * g.in_plane();
      for (int64_t kd = 0; kd < g.kd; ++kd)
        for (int64_t kh = 0; kh < g.kh; ++kh)
          for (int64_t kw = 0; kw < g.kw; ++kw) {
            const T* src = cols + (((c * g.kd + kd) * g.kh + kh) * g.kw + kw) * l;
            for (int64_t od = 0; od < g.od; ++od) {
              const int64_t d = od * g.sd - g.pd + kd * g.dd;
              if (d < 0 || d >= g.id) continue;
              for (int64_t oh = 0; oh < g.oh; ++oh) {
                const int64_t h = oh * g.sh - g.ph + kh * g.dh;
                if (h < 0 || h >= g.ih) continue;
                scatter_row(src + (od * g.oh + oh) * g.ow, g.ow, xc + (d * g.ih + h) * g.iw, g.iw,
                            g.sw, kw * g.dw - g.pw);
              }
            }
          }
    }
  });
}

// The Winograd description of g when it is a 3x3 stride-1 dilation-1 2-D convolution (D == 1).
bool winograd_geo(const Geo& g, WinogradConv& wc) {
  if (g.id != 1 || g.kd != 1 || g.pd != 0 || g.kh != 3 || g.kw != 3 || g.sh != 1 || g.sw != 1 ||
      g.dh != 1 || g.dw != 1)
    return false;
  wc = {g.n, g.c, g.ih, g.iw, g.o, g.groups, g.ph, g.pw};
  return winograd_applicable(wc);
}

// The backward input of a 3x3 stride-1 convolution is the convolution of the gradient with the
// flipped kernels, input and output channels swapped per group, and padding 2 - p.
bool winograd_backward_geo(const Geo& g, WinogradConv& wc) {
  if (g.id != 1 || g.kd != 1 || g.pd != 0 || g.kh != 3 || g.kw != 3 || g.sh != 1 || g.sw != 1 ||
      g.dh != 1 || g.dw != 1 || g.ph > 2 || g.pw > 2)
    return false;
  wc = {g.n, g.o, g.oh, g.ow, g.c, g.groups, 2 - g.ph, 2 - g.pw};
  return wc.oh() == g.ih && wc.ow() == g.iw && winograd_applicable(wc);
}

MatDesc mat(const void* p, int64_t rows, int64_t cols) {
  return {const_cast<void*>(p), rows, cols, cols, 1};
}

// Note [shifted-GEMM convolution]: for stride 1, each input channel is copied once into a
// zero-padded plane [Dp, Hp, Wp] (plus (kw-1)*dw trailing zeros). The output computed over the
// padded width ("wide" output, index od*Hp*Wp + oh*Wp + ow with ow < Wp) is then a sum over
// kernel positions of W[:, :, k] (Og x Cg) @ P[:, offset(k) : offset(k) + Lw] (Cg x Lw, rows of
// stride |plane|): one GEMM per kernel position on data that stays in cache, instead of an
// im2col matrix kd*kh*kw times the input. The ow >= OW columns are discarded.
template <class T>
void conv_forward_shifted(const Geo& g, const T* xp, const T* wp, const T* bias, T* yp) {
  const int64_t dp = g.id + 2 * g.pd, hp = g.ih + 2 * g.ph, wpd = g.iw + 2 * g.pw;
  const int64_t plane = dp * hp * wpd + (g.kw - 1) * g.dw;
  const int64_t lw = ((g.od - 1) * hp + g.oh) * wpd;
  const int64_t kk = g.kd * g.kh * g.kw, cg = g.cg(), og = g.og();
  // Weights as [groups][k][Og][Cg].
  std::vector<T> wt(g.o * cg * kk);
  for (int64_t gr = 0; gr < g.groups; ++gr)
    for (int64_t k = 0; k < kk; ++k)
      for (int64_t o = 0; o < og; ++o)
        for (int64_t ci = 0; ci < cg; ++ci)
          wt[((gr * kk + k) * og + o) * cg + ci] = wp[((gr * og + o) * cg + ci) * kk + k];
  std::vector<T> pad(cg * plane, T(0)), wide(og * lw);
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t gr = 0; gr < g.groups; ++gr) {
      const T* xin = xp + (n * g.c + gr * cg) * g.in_plane();
      // Serial copies (memory-bound and small): an OpenMP region between the BLAS calls would
      // leave spinning OpenMP threads competing with OpenBLAS's own.
      for (int64_t ci = 0; ci < cg; ++ci)
        for (int64_t d = 0; d < g.id; ++d)
          for (int64_t h = 0; h < g.ih; ++h)
            std::memcpy(pad.data() + ci * plane + ((d + g.pd) * hp + h + g.ph) * wpd + g.pw,
                        xin + (ci * g.id + d) * g.ih * g.iw + h * g.iw, g.iw * sizeof(T));
      for (int64_t k = 0; k < kk; ++k) {
        const int64_t kw = k % g.kw, kh = (k / g.kw) % g.kh, kd = k / (g.kw * g.kh);
        const int64_t off = (kd * g.dd * hp + kh * g.dh) * wpd + kw * g.dw;
        blas_gemm<T>(mat(wt.data() + (gr * kk + k) * og * cg, og, cg),
                     MatDesc{pad.data() + off, cg, lw, plane, 1}, mat(wide.data(), og, lw), T(1),
                     T(k == 0 ? 0 : 1));
      }
      T* yout = yp + (n * g.o + gr * og) * g.l();
      for (int64_t o = 0; o < og; ++o) {
        const T b = bias ? bias[gr * og + o] : T(0);
        for (int64_t d = 0; d < g.od; ++d)
          for (int64_t h = 0; h < g.oh; ++h) {
            T* dst = yout + ((o * g.od + d) * g.oh + h) * g.ow;
            const T* src = wide.data() + o * lw + (d * hp + h) * wpd;
            for (int64_t i = 0; i < g.ow; ++i) dst[i] = src[i] + b;
          }
      }
    }
}

// Layout shared by the shifted-GEMM kernels (Note [shifted-GEMM convolution]).
struct Shifted {
  int64_t hp, wpd, plane, lw, kk;
  explicit Shifted(const Geo& g)
      : hp(g.ih + 2 * g.ph),
        wpd(g.iw + 2 * g.pw),
        plane((g.id + 2 * g.pd) * hp * wpd + (g.kw - 1) * g.dw),
        lw(((g.od - 1) * hp + g.oh) * wpd),
        kk(g.kd * g.kh * g.kw) {}
  int64_t offset(const Geo& g, int64_t k) const {
    const int64_t kw = k % g.kw, kh = (k / g.kw) % g.kh, kd = k / (g.kw * g.kh);
    return (kd * g.dd * hp + kh * g.dh) * wpd + kw * g.dw;
  }
};

// Spreads grad [og, OD, OH, OW] into the wide layout [og, lw] (zeros in the extra columns).
template <class T>
void to_wide(const Geo& g, const Shifted& sh, const T* gy, T* wide) {
  std::fill(wide, wide + g.og() * sh.lw, T(0));
  for (int64_t o = 0; o < g.og(); ++o)
    for (int64_t d = 0; d < g.od; ++d)
      for (int64_t h = 0; h < g.oh; ++h)
        std::memcpy(wide + o * sh.lw + (d * sh.hp + h) * sh.wpd,
                    gy + ((o * g.od + d) * g.oh + h) * g.ow, g.ow * sizeof(T));
}

// Stride-1 backward input: dPad[:, off(k) :] += W_k^T @ wide_grad, then the interior of dPad.
template <class T>
void conv_backward_input_shifted(const Geo& g, const T* gyp, const T* wp, T* gxp) {
  const Shifted sh(g);
  const int64_t cg = g.cg(), og = g.og();
  std::vector<T> pad(cg * sh.plane), wide(og * sh.lw);
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t gr = 0; gr < g.groups; ++gr) {
      to_wide(g, sh, gyp + (n * g.o + gr * og) * g.l(), wide.data());
      std::fill(pad.begin(), pad.end(), T(0));
      for (int64_t k = 0; k < sh.kk; ++k) {
        // W_k^T: rows ci, cols o of weight [gr*og + o][ci][k] (strides 1*kk... as a transpose).
        const MatDesc wk{const_cast<T*>(wp + gr * og * cg * sh.kk + k), cg, og, sh.kk, cg * sh.kk};
        std::vector<T> wkt(cg * og);
        for (int64_t ci = 0; ci < cg; ++ci)
          for (int64_t o = 0; o < og; ++o)
            wkt[ci * og + o] = static_cast<const T*>(wk.p)[ci * wk.rs + o * wk.cs];
        blas_gemm<T>(mat(wkt.data(), cg, og), mat(wide.data(), og, sh.lw),
                     MatDesc{pad.data() + sh.offset(g, k), cg, sh.lw, sh.plane, 1}, T(1), T(1));
      }
      T* xin = gxp + (n * g.c + gr * cg) * g.in_plane();
      for (int64_t ci = 0; ci < cg; ++ci)
        for (int64_t d = 0; d < g.id; ++d)
          for (int64_t h = 0; h < g.ih; ++h)
            std::memcpy(
                xin + (ci * g.id + d) * g.ih * g.iw + h * g.iw,
                pad.data() + ci * sh.plane + ((d + g.pd) * sh.hp + h + g.ph) * sh.wpd + g.pw,
                g.iw * sizeof(T));
    }
}

// Stride-1 backward weight: dW_k += wide_grad @ Pad[:, off(k) :]^T over the images, in order.
template <class T>
void conv_backward_weight_shifted(const Geo& g, const T* gyp, const T* xp, T* gwp) {
  const Shifted sh(g);
  const int64_t cg = g.cg(), og = g.og();
  std::vector<T> pad(cg * sh.plane, T(0)), wide(og * sh.lw), dw(g.groups * sh.kk * og * cg, T(0));
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t gr = 0; gr < g.groups; ++gr) {
      to_wide(g, sh, gyp + (n * g.o + gr * og) * g.l(), wide.data());
      const T* xin = xp + (n * g.c + gr * cg) * g.in_plane();
      for (int64_t ci = 0; ci < cg; ++ci)
        for (int64_t d = 0; d < g.id; ++d)
          for (int64_t h = 0; h < g.ih; ++h)
            std::memcpy(
                pad.data() + ci * sh.plane + ((d + g.pd) * sh.hp + h + g.ph) * sh.wpd + g.pw,
                xin + (ci * g.id + d) * g.ih * g.iw + h * g.iw, g.iw * sizeof(T));
      for (int64_t k = 0; k < sh.kk; ++k)
        blas_gemm<T>(mat(wide.data(), og, sh.lw),
                     MatDesc{pad.data() + sh.offset(g, k), cg, sh.lw, sh.plane, 1}.t(),
                     mat(dw.data() + (gr * sh.kk + k) * og * cg, og, cg), T(1), T(1));
    }
  for (int64_t gr = 0; gr < g.groups; ++gr)
    for (int64_t k = 0; k < sh.kk; ++k)
      for (int64_t o = 0; o < og; ++o)
        for (int64_t ci = 0; ci < cg; ++ci)
          gwp[((gr * og + o) * cg + ci) * sh.kk + k] = dw[((gr * sh.kk + k) * og + o) * cg + ci];
}

// in = (x, w, [bias]) 5-D contiguous; out[0] = y.
void conv_forward_kernel(OpCall& c) {
  const Tensor &x = c.in[0], &w = c.in[1], &y = c.out[0];
  const Geo g = make_geo(x, w, y, c.attrs);
  detail::dispatch_types<detail::kFloatMask & ~detail::kReducedFloatMask>(
      x.dtype(), "convolution", [&]<class T>() {
        const T* xp = nn_ptr<const T>(x);
        const T* wp = nn_ptr<const T>(w);
        T* yp = nn_ptr<T>(y);
        const T* bp = c.attrs.flag ? nn_ptr<const T>(c.in[2]) : nullptr;  // cleared once added
        const int64_t l = g.l(), kg = g.kg(), og = g.og();
        if (y.numel() == 0) return;
        const bool stride1 = g.sd == 1 && g.sh == 1 && g.sw == 1;
        WinogradConv wc;
        if (kg == 0) {
          std::fill(yp, yp + y.numel(), T(0));
        } else if (std::is_same_v<T, float> && winograd_geo(g, wc)) {
          if constexpr (std::is_same_v<T, float>) conv_winograd_f32(wc, xp, wp, bp, yp);
          bp = nullptr;  // added above
        } else if (stride1 && !g.pointwise() && g.og() > 0) {
          sync_blas_threads();
          conv_forward_shifted(g, xp, wp, bp, yp);
          bp = nullptr;  // added above
        } else {
          sync_blas_threads();
          std::vector<T> cols(g.pointwise() ? 0 : kg * l);
          for (int64_t n = 0; n < g.n; ++n)
            for (int64_t gr = 0; gr < g.groups; ++gr) {
              const T* xin = xp + (n * g.c + gr * g.cg()) * g.in_plane();
              const T* colp = xin;
              if (!g.pointwise()) {
                im2col(g, xin, cols.data());
                colp = cols.data();
              }
              blas_gemm<T>(mat(wp + gr * og * kg, og, kg), mat(colp, kg, l),
                           mat(yp + (n * g.o + gr * og) * l, og, l), T(1), T(0));
            }
        }
        if (bp) {
          parallel_for(0, g.n * g.o, nn_row_grain(l), [&](int64_t b, int64_t e) {
            for (int64_t r = b; r < e; ++r) {
              const T v = bp[r % g.o];
              T* row = yp + r * l;
              for (int64_t i = 0; i < l; ++i) row[i] += v;
            }
          });
        }
      });
}

// in = (grad [N, O, OD, OH, OW], w); out[0] = grad_input [N, C, D, H, W].
void conv_backward_input_kernel(OpCall& c) {
  const Tensor &gy = c.in[0], &w = c.in[1], &gx = c.out[0];
  const Geo g = make_geo(gx, w, gy, c.attrs);
  detail::dispatch_types<detail::kFloatMask & ~detail::kReducedFloatMask>(
      gy.dtype(), "convolution_backward_input", [&]<class T>() {
        const T* gyp = nn_ptr<const T>(gy);
        const T* wp = nn_ptr<const T>(w);
        T* gxp = nn_ptr<T>(gx);
        if (gx.numel() == 0) return;
        const int64_t l = g.l(), kg = g.kg(), og = g.og();
        WinogradConv wc;
        if constexpr (std::is_same_v<T, float>) {
          if (kg > 0 && l > 0 && og > 0 && winograd_backward_geo(g, wc)) {
            // Flipped kernels as [C, O / groups, 3, 3].
            const int64_t cg = g.cg();
            std::vector<float> wt(g.c * og * 9);
            for (int64_t gr = 0; gr < g.groups; ++gr)
              for (int64_t o = 0; o < og; ++o)
                for (int64_t ci = 0; ci < cg; ++ci)
                  for (int64_t k = 0; k < 9; ++k)
                    wt[((gr * cg + ci) * og + o) * 9 + 8 - k] =
                        wp[((gr * og + o) * cg + ci) * 9 + k];
            return conv_winograd_f32(wc, gyp, wt.data(), nullptr, gxp);
          }
        }
        std::fill(gxp, gxp + gx.numel(), T(0));
        if (kg == 0 || l == 0 || og == 0) return;
        sync_blas_threads();
        if (g.sd == 1 && g.sh == 1 && g.sw == 1 && !g.pointwise())
          return conv_backward_input_shifted(g, gyp, wp, gxp);
        std::vector<T> cols(kg * l);
        for (int64_t n = 0; n < g.n; ++n)
          for (int64_t gr = 0; gr < g.groups; ++gr) {
            T* xin = gxp + (n * g.c + gr * g.cg()) * g.in_plane();
            const MatDesc wt = mat(wp + gr * og * kg, og, kg).t();
            const MatDesc gm = mat(gyp + (n * g.o + gr * og) * l, og, l);
            if (g.pointwise()) {
              blas_gemm<T>(wt, gm, mat(xin, kg, l), T(1), T(0));
            } else {
              blas_gemm<T>(wt, gm, mat(cols.data(), kg, l), T(1), T(0));
              col2im(g, cols.data(), xin);
            }
          }
      });
}

// in = (grad [N, O, ...], x [N, C, ...]); out[0] = grad_weight [O, C/g, KD, KH, KW]. The images
// are accumulated in order (beta = 1), so the result does not depend on the thread count.
void conv_backward_weight_kernel(OpCall& c) {
  const Tensor &gy = c.in[0], &x = c.in[1], &gw = c.out[0];
  const Geo g = make_geo(x, gw, gy, c.attrs);
  detail::dispatch_types<detail::kFloatMask & ~detail::kReducedFloatMask>(
      gy.dtype(), "convolution_backward_weight", [&]<class T>() {
        const T* gyp = nn_ptr<const T>(gy);
        const T* xp = nn_ptr<const T>(x);
        T* gwp = nn_ptr<T>(gw);
        if (gw.numel() == 0) return;
        std::fill(gwp, gwp + gw.numel(), T(0));
        const int64_t l = g.l(), kg = g.kg(), og = g.og();
        if (l == 0 || kg == 0 || og == 0) return;
        sync_blas_threads();
        if (g.sd == 1 && g.sh == 1 && g.sw == 1 && !g.pointwise())
          return conv_backward_weight_shifted(g, gyp, xp, gwp);
        std::vector<T> cols(g.pointwise() ? 0 : kg * l);
        for (int64_t n = 0; n < g.n; ++n)
          for (int64_t gr = 0; gr < g.groups; ++gr) {
            const T* xin = xp + (n * g.c + gr * g.cg()) * g.in_plane();
            const T* colp = xin;
            if (!g.pointwise()) {
              im2col(g, xin, cols.data());
              colp = cols.data();
            }
            blas_gemm<T>(mat(gyp + (n * g.o + gr * og) * l, og, l), mat(colp, kg, l).t(),
                         mat(gwp + gr * og * kg, og, kg), T(1), T(1));
          }
      });
}

// Im2Col: x [N, C, H, W] -> [N, C*kh*kw, L]; Col2Im the reverse (sum). ints = kernel[2],
// dilation[2], padding[2], stride[2]. Expressed as a 5-D geometry with D = 1 and one group.
Geo im2col_geo(const Tensor& img, const Tensor& cols, const OpAttrs& a, int64_t oh, int64_t ow) {
  Geo g{};
  g.n = img.size(0), g.c = img.size(1), g.id = 1, g.ih = img.size(2), g.iw = img.size(3);
  g.o = 1, g.kd = 1, g.kh = a.ints[0], g.kw = a.ints[1];
  g.od = 1, g.oh = oh, g.ow = ow, g.groups = 1;
  g.sd = 1, g.sh = a.ints[6], g.sw = a.ints[7];
  g.pd = 0, g.ph = a.ints[4], g.pw = a.ints[5];
  g.dd = 1, g.dh = a.ints[2], g.dw = a.ints[3];
  (void)cols;
  return g;
}
int64_t sliding(int64_t in, int64_t k, int64_t d, int64_t p, int64_t s) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

void im2col_kernel(OpCall& c) {
  const Tensor &x = c.in[0], &y = c.out[0];
  const OpAttrs& a = c.attrs;
  const int64_t oh = sliding(x.size(2), a.ints[0], a.ints[2], a.ints[4], a.ints[6]);
  const int64_t ow = sliding(x.size(3), a.ints[1], a.ints[3], a.ints[5], a.ints[7]);
  const Geo g = im2col_geo(x, y, a, oh, ow);
  detail::dispatch_types<detail::kFloatMask & ~detail::kReducedFloatMask>(
      x.dtype(), "im2col", [&]<class T>() {
        if (y.numel() == 0) return;
        for (int64_t n = 0; n < g.n; ++n)
          im2col(g, nn_ptr<const T>(x) + n * g.c * g.in_plane(), nn_ptr<T>(y) + n * g.kg() * g.l());
      });
}

void col2im_kernel(OpCall& c) {
  const Tensor &cols = c.in[0], &y = c.out[0];
  const OpAttrs& a = c.attrs;
  const int64_t oh = sliding(y.size(2), a.ints[0], a.ints[2], a.ints[4], a.ints[6]);
  const int64_t ow = sliding(y.size(3), a.ints[1], a.ints[3], a.ints[5], a.ints[7]);
  const Geo g = im2col_geo(y, cols, a, oh, ow);
  detail::dispatch_types<detail::kFloatMask & ~detail::kReducedFloatMask>(
      y.dtype(), "col2im", [&]<class T>() {
        T* yp = nn_ptr<T>(y);
        std::fill(yp, yp + y.numel(), T(0));
        if (cols.numel() == 0) return;
        for (int64_t n = 0; n < g.n; ++n)
          col2im(g, nn_ptr<const T>(cols) + n * g.kg() * g.l(), yp + n * g.c * g.in_plane());
      });
}

}  // namespace

void register_nn_conv_kernels(detail::KernelRegistry& r) {
  r.set(OpId::Convolution, kCPU, &conv_forward_kernel);
  r.set(OpId::ConvolutionBackwardInput, kCPU, &conv_backward_input_kernel);
  r.set(OpId::ConvolutionBackwardWeight, kCPU, &conv_backward_weight_kernel);
  r.set(OpId::Im2Col, kCPU, &im2col_kernel);
  r.set(OpId::Col2Im, kCPU, &col2im_kernel);
}

}  // namespace kiln::cpu
