// GPU kernels of 2-D pooling on contiguous [N, C, H, W]: max (with indices), average, adaptive
// average/max, and their backward ops, with the CPU kernels' windows and summation orders
// (nn_pool_kernels.cpp), so results match them bit for bit and do not depend on timing.
#include "backend/gpu/vendor.h"

#include <cstdint>
#include <limits>
#include <type_traits>

#include "backend/gpu/dnn.h"
#include "backend/gpu/runtime.h"
#include "backend/gpu/stream.h"
#include "core/dispatch_dtype.h"
#include "dispatch/registry.h"
#include "kernels/convert.h"
#include "ops/op.h"
#include "ops/tensor_factory.h"

namespace kiln::gpu {

namespace pool {

using namespace ::kiln::detail;  // dtype masks, convert, opmath_t

namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < (int64_t{1} << 20) ? (b > 0 ? b : 1) : (int64_t{1} << 20));
}

struct Planes {
  int64_t p, h, w, oh, ow;
};
Planes planes(const Tensor& in, const Tensor& out) {
  return {in.size(0) * in.size(1), in.size(2), in.size(3), out.size(2), out.size(3)};
}

// ints of the non-adaptive pools: kernel[2], stride[2], padding[2], dilation[2] (max only).
struct Win {
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;
};
Win win_of(const OpCall& c, bool dilation) {
  const auto& a = c.attrs.ints;
  return {a[0], a[1], a[2], a[3], a[4], a[5], dilation ? a[6] : 1, dilation ? a[7] : 1};
}

struct Launch {
  int device;
  gpuStream_t stream;
};
Launch launch_of(const Tensor& t) {
  const int d = t.device().index >= 0 ? t.device().index : current_device();
  return {d, reinterpret_cast<gpuStream_t>(current_stream(d))};
}

// A contiguous buffer for `t` (t itself when contiguous); finish() copies it back.
struct OutBuf {
  Tensor dst, buf;
  explicit OutBuf(const Tensor& t)
      : dst(t), buf(t.is_contiguous() ? t : empty_impl(t.sizes(), t.dtype(), t.device())) {}
  template <class T>
  T* ptr() const {
    return static_cast<T*>(buf.data_ptr());
  }
  void finish() const {
    if (!buf.is_same(dst)) const_cast<Tensor&>(dst).copy_(buf);
  }
};

KILN_HD inline int64_t adaptive_start(int64_t o, int64_t out, int64_t in) { return (o * in) / out; }
KILN_HD inline int64_t adaptive_end(int64_t o, int64_t out, int64_t in) {
  return ((o + 1) * in + out - 1) / out;
}

template <class T, bool kAdaptive>
__global__ void max_pool_kernel(const T* x, T* y, int64_t* idx, Planes g, Win a) {
  using C = opmath_t<T>;
  const int64_t total = g.p * g.oh * g.ow, step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += step) {
    const int64_t ow = t % g.ow, r = t / g.ow, oh = r % g.oh, pl = r / g.oh;
    const T* plane = x + pl * g.h * g.w;
    int64_t h0, h1, w0, w1, dh = 1, dw = 1;
    if constexpr (kAdaptive) {
      h0 = adaptive_start(oh, g.oh, g.h), h1 = adaptive_end(oh, g.oh, g.h);
      w0 = adaptive_start(ow, g.ow, g.w), w1 = adaptive_end(ow, g.ow, g.w);
    } else {
      dh = a.dh, dw = a.dw;
      h0 = oh * a.sh - a.ph, w0 = ow * a.sw - a.pw;
      h1 = h0 + (a.kh - 1) * dh + 1 < g.h ? h0 + (a.kh - 1) * dh + 1 : g.h;
      w1 = w0 + (a.kw - 1) * dw + 1 < g.w ? w0 + (a.kw - 1) * dw + 1 : g.w;
      while (h0 < 0) h0 += dh;
      while (w0 < 0) w0 += dw;
    }
    C best = std::numeric_limits<C>::lowest();
    if constexpr (!std::is_integral_v<C>) best = -std::numeric_limits<C>::infinity();
    int64_t bi = h0 * g.w + w0;
    bool found_nan = false;
    for (int64_t h = h0; h < h1 && !found_nan; h += dh)
      for (int64_t w = w0; w < w1; w += dw) {
        const C v = convert<C>(plane[h * g.w + w]);
        if (v > best || v != v) {
          best = v, bi = h * g.w + w;
          if (v != v) {
            found_nan = true;
            break;
          }
        }
      }
    y[t] = convert<T>(best);
    idx[t] = bi;
  }
}

template <bool kAdaptive>
void max_pool_op(OpCall& c) {
  const Launch l = launch_of(c.out[0]);
  DeviceGuard guard(l.device);
  const Tensor x = c.in[0].contiguous();
  OutBuf y(c.out[0]), ix(c.out[1]);
  const Planes g = planes(x, c.out[0]);
  const Win a = kAdaptive ? Win{} : win_of(c, true);
  const int64_t total = g.p * g.oh * g.ow;
  if (total == 0) return;
  dispatch_types<kFloatMask | kIntMask>(x.dtype(), op_name(c.op), [&]<class T>() {
    max_pool_kernel<T, kAdaptive><<<blocks_for(total), kThreads, 0, l.stream>>>(
        static_cast<const T*>(x.data_ptr()), y.ptr<T>(), ix.ptr<int64_t>(), g, a);
  });
  check_launch(op_name(c.op), reinterpret_cast<uintptr_t>(l.stream));
  y.finish();
  ix.finish();
}

// One thread per plane, the CPU's order of additions (outputs in order), accumulated in C.
template <class T>
__global__ void max_pool_backward_kernel(const T* gy, const int64_t* idx, opmath_t<T>* acc, T* gx,
                                         Planes g, int* bad) {
  using C = opmath_t<T>;
  const int64_t hw = g.h * g.w, ohw = g.oh * g.ow;
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < g.p;
       p += step) {
    C* a = acc + p * hw;
    for (int64_t j = 0; j < hw; ++j) a[j] = C(0);
    for (int64_t i = 0; i < ohw; ++i) {
      const int64_t j = idx[p * ohw + i];
      if (j < 0 || j >= hw) {
        *bad = 1;
        continue;
      }
      a[j] += convert<C>(gy[p * ohw + i]);
    }
    for (int64_t j = 0; j < hw; ++j) gx[p * hw + j] = convert<T>(a[j]);
  }
}

// in = (grad [N, C, OH, OW], indices); out [N, C, H, W]: grad summed at the indices.
void max_pool_backward_op(OpCall& c) {
  const Launch l = launch_of(c.out[0]);
  DeviceGuard guard(l.device);
  const Tensor gy = c.in[0].contiguous(), idx = c.in[1].contiguous();
  OutBuf gx(c.out[0]);
  const Planes g = planes(c.out[0], gy);
  const int64_t hw = g.h * g.w;
  if (g.p * hw == 0) return;
  Tensor flag = empty_impl({1}, DType::Int32, Device(kCUDA, l.device));
  KILN_GPU_CHECK("max_pool2d_backward", gpuMemsetAsync(flag.data_ptr(), 0, sizeof(int), l.stream));
  dispatch_types<kFloatMask>(gx.buf.dtype(), "max_pool2d_backward", [&]<class T>() {
    using C = opmath_t<T>;
    Tensor acc = empty_impl({g.p * hw}, dtype_of<C>(), Device(kCUDA, l.device));
    max_pool_backward_kernel<T><<<blocks_for(g.p), kThreads, 0, l.stream>>>(
        static_cast<const T*>(gy.data_ptr()), static_cast<const int64_t*>(idx.data_ptr()),
        static_cast<C*>(acc.data_ptr()), gx.ptr<T>(), g, static_cast<int*>(flag.data_ptr()));
  });
  check_launch("max_pool2d_backward", reinterpret_cast<uintptr_t>(l.stream));
  KILN_CHECK(flag.item<int>() == 0, "[", op_name(c.op),
             "] an index is out of range for an output plane of ", hw, " elements");
  gx.finish();
}

// PyTorch's average-pool window (as avg_window in nn_pool_kernels.cpp).
struct AvgWin {
  int64_t h0, h1, w0, w1, div;
};
__device__ inline AvgWin avg_window(const Win& a, const Planes& g, int64_t oh, int64_t ow,
                                    bool include_pad, int64_t divisor) {
  int64_t h0 = oh * a.sh - a.ph, w0 = ow * a.sw - a.pw;
  int64_t h1 = h0 + a.kh < g.h + a.ph ? h0 + a.kh : g.h + a.ph;
  int64_t w1 = w0 + a.kw < g.w + a.pw ? w0 + a.kw : g.w + a.pw;
  const int64_t pool = (h1 - h0) * (w1 - w0);
  h0 = h0 > 0 ? h0 : 0, w0 = w0 > 0 ? w0 : 0;
  h1 = h1 < g.h ? h1 : g.h, w1 = w1 < g.w ? w1 : g.w;
  const int64_t div = divisor ? divisor : include_pad ? pool : (h1 - h0) * (w1 - w0);
  return {h0, h1, w0, w1, div};
}

template <class T, bool kAdaptive>
__global__ void avg_pool_kernel(const T* x, T* y, Planes g, Win a, bool include_pad,
                                int64_t divisor) {
  using C = opmath_t<T>;
  const int64_t total = g.p * g.oh * g.ow, step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += step) {
    const int64_t ow = t % g.ow, r = t / g.ow, oh = r % g.oh, pl = r / g.oh;
    const T* plane = x + pl * g.h * g.w;
    AvgWin win;
    if constexpr (kAdaptive) {
      win.h0 = adaptive_start(oh, g.oh, g.h), win.h1 = adaptive_end(oh, g.oh, g.h);
      win.w0 = adaptive_start(ow, g.ow, g.w), win.w1 = adaptive_end(ow, g.ow, g.w);
      win.div = (win.h1 - win.h0) * (win.w1 - win.w0);
    } else {
      win = avg_window(a, g, oh, ow, include_pad, divisor);
    }
    C s = 0;
    for (int64_t h = win.h0; h < win.h1; ++h)
      for (int64_t w = win.w0; w < win.w1; ++w) s += convert<C>(plane[h * g.w + w]);
    y[t] = convert<T>(s / static_cast<C>(win.div));
  }
}

// The backward as a gather: each input element sums, in the CPU's (oh, ow) order, the outputs
// whose window holds it.
template <class T, bool kAdaptive>
__global__ void avg_pool_backward_kernel(const T* gy, T* gx, Planes g, Win a, bool include_pad,
                                         int64_t divisor) {
  using C = opmath_t<T>;
  const int64_t total = g.p * g.h * g.w, step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += step) {
    const int64_t w = t % g.w, r = t / g.w, h = r % g.h, pl = r / g.h;
    int64_t oh0, oh1, ow0, ow1;  // candidate outputs (a superset)
    if constexpr (kAdaptive) {
      oh0 = (h * g.oh) / g.h - 1, oh1 = ((h + 1) * g.oh + g.h - 1) / g.h + 1;
      ow0 = (w * g.ow) / g.w - 1, ow1 = ((w + 1) * g.ow + g.w - 1) / g.w + 1;
    } else {
      oh0 = (h + a.ph - a.kh) / a.sh - 1, oh1 = (h + a.ph) / a.sh + 1;
      ow0 = (w + a.pw - a.kw) / a.sw - 1, ow1 = (w + a.pw) / a.sw + 1;
    }
    oh0 = oh0 > 0 ? oh0 : 0, ow0 = ow0 > 0 ? ow0 : 0;
    oh1 = oh1 < g.oh ? oh1 : g.oh, ow1 = ow1 < g.ow ? ow1 : g.ow;
    const T* gp = gy + pl * g.oh * g.ow;
    C s = 0;
    for (int64_t oh = oh0; oh < oh1; ++oh)
      for (int64_t ow = ow0; ow < ow1; ++ow) {
        AvgWin win;
        if constexpr (kAdaptive) {
          win.h0 = adaptive_start(oh, g.oh, g.h), win.h1 = adaptive_end(oh, g.oh, g.h);
          win.w0 = adaptive_start(ow, g.ow, g.w), win.w1 = adaptive_end(ow, g.ow, g.w);
          win.div = (win.h1 - win.h0) * (win.w1 - win.w0);
        } else {
          win = avg_window(a, g, oh, ow, include_pad, divisor);
        }
        if (h < win.h0 || h >= win.h1 || w < win.w0 || w >= win.w1) continue;
        s += convert<C>(gp[oh * g.ow + ow]) / static_cast<C>(win.div);
      }
    gx[t] = convert<T>(s);
  }
}

// Forward: in = (x), out = (y); backward: in = (grad y), out = (grad x). ints = kernel[2],
// stride[2], padding[2] (non-adaptive); flag = count_include_pad; i0 = divisor_override.
template <bool kAdaptive, bool kBackward>
void avg_pool_op(OpCall& c) {
  const Launch l = launch_of(c.out[0]);
  DeviceGuard guard(l.device);
  const Tensor in = c.in[0].contiguous();
  OutBuf o(c.out[0]);
  const Planes g = kBackward ? planes(c.out[0], in) : planes(in, c.out[0]);
  const Win a = kAdaptive ? Win{} : win_of(c, false);
  const bool pad = c.attrs.flag;
  const int64_t div = kAdaptive ? 0 : c.attrs.i0;
  const int64_t total = kBackward ? g.p * g.h * g.w : g.p * g.oh * g.ow;
  if (total == 0) return;
  if constexpr (!kAdaptive && kBackward) {
    // Note [cuDNN pooling] (backend/gpu/dnn.h): the backward only.
    if (div == 0 &&
        dnn::avg_pool2d(in, o.buf, kBackward, {{a.kh, a.kw}, {a.sh, a.sw}, {a.ph, a.pw}, pad})) {
      o.finish();
      return;
    }
  }
  dispatch_types<kFloatMask>(in.dtype(), op_name(c.op), [&]<class T>() {
    const T* ip = static_cast<const T*>(in.data_ptr());
    if constexpr (kBackward)
      avg_pool_backward_kernel<T, kAdaptive>
          <<<blocks_for(total), kThreads, 0, l.stream>>>(ip, o.ptr<T>(), g, a, pad, div);
    else
      avg_pool_kernel<T, kAdaptive>
          <<<blocks_for(total), kThreads, 0, l.stream>>>(ip, o.ptr<T>(), g, a, pad, div);
  });
  check_launch(op_name(c.op), reinterpret_cast<uintptr_t>(l.stream));
  o.finish();
}

}  // namespace

}  // namespace pool

void register_pool_kernels(detail::KernelRegistry& r) {
  using namespace pool;
  r.set(OpId::MaxPool2d, kCUDA, &max_pool_op<false>);
  r.set(OpId::AdaptiveMaxPool2d, kCUDA, &max_pool_op<true>);
  r.set(OpId::MaxPool2dBackward, kCUDA, &max_pool_backward_op);
  r.set(OpId::AvgPool2d, kCUDA, &avg_pool_op<false, false>);
  r.set(OpId::AvgPool2dBackward, kCUDA, &avg_pool_op<false, true>);
  r.set(OpId::AdaptiveAvgPool2d, kCUDA, &avg_pool_op<true, false>);
  r.set(OpId::AdaptiveAvgPool2dBackward, kCUDA, &avg_pool_op<true, true>);
}

}  // namespace kiln::gpu
