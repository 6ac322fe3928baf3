// CPU kernels of 2-D pooling on contiguous [N, C, H, W]: max (with indices), average, adaptive
// average/max, and their backward ops. Parallel over planes (n, c): each plane is independent,
// so the results do not depend on the thread count.
#include <atomic>
#include <cmath>
#include <limits>

#include "kernels/cpu/nn_kernels.h"

namespace kiln::cpu {
namespace {

struct Planes {
  int64_t p, h, w, oh, ow;
};
Planes planes(const Tensor& in, const Tensor& out) {
  return {in.size(0) * in.size(1), in.size(2), in.size(3), out.size(2), out.size(3)};
}

template <class T>
bool is_nan(T v) {
  if constexpr (std::is_integral_v<T>)
    return false;
  else
    return v != v;
}

// Window [start, end) of output o for adaptive pooling of `in` elements into `out`.
inline int64_t adaptive_start(int64_t o, int64_t out, int64_t in) { return (o * in) / out; }
inline int64_t adaptive_end(int64_t o, int64_t out, int64_t in) {
  return ((o + 1) * in + out - 1) / out;
}

// ints = kernel[2], stride[2], padding[2], dilation[2] (MaxPool2d) or window from the adaptive
// rule (AdaptiveMaxPool2d, adaptive = true). out = (values, indices into H*W).
template <bool kAdaptive>
void max_pool_kernel(OpCall& c) {
  const Tensor& x = c.in[0];
  const Planes g = planes(x, c.out[0]);
  const auto& a = c.attrs.ints;
  detail::dispatch_types<detail::kFloatMask | detail::kIntMask>(
      x.dtype(), op_name(c.op), [&]<class T>() {
        using C = detail::opmath_t<T>;
        const T* xp = nn_ptr<const T>(x);
        T* yp = nn_ptr<T>(c.out[0]);
        int64_t* ip = nn_ptr<int64_t>(c.out[1]);
        const int64_t rows = g.p * g.oh;
        parallel_for(0, rows, nn_row_grain(g.ow * 9), [&](int64_t r0, int64_t r1) {
          for (int64_t r = r0; r < r1; ++r) {
            const int64_t pl = r / g.oh, oh = r % g.oh;
            const T* plane = xp + pl * g.h * g.w;
            for (int64_t ow = 0; ow < g.ow; ++ow) {
              int64_t h0, h1, w0, w1, dh = 1, dw = 1;
              if constexpr (kAdaptive) {
                h0 = adaptive_start(oh, g.oh, g.h), h1 = adaptive_end(oh, g.oh, g.h);
                w0 = adaptive_start(ow, g.ow, g.w), w1 = adaptive_end(ow, g.ow, g.w);
              } else {
                dh = a[6], dw = a[7];
                h0 = oh * a[2] - a[4], w0 = ow * a[3] - a[5];
                h1 = std::min(h0 + (a[0] - 1) * dh + 1, g.h);
                w1 = std::min(w0 + (a[1] - 1) * dw + 1, g.w);
                while (h0 < 0) h0 += dh;
                while (w0 < 0) w0 += dw;
              }
              C best = std::numeric_limits<C>::lowest();
              if constexpr (!std::is_integral_v<C>) best = -std::numeric_limits<C>::infinity();
              int64_t bi = h0 * g.w + w0;
              bool found_nan = false;
              for (int64_t h = h0; h < h1 && !found_nan; h += dh)
                for (int64_t w = w0; w < w1; w += dw) {
                  const C v = detail::convert<C>(plane[h * g.w + w]);
                  if (v > best || is_nan(v)) {
                    best = v, bi = h * g.w + w;
                    if (is_nan(v)) {
                      found_nan = true;
                      break;
                    }
                  }
                }
              yp[r * g.ow + ow] = detail::convert<T>(best);
              ip[r * g.ow + ow] = bi;
            }
          }
        });
      });
}

// in = (grad [N, C, OH, OW], indices); out [N, C, H, W]: grad summed at the indices.
void max_pool_backward_kernel(OpCall& c) {
  const Tensor& gi = c.out[0];
  const Planes g = planes(gi, c.in[0]);
  const int64_t hw = g.h * g.w, ohw = g.oh * g.ow;
  std::atomic<int64_t> bad{-1};
  detail::dispatch_types<detail::kFloatMask>(gi.dtype(), "max_pool2d_backward", [&]<class T>() {
    using C = detail::opmath_t<T>;
    const T* gp = nn_ptr<const T>(c.in[0]);
    const int64_t* ip = nn_ptr<const int64_t>(c.in[1]);
    T* op = nn_ptr<T>(gi);
    parallel_for(0, g.p, nn_row_grain(hw + ohw), [&](int64_t p0, int64_t p1) {
      std::vector<C> acc(hw);
      for (int64_t p = p0; p < p1; ++p) {
        std::fill(acc.begin(), acc.end(), C(0));
        for (int64_t i = 0; i < ohw; ++i) {
          const int64_t j = ip[p * ohw + i];
          if (j < 0 || j >= hw) {
            bad.store(j);
            continue;
          }
          acc[j] += detail::convert<C>(gp[p * ohw + i]);
        }
        for (int64_t j = 0; j < hw; ++j) op[p * hw + j] = detail::convert<T>(acc[j]);
      }
    });
  });
  KILN_CHECK(bad.load() == -1 || hw == 0, "[", op_name(c.op), "] index ", bad.load(),
             " is out of range for an output plane of ", hw, " elements");
}

// PyTorch's average-pool window: the divisor counts padding (count_include_pad) but never the
// part of a ceil_mode window beyond the padded input.
struct AvgWin {
  int64_t h0, h1, w0, w1, div;
};
inline AvgWin avg_window(const std::vector<int64_t>& a, const Planes& g, int64_t oh, int64_t ow,
                         bool include_pad, int64_t divisor) {
  int64_t h0 = oh * a[2] - a[4], w0 = ow * a[3] - a[5];
  int64_t h1 = std::min(h0 + a[0], g.h + a[4]), w1 = std::min(w0 + a[1], g.w + a[5]);
  const int64_t pool = (h1 - h0) * (w1 - w0);
  h0 = std::max<int64_t>(h0, 0), w0 = std::max<int64_t>(w0, 0);
  h1 = std::min(h1, g.h), w1 = std::min(w1, g.w);
  const int64_t div = divisor ? divisor : include_pad ? pool : (h1 - h0) * (w1 - w0);
  return {h0, h1, w0, w1, div};
}

// ints = kernel[2], stride[2], padding[2]; flag = count_include_pad; i0 = divisor_override.
void avg_pool_kernel(OpCall& c) {
  const Tensor& x = c.in[0];
  const Planes g = planes(x, c.out[0]);
  const std::vector<int64_t> a(c.attrs.ints.begin(), c.attrs.ints.end());
  detail::dispatch_types<detail::kFloatMask>(x.dtype(), "avg_pool2d", [&]<class T>() {
    using C = detail::opmath_t<T>;
    const T* xp = nn_ptr<const T>(x);
    T* yp = nn_ptr<T>(c.out[0]);
    parallel_for(0, g.p * g.oh, nn_row_grain(g.ow * 9), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t pl = r / g.oh, oh = r % g.oh;
        const T* plane = xp + pl * g.h * g.w;
        for (int64_t ow = 0; ow < g.ow; ++ow) {
          const AvgWin win = avg_window(a, g, oh, ow, c.attrs.flag, c.attrs.i0);
          C s = 0;
          for (int64_t h = win.h0; h < win.h1; ++h)
            for (int64_t w = win.w0; w < win.w1; ++w) s += detail::convert<C>(plane[h * g.w + w]);
          yp[r * g.ow + ow] = detail::convert<T>(s / static_cast<C>(win.div));
        }
      }
    });
  });
}

void avg_pool_backward_kernel(OpCall& c) {
  const Tensor& gi = c.out[0];
  const Planes g = planes(gi, c.in[0]);
  const std::vector<int64_t> a(c.attrs.ints.begin(), c.attrs.ints.end());
  detail::dispatch_types<detail::kFloatMask>(gi.dtype(), "avg_pool2d_backward", [&]<class T>() {
    using C = detail::opmath_t<T>;
    const T* gp = nn_ptr<const T>(c.in[0]);
    T* op = nn_ptr<T>(gi);
    parallel_for(0, g.p, nn_row_grain(g.h * g.w + g.oh * g.ow * 9), [&](int64_t p0, int64_t p1) {
      std::vector<C> acc(g.h * g.w);
      for (int64_t p = p0; p < p1; ++p) {
        std::fill(acc.begin(), acc.end(), C(0));
        for (int64_t oh = 0; oh < g.oh; ++oh)
          for (int64_t ow = 0; ow < g.ow; ++ow) {
            const AvgWin win = avg_window(a, g, oh, ow, c.attrs.flag, c.attrs.i0);
            const C v =
                detail::convert<C>(gp[(p * g.oh + oh) * g.ow + ow]) / static_cast<C>(win.div);
            for (int64_t h = win.h0; h < win.h1; ++h)
              for (int64_t w = win.w0; w < win.w1; ++w) acc[h * g.w + w] += v;
          }
        for (int64_t j = 0; j < g.h * g.w; ++j) op[p * g.h * g.w + j] = detail::convert<T>(acc[j]);
      }
    });
  });
}

void adaptive_avg_kernel(OpCall& c) {
  const Tensor& x = c.in[0];
  const Planes g = planes(x, c.out[0]);
  detail::dispatch_types<detail::kFloatMask>(x.dtype(), "adaptive_avg_pool2d", [&]<class T>() {
    using C = detail::opmath_t<T>;
    const T* xp = nn_ptr<const T>(x);
    T* yp = nn_ptr<T>(c.out[0]);
    parallel_for(0, g.p * g.oh, nn_row_grain(g.ow * 9), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t pl = r / g.oh, oh = r % g.oh;
        const int64_t h0 = adaptive_start(oh, g.oh, g.h), h1 = adaptive_end(oh, g.oh, g.h);
        const T* plane = xp + pl * g.h * g.w;
        for (int64_t ow = 0; ow < g.ow; ++ow) {
          const int64_t w0 = adaptive_start(ow, g.ow, g.w), w1 = adaptive_end(ow, g.ow, g.w);
          C s = 0;
          for (int64_t h = h0; h < h1; ++h)
            for (int64_t w = w0; w < w1; ++w) s += detail::convert<C>(plane[h * g.w + w]);
          yp[r * g.ow + ow] = detail::convert<T>(s / static_cast<C>((h1 - h0) * (w1 - w0)));
        }
      }
    });
  });
}

void adaptive_avg_backward_kernel(OpCall& c) {
  const Tensor& gi = c.out[0];
  const Planes g = planes(gi, c.in[0]);
  detail::dispatch_types<detail::kFloatMask>(
      gi.dtype(), "adaptive_avg_pool2d_backward", [&]<class T>() {
        using C = detail::opmath_t<T>;
        const T* gp = nn_ptr<const T>(c.in[0]);
        T* op = nn_ptr<T>(gi);
        parallel_for(0, g.p, nn_row_grain(g.h * g.w * 2), [&](int64_t p0, int64_t p1) {
          std::vector<C> acc(g.h * g.w);
          for (int64_t p = p0; p < p1; ++p) {
            std::fill(acc.begin(), acc.end(), C(0));
            for (int64_t oh = 0; oh < g.oh; ++oh) {
              const int64_t h0 = adaptive_start(oh, g.oh, g.h), h1 = adaptive_end(oh, g.oh, g.h);
              for (int64_t ow = 0; ow < g.ow; ++ow) {
                const int64_t w0 = adaptive_start(ow, g.ow, g.w), w1 = adaptive_end(ow, g.ow, g.w);
                const C v = detail::convert<C>(gp[(p * g.oh + oh) * g.ow + ow]) /
                            static_cast<C>((h1 - h0) * (w1 - w0));
                for (int64_t h = h0; h < h1; ++h)
                  for (int64_t w = w0; w < w1; ++w) acc[h * g.w + w] += v;
              }
            }
            for (int64_t j = 0; j < g.h * g.w; ++j)
              op[p * g.h * g.w + j] = detail::convert<T>(acc[j]);
          }
        });
      });
}

}  // namespace

void register_nn_pool_kernels(detail::KernelRegistry& r) {
  r.set(OpId::MaxPool2d, kCPU, &max_pool_kernel<false>);
  r.set(OpId::AdaptiveMaxPool2d, kCPU, &max_pool_kernel<true>);
  r.set(OpId::MaxPool2dBackward, kCPU, &max_pool_backward_kernel);
  r.set(OpId::AvgPool2d, kCPU, &avg_pool_kernel);
  r.set(OpId::AvgPool2dBackward, kCPU, &avg_pool_backward_kernel);
  r.set(OpId::AdaptiveAvgPool2d, kCPU, &adaptive_avg_kernel);
  r.set(OpId::AdaptiveAvgPool2dBackward, kCPU, &adaptive_avg_backward_kernel);
}

}  // namespace kiln::cpu
