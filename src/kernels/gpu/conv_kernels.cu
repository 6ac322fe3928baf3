// GPU kernels of im2col / col2im (F.unfold / F.fold) on 3-D geometries (2-D ops use D = 1),
// and the registration of the convolution (conv_ops.cu) and pooling (pool_kernels.cu) kernels.
// col2im gathers in the CPU kernel's order of additions: results match nn_conv_kernels.cpp.
#include "backend/gpu/vendor.h"

#include <cstdint>

#include "backend/gpu/runtime.h"
#include "backend/gpu/stream.h"
#include "core/dispatch_dtype.h"
#include "dispatch/registry.h"
#include "kernels/gpu/conv_common.cuh"
#include "ops/op.h"
#include "ops/tensor_factory.h"

namespace kiln::gpu {

namespace conv {

using namespace ::kiln::detail;  // dtype masks

namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < (int64_t{1} << 20) ? (b > 0 ? b : 1) : (int64_t{1} << 20));
}

// cols [N, C*KD*KH*KW, OD*OH*OW] of x [N, C, D, H, W] (zero outside the input).
template <class T>
__global__ void im2col_kernel(const T* x, T* cols, ColGeo g) {
  const int64_t l = g.od * g.oh * g.ow, rows = g.c * g.kd * g.kh * g.kw;
  const int64_t total = g.n * rows * l, step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += step) {
    int64_t q = t;
    const int64_t ow = q % g.ow;
    q /= g.ow;
    const int64_t oh = q % g.oh;
    q /= g.oh;
    const int64_t od = q % g.od;
    q /= g.od;
    const int64_t kw = q % g.kw;
    q /= g.kw;
    const int64_t kh = q % g.kh;
    q /= g.kh;
    const int64_t kd = q % g.kd;
    q /= g.kd;  // q = n * C + c
    const int64_t d = od * g.sd - g.pd + kd * g.dd, h = oh * g.sh - g.ph + kh * g.dh,
                  w = ow * g.sw - g.pw + kw * g.dw;
    const bool in = d >= 0 && d < g.id && h >= 0 && h < g.ih && w >= 0 && w < g.iw;
    cols[t] = in ? x[((q * g.id + d) * g.ih + h) * g.iw + w] : T(0);
  }
}

// x [N, C, D, H, W] = the sum of the cols entries that im2col would copy from each element,
// added in (kd, kh, kw) order as the CPU's col2im.
template <class T>
__global__ void col2im_kernel(const T* cols, T* x, ColGeo g) {
  const int64_t l = g.od * g.oh * g.ow, k = g.kd * g.kh * g.kw;
  const int64_t total = g.n * g.c * g.id * g.ih * g.iw;
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += step) {
    int64_t q = t;
    const int64_t w = q % g.iw;
    q /= g.iw;
    const int64_t h = q % g.ih;
    q /= g.ih;
    const int64_t d = q % g.id;
    q /= g.id;  // q = n * C + c
    const T* base = cols + q * k * l;
    T s = T(0);
    for (int64_t kd = 0; kd < g.kd; ++kd) {
      const int64_t a = d + g.pd - kd * g.dd;
      if (a < 0 || a % g.sd != 0 || a / g.sd >= g.od) continue;
      for (int64_t kh = 0; kh < g.kh; ++kh) {
        const int64_t b = h + g.ph - kh * g.dh;
        if (b < 0 || b % g.sh != 0 || b / g.sh >= g.oh) continue;
        for (int64_t kw = 0; kw < g.kw; ++kw) {
          const int64_t e = w + g.pw - kw * g.dw;
          if (e < 0 || e % g.sw != 0 || e / g.sw >= g.ow) continue;
          const int64_t row = (kd * g.kh + kh) * g.kw + kw;
          s += base[row * l + ((a / g.sd) * g.oh + b / g.sh) * g.ow + e / g.sw];
        }
      }
    }
    x[t] = s;
  }
}

int64_t sliding(int64_t in, int64_t k, int64_t d, int64_t p, int64_t s) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

// The 2-D geometry of Im2Col/Col2Im: ints = kernel[2], dilation[2], padding[2], stride[2].
ColGeo im2col_geo(const Tensor& img, const OpAttrs& a) {
  ColGeo g{};
  g.n = img.size(0), g.c = img.size(1), g.id = 1, g.ih = img.size(2), g.iw = img.size(3);
  g.kd = 1, g.kh = a.ints[0], g.kw = a.ints[1];
  g.sd = 1, g.sh = a.ints[6], g.sw = a.ints[7];
  g.pd = 0, g.ph = a.ints[4], g.pw = a.ints[5];
  g.dd = 1, g.dh = a.ints[2], g.dw = a.ints[3];
  g.od = 1;
  g.oh = sliding(g.ih, g.kh, g.dh, g.ph, g.sh);
  g.ow = sliding(g.iw, g.kw, g.dw, g.pw, g.sw);
  return g;
}

Launch launch_of(const Tensor& t) {
  const int d = t.device().index >= 0 ? t.device().index : current_device();
  return {d, reinterpret_cast<gpuStream_t>(current_stream(d))};
}

// Im2Col: x [N, C, H, W] -> [N, C*kh*kw, L]; Col2Im the reverse (sum).
template <bool kCol2Im>
void im2col_op(OpCall& c) {
  const Launch l = launch_of(c.out[0]);
  DeviceGuard guard(l.device);
  const Tensor in = c.in[0].contiguous();
  const Tensor& out = c.out[0];
  const ColGeo g = im2col_geo(kCol2Im ? out : in, c.attrs);
  Tensor buf = out.is_contiguous() ? out : empty_impl(out.sizes(), out.dtype(), out.device());
  if (out.numel() > 0) {
    dispatch_types<kFloatMask & ~kReducedFloatMask>(in.dtype(), op_name(c.op), [&]<class T>() {
      if constexpr (kCol2Im)
        col2im_gpu<T>(static_cast<const T*>(in.data_ptr()), static_cast<T*>(buf.data_ptr()), g, l);
      else
        im2col_gpu<T>(static_cast<const T*>(in.data_ptr()), static_cast<T*>(buf.data_ptr()), g, l);
    });
    check_launch(op_name(c.op), reinterpret_cast<uintptr_t>(l.stream));
  }
  if (!buf.is_same(out)) const_cast<Tensor&>(out).copy_(buf);
}

}  // namespace

template <class T>
void im2col_gpu(const T* x, T* cols, const ColGeo& g, const Launch& l) {
  const int64_t total = g.n * g.c * g.kd * g.kh * g.kw * g.od * g.oh * g.ow;
  if (total > 0) im2col_kernel<T><<<blocks_for(total), kThreads, 0, l.stream>>>(x, cols, g);
}
template <class T>
void col2im_gpu(const T* cols, T* x, const ColGeo& g, const Launch& l) {
  const int64_t total = g.n * g.c * g.id * g.ih * g.iw;
  if (total > 0) col2im_kernel<T><<<blocks_for(total), kThreads, 0, l.stream>>>(cols, x, g);
}
template void im2col_gpu<float>(const float*, float*, const ColGeo&, const Launch&);
template void im2col_gpu<double>(const double*, double*, const ColGeo&, const Launch&);
template void col2im_gpu<float>(const float*, float*, const ColGeo&, const Launch&);
template void col2im_gpu<double>(const double*, double*, const ColGeo&, const Launch&);

}  // namespace conv

void register_pool_kernels(detail::KernelRegistry& r);  // pool_kernels.cu
void register_conv_ops(detail::KernelRegistry& r);      // conv_ops.cu

void register_conv_kernels(detail::KernelRegistry& r) {
  r.set(OpId::Im2Col, kCUDA, &conv::im2col_op<false>);
  r.set(OpId::Col2Im, kCUDA, &conv::im2col_op<true>);
  register_pool_kernels(r);
  register_conv_ops(r);
}

}  // namespace kiln::gpu
