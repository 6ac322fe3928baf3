// GPU kernels of Convolution, ConvolutionBackwardInput and ConvolutionBackwardWeight: cuDNN
// (backend/gpu/dnn.h) for float16/bfloat16/float32/float64; without it (or for problems it rejects)
// im2col/col2im + cuBLASLt GEMMs for float32/float64 (float16/bfloat16 computed in float32 then).
#include "backend/gpu/vendor.h"

#include <algorithm>
#include <cstdint>

#include "backend/gpu/blas.h"
#include "backend/gpu/dnn.h"
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

// Elements of the column buffer per chunk of images.
constexpr int64_t kColBudget = int64_t{1} << 26;

// One 5-D convolution: input x [N, C, D, H, W], weight [O, C/G, KD, KH, KW], output y.
struct ConvGeo {
  ColGeo g;
  int64_t o, groups;
  int64_t cg() const { return g.c / groups; }
  int64_t og() const { return o / groups; }
  int64_t kg() const { return cg() * g.kd * g.kh * g.kw; }
  int64_t l() const { return g.od * g.oh * g.ow; }
  int64_t in_plane() const { return g.id * g.ih * g.iw; }
  bool pointwise() const {
    return g.kd == 1 && g.kh == 1 && g.kw == 1 && g.sd == 1 && g.sh == 1 && g.sw == 1 &&
           g.pd == 0 && g.ph == 0 && g.pw == 0;
  }
  // Images per chunk.
  int64_t chunk() const {
    const int64_t per = std::max<int64_t>(1, g.c * g.kd * g.kh * g.kw * l());
    return std::clamp<int64_t>(kColBudget / per, 1, std::max<int64_t>(g.n, 1));
  }
};

// ints = stride[3], padding[3], dilation[3], i0 = groups.
ConvGeo make_geo(const Tensor& x, const Tensor& w, const Tensor& y, const OpAttrs& a) {
  ConvGeo c;
  ColGeo& g = c.g;
  g.n = x.size(0), g.c = x.size(1), g.id = x.size(2), g.ih = x.size(3), g.iw = x.size(4);
  c.o = w.size(0), g.kd = w.size(2), g.kh = w.size(3), g.kw = w.size(4);
  g.od = y.size(2), g.oh = y.size(3), g.ow = y.size(4);
  c.groups = a.i0;
  g.sd = a.ints[0], g.sh = a.ints[1], g.sw = a.ints[2];
  g.pd = a.ints[3], g.ph = a.ints[4], g.pw = a.ints[5];
  g.dd = a.ints[6], g.dh = a.ints[7], g.dw = a.ints[8];
  return c;
}

Launch launch_of(const Tensor& t) {
  const int d = t.device().index >= 0 ? t.device().index : current_device();
  return {d, reinterpret_cast<gpuStream_t>(current_stream(d))};
}

// out[b] = A[b] @ B[b] (+ out[b] when accumulating), through the Bmm GPU kernel.
void gemm(const Tensor& a, const Tensor& b, const Tensor& out, bool accumulate) {
  OpCall m(OpId::Bmm);
  m.in.push_back(a);
  m.in.push_back(b);
  if (accumulate) {
    m.in.push_back(out);
    m.attrs.s1 = Scalar(1);
    m.attrs.has_s1 = true;
  }
  m.out.push_back(out);
  bmm_kernel(m);
}

// A contiguous stand-in for an output (the output itself when contiguous).
Tensor contiguous_out(const Tensor& t) {
  return t.is_contiguous() ? t : empty_impl(t.sizes(), t.dtype(), t.device());
}
void finish_out(const Tensor& dst, const Tensor& buf) {
  if (!buf.is_same(dst)) const_cast<Tensor&>(dst).copy_(buf);
}

constexpr uint32_t kConvMask = dtype_bit(DType::Float32) | dtype_bit(DType::Float64);

dnn::ConvParams dnn_params(const OpAttrs& a) {
  dnn::ConvParams p{};
  for (int i = 0; i < 3; ++i) {
    p.stride[i] = a.ints[i];
    p.pad[i] = a.ints[3 + i];
    p.dil[i] = a.ints[6 + i];
  }
  p.groups = a.i0;
  return p;
}

bool reduced(DType d) { return d == DType::Float16 || d == DType::BFloat16; }

// A float16/bfloat16 problem cuDNN did not run (the library is missing, as on HIP builds, or it
// rejected the problem): the op computed in float32 (`op` on float32 copies), rounded into the
// output.
void half_fallback(OpCall& c, void (*op)(OpCall&)) {
  OpCall f(c.op);
  f.attrs = c.attrs;
  for (const Tensor& t : c.in) f.in.push_back(t.detach().to(DType::Float32));
  f.out.push_back(empty_impl(c.out[0].sizes(), DType::Float32, c.out[0].device()));
  f.compute = DType::Float32;
  op(f);
  const_cast<Tensor&>(c.out[0]).copy_(f.out[0]);
}

// in = (x, w[, bias]); out = y.
void conv_forward_op(OpCall& c) {
  const Launch l = launch_of(c.out[0]);
  DeviceGuard guard(l.device);
  const Tensor x = c.in[0].detach().contiguous(), w = c.in[1].detach().contiguous();
  const Tensor y = contiguous_out(c.out[0]);
  const ConvGeo cv = make_geo(x, w, y, c.attrs);
  if (y.numel() == 0) return;
  const ColGeo& g = cv.g;
  const int64_t G = cv.groups, og = cv.og(), kg = cv.kg(), L = cv.l();
  if (kg == 0) {
    const_cast<Tensor&>(y).zero_();
  } else if (dnn::conv_forward(x, w, y, dnn_params(c.attrs))) {
  } else if (reduced(x.dtype())) {
    return half_fallback(c, &conv_forward_op);
  } else {
    dispatch_types<kConvMask>(x.dtype(), "convolution", [&]<class T>() {
      const int64_t nb = cv.chunk();
      Tensor cols = cv.pointwise()
                        ? Tensor()
                        : empty_impl({nb, g.c * g.kd * g.kh * g.kw, L}, x.dtype(), y.device());
      const Tensor wv = w.view({G, og, kg});
      const Tensor yv = y.view({g.n, G, og, L});
      for (int64_t n0 = 0; n0 < g.n; n0 += nb) {
        const int64_t m = std::min(nb, g.n - n0);
        Tensor colv;
        if (cv.pointwise()) {
          colv = x.narrow(0, n0, m).view({m, G, kg, L});
        } else {
          ColGeo gg = g;
          gg.n = m;
          im2col_gpu<T>(static_cast<const T*>(x.data_ptr()) + n0 * g.c * cv.in_plane(),
                        static_cast<T*>(cols.data_ptr()), gg, l);
          check_launch("convolution", reinterpret_cast<uintptr_t>(l.stream));
          colv = cols.narrow(0, 0, m).view({m, G, kg, L});
        }
        for (int64_t gi = 0; gi < G; ++gi)
          gemm(wv.select(0, gi).unsqueeze(0).expand({m, og, kg}), colv.select(1, gi),
               yv.narrow(0, n0, m).select(1, gi), false);
      }
    });
  }
  if (c.attrs.flag)
    const_cast<Tensor&>(y).add_(c.in[2].detach().view({1, cv.o, 1, 1, 1}).to(y.dtype()));
  finish_out(c.out[0], y);
}

// in = (grad y, w); out = grad x (its shape gives the input's).
void conv_backward_input_op(OpCall& c) {
  const Launch l = launch_of(c.out[0]);
  DeviceGuard guard(l.device);
  const Tensor gy = c.in[0].detach().contiguous(), w = c.in[1].detach().contiguous();
  const Tensor gx = contiguous_out(c.out[0]);
  const ConvGeo cv = make_geo(gx, w, gy, c.attrs);
  if (gx.numel() == 0) return;
  const ColGeo& g = cv.g;
  const int64_t G = cv.groups, og = cv.og(), kg = cv.kg(), L = cv.l();
  if (kg == 0 || L == 0 || og == 0) {
    const_cast<Tensor&>(gx).zero_();
  } else if (dnn::conv_backward_data(gy, w, gx, dnn_params(c.attrs))) {
  } else if (reduced(gy.dtype())) {
    return half_fallback(c, &conv_backward_input_op);
  } else {
    dispatch_types<kConvMask>(gy.dtype(), "convolution_backward_input", [&]<class T>() {
      const int64_t nb = cv.chunk();
      Tensor cols = cv.pointwise()
                        ? Tensor()
                        : empty_impl({nb, g.c * g.kd * g.kh * g.kw, L}, gy.dtype(), gx.device());
      const Tensor wv = w.view({G, og, kg});
      const Tensor gyv = gy.view({g.n, G, og, L});
      for (int64_t n0 = 0; n0 < g.n; n0 += nb) {
        const int64_t m = std::min(nb, g.n - n0);
        const Tensor colv = cv.pointwise() ? gx.narrow(0, n0, m).view({m, G, kg, L})
                                           : cols.narrow(0, 0, m).view({m, G, kg, L});
        for (int64_t gi = 0; gi < G; ++gi)
          gemm(wv.select(0, gi).t().unsqueeze(0).expand({m, kg, og}),
               gyv.narrow(0, n0, m).select(1, gi), colv.select(1, gi), false);
        if (!cv.pointwise()) {
          ColGeo gg = g;
          gg.n = m;
          col2im_gpu<T>(static_cast<const T*>(cols.data_ptr()),
                        static_cast<T*>(gx.data_ptr()) + n0 * g.c * cv.in_plane(), gg, l);
          check_launch("convolution_backward_input", reinterpret_cast<uintptr_t>(l.stream));
        }
      }
    });
  }
  finish_out(c.out[0], gx);
}

// in = (grad y, x); out = grad w (its shape gives the weight's). Per chunk and group, the
// per-image products are summed over the images by the (deterministic) GPU sum.
void conv_backward_weight_op(OpCall& c) {
  const Launch l = launch_of(c.out[0]);
  DeviceGuard guard(l.device);
  const Tensor gy = c.in[0].detach().contiguous(), x = c.in[1].detach().contiguous();
  const Tensor gw = contiguous_out(c.out[0]);
  const ConvGeo cv = make_geo(x, gw, gy, c.attrs);
  if (gw.numel() == 0) return;
  const ColGeo& g = cv.g;
  const int64_t G = cv.groups, og = cv.og(), kg = cv.kg(), L = cv.l();
  const bool work = kg > 0 && L > 0 && og > 0 && g.n > 0;
  if (work && dnn::conv_backward_filter(gy, x, gw, dnn_params(c.attrs)))
    return finish_out(c.out[0], gw);
  if (work && reduced(gy.dtype())) return half_fallback(c, &conv_backward_weight_op);
  const_cast<Tensor&>(gw).zero_();
  if (work) {
    dispatch_types<kConvMask>(gy.dtype(), "convolution_backward_weight", [&]<class T>() {
      const int64_t nb = cv.chunk();
      Tensor cols = cv.pointwise()
                        ? Tensor()
                        : empty_impl({nb, g.c * g.kd * g.kh * g.kw, L}, gy.dtype(), gw.device());
      Tensor part = empty_impl({nb, og, kg}, gy.dtype(), gw.device());
      const Tensor gwv = gw.view({G, og, kg});
      const Tensor gyv = gy.view({g.n, G, og, L});
      for (int64_t n0 = 0; n0 < g.n; n0 += nb) {
        const int64_t m = std::min(nb, g.n - n0);
        Tensor colv;
        if (cv.pointwise()) {
          colv = x.narrow(0, n0, m).view({m, G, kg, L});
        } else {
          ColGeo gg = g;
          gg.n = m;
          im2col_gpu<T>(static_cast<const T*>(x.data_ptr()) + n0 * g.c * cv.in_plane(),
                        static_cast<T*>(cols.data_ptr()), gg, l);
          check_launch("convolution_backward_weight", reinterpret_cast<uintptr_t>(l.stream));
          colv = cols.narrow(0, 0, m).view({m, G, kg, L});
        }
        const Tensor pm = part.narrow(0, 0, m);
        for (int64_t gi = 0; gi < G; ++gi) {
          gemm(gyv.narrow(0, n0, m).select(1, gi), colv.select(1, gi).transpose(1, 2), pm, false);
          const_cast<Tensor&>(gwv).select(0, gi).add_(pm.sum({0}));
        }
      }
    });
  }
  finish_out(c.out[0], gw);
}

}  // namespace

}  // namespace conv

void register_conv_ops(detail::KernelRegistry& r) {
  r.set(OpId::Convolution, kCUDA, &conv::conv_forward_op);
  r.set(OpId::ConvolutionBackwardInput, kCUDA, &conv::conv_backward_input_op);
  r.set(OpId::ConvolutionBackwardWeight, kCUDA, &conv::conv_backward_weight_op);
}

}  // namespace kiln::gpu
