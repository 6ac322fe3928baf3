// Fused scaled-dot-product attention on the GPU (forward, backward, variable length): picks the
// tensor-core kernels (flash_mma.cuh, CUDA sm_80+, float16/bfloat16, head dim 64/128) or the
// portable ones (flash_portable.cuh), and runs the backward's pre-pass, dq and GQA reductions.
#include "backend/gpu/vendor.h"

#include "backend/gpu/runtime.h"
#include "backend/gpu/stream.h"
#include "core/dispatch_dtype.h"
#include "dispatch/registry.h"
#include "kernels/gpu/attention/flash_call.h"
#include "kernels/gpu/attention/flash_mma.cuh"
#include "kernels/gpu/attention/flash_mma_bwd.cuh"
#include "kernels/gpu/attention/flash_portable.cuh"
#if KILN_HAVE_SM90
#include "kernels/gpu/attention/sm90/flash_sm90.h"
#endif
#include "kiln/nn/attention.h"
#include "kiln/ops.h"
#include "kiln/ops/determinism.h"
#include "ops/tensor_factory.h"

namespace kiln::gpu {
namespace {

using detail::FlashParams;
using namespace flash;

inline gpuStream_t as_gpu_stream(StreamHandle s) { return reinterpret_cast<gpuStream_t>(s); }

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct Launch {
  int device;
  gpuStream_t stream;
};

Launch launch_of(const Tensor& t) {
  const int dev = t.device().index >= 0 ? t.device().index : current_device();
  return {dev, as_gpu_stream(current_stream(dev))};
}

void check_grid(const char* op, const FlashParams& p) {
  KILN_CHECK(p.hq <= 65535 && p.b <= 65535, "[", op, "] batch ", p.b, " and heads ", p.hq,
             " must each be at most 65535 on the GPU");
  KILN_CHECK(p.d >= 1 && p.d <= 256, "[", op, "] head dim ", p.d,
             " is not supported by the GPU kernels (1 .. 256)");
}

// f.template operator()<kMaxD>() for the smallest supported tile width holding d.
template <class F>
void dispatch_d(int d, F&& f) {
  if (d <= 64)
    f.template operator()<64>();
  else if (d <= 128)
    f.template operator()<128>();
  else
    f.template operator()<256>();
}

template <class T>
void forward(const char* op, FlashParams& p, const Launch& l) {
  if (p.tq == 0) return;
#if KILN_HAVE_SM90
  if (sm90_forward(p, dtype_of<T>(), l.device, l.stream)) {
    check_launch(op, reinterpret_cast<uintptr_t>(l.stream));
    kiln::detail::set_attention_backend("flash_sm90");
    return;
  }
#endif
  if (mma_forward_supported<T>(p)) {
    mma_forward<T>(p, l.stream);
    check_launch(op, reinterpret_cast<uintptr_t>(l.stream));
    kiln::detail::set_attention_backend("flash_mma");
    return;
  }
  dispatch_d(p.d, [&]<int kMaxD>() {
    const dim3 grid(static_cast<unsigned>(cdiv(p.tq, SimtShape<kMaxD>::kTile)),
                    static_cast<unsigned>(p.hq), static_cast<unsigned>(p.b));
    simt_forward<T, kMaxD><<<grid, kSimtThreads, 0, l.stream>>>(p);
  });
  check_launch(op, reinterpret_cast<uintptr_t>(l.stream));
  kiln::detail::set_attention_backend("flash");
}

template <class T>
void backward(const char* op, OpCall& c, FlashParams& p, const Launch& l) {
  const Tensor& q = c.in[1];
  const Tensor& k = c.in[2];
  const Device dev = q.device();
  const bool det = are_deterministic_algorithms_enabled();
  const bool mma = mma_backward_supported<T>(p);
  // delta = rowsum(grad_o * o), in lse's layout (the portable kernels and the deterministic dq
  // pass read it).
  Tensor delta;
  if (!mma || det) {
    delta = kiln::detail::empty_impl(c.in[5].sizes(), DType::Float32, dev);
    p.delta = static_cast<float*>(delta.data_ptr());
  }
  Tensor dq_acc;
  if (!det) {
    // The tensor-core pre-pass zeroes the accumulator itself.
    dq_acc = mma ? kiln::detail::empty_impl(q.sizes(), DType::Float32, dev)
                 : kiln::zeros(q.sizes(), TensorOptions(DType::Float32).device(dev));
    p.dq_acc = static_cast<float*>(dq_acc.data_ptr());
  }
  // Tensor-core path: dl and l2 rows per (batch, head), padded (Note [Flash mma backward
  // pre-pass]).
  Tensor prep;
  const int64_t pad = bwd_pad_rows(p.tq);
  if (mma) prep = kiln::detail::empty_impl({2, p.b, p.hq, pad}, DType::Float32, dev);
  if (mma && p.tq > 0) {
    float* l2 = static_cast<float*>(prep.data_ptr());
    mma_backward_prep<T>(p, l2, l2 + static_cast<int64_t>(p.b) * p.hq * pad, pad, l.stream);
    check_launch(op, reinterpret_cast<uintptr_t>(l.stream));
  } else if (p.tq > 0) {
    const dim3 grid(static_cast<unsigned>(cdiv(p.tq, 128)), static_cast<unsigned>(p.hq),
                    static_cast<unsigned>(p.b));
    simt_delta<T><<<grid, 128, 0, l.stream>>>(p, p.tq);
    check_launch(op, reinterpret_cast<uintptr_t>(l.stream));
  }
  // Grouped-query attention: per-query-head float partial sums of dk / dv, reduced below.
  Tensor dk_part, dv_part;
  const bool gqa = p.hq != p.hk;
  if (gqa) {
    DimVector sz(k.sizes().begin(), k.sizes().end());
    sz[1] = p.hq;  // [B, Hq, Tk, D] or [Nk, Hq, D]
    dk_part = kiln::detail::empty_impl(sz, DType::Float32, dev);
    dv_part = kiln::detail::empty_impl(sz, DType::Float32, dev);
    p.dk = dk_part.data_ptr();
    p.dv = dv_part.data_ptr();
    p.dkv_f32 = true;
    if (detail::flash_is_varlen(c.op)) {
      p.dk_sh = p.d;
      p.dk_sr = static_cast<int64_t>(p.hq) * p.d;
    } else {
      p.dk_sr = p.d;
      p.dk_sh = p.tk * p.d;
      p.dk_sb = p.hq * p.dk_sh;
    }
  }
  const char* backend = "flash";
  bool cast_pdl = false;  // the dq cast launches as the sm90 kernel's programmatic dependent
  if (p.tk > 0) {
    if (mma) {
      float* l2 = static_cast<float*>(prep.data_ptr());
      const float* dl = l2 + static_cast<int64_t>(p.b) * p.hq * pad;
      backend = "flash_mma";
#if KILN_HAVE_SM90
      // The Hopper dK / dV kernel (dq by atomics: not in deterministic mode).
      if (p.dq_acc && sm90_backward(p, dtype_of<T>(), l.device, l.stream, l2, dl, pad)) {
        backend = "flash_sm90";
        cast_pdl = sm90_backward_pdl();
      } else
#endif
        // dq by atomics unless p.dq_acc is null
        mma_backward_kv<T>(p, l2, dl, pad, l.stream);
    } else {
      dispatch_d(p.d, [&]<int kMaxD>() {
        const dim3 grid(static_cast<unsigned>(cdiv(p.tk, SimtShape<kMaxD>::kTile)),
                        static_cast<unsigned>(p.hq), static_cast<unsigned>(p.b));
        simt_backward_kv<T, kMaxD><<<grid, kSimtThreads, 0, l.stream>>>(p, !det);
      });
    }
    check_launch(op, reinterpret_cast<uintptr_t>(l.stream));
  }
  if (det) {
    // Deterministic dq: a separate pass per query tile, no atomics.
    if (p.tq > 0) {
      dispatch_d(p.d, [&]<int kMaxD>() {
        const dim3 grid(static_cast<unsigned>(cdiv(p.tq, SimtShape<kMaxD>::kTile)),
                        static_cast<unsigned>(p.hq), static_cast<unsigned>(p.b));
        simt_backward_q<T, kMaxD><<<grid, kSimtThreads, 0, l.stream>>>(p);
      });
      check_launch(op, reinterpret_cast<uintptr_t>(l.stream));
    }
  } else if (mma) {
    // dq_acc (contiguous) -> dq through dq's strides (the packed-QKV gradient, Note [Packed QKV
    // gradients] in src/autograd/vjp_attention.cpp, is written in place).
    if (p.tq > 0 && c.out[0].numel() > 0) {
      mma_dq_cast<T>(p, c.out[0].numel() / p.d, l.stream, cast_pdl);
      check_launch(op, reinterpret_cast<uintptr_t>(l.stream));
    }
  } else {
    c.out[0].copy_(dq_acc);
  }
  if (p.tk == 0) {
    c.out[1].zero_();
    c.out[2].zero_();
  }
  if (gqa && p.tk > 0) {
    const int64_t g = p.hq / p.hk;
    DimVector split(k.sizes().begin(), k.sizes().end());
    split[1] = p.hk;
    split.insert(split.begin() + 2, g);
    c.out[1].copy_(dk_part.view(split).sum(IntArrayRef{2}));
    c.out[2].copy_(dv_part.view(split).sum(IntArrayRef{2}));
  }
  kiln::detail::set_attention_backend(backend);
}

void flash_kernel(OpCall& c) {
  const char* op = op_name(c.op);
  FlashParams p = kiln::detail::flash_params(c);
  check_grid(op, p);
  const bool bwd = kiln::detail::flash_is_backward(c.op);
  const Tensor& q = c.in[bwd ? 1 : 0];
  KILN_CHECK(q.dtype() != DType::Float64, "[", op,
             "] float64 is not supported by the GPU kernels (float16, bfloat16, float32)");
  const Launch l = launch_of(q);
  kiln::detail::dispatch_types<kiln::detail::kReducedFloatMask |
                               kiln::detail::dtype_bit(DType::Float32)>(
      q.dtype(), op, [&]<class T>() {
        if (bwd)
          backward<T>(op, c, p, l);
        else
          forward<T>(op, p, l);
      });
}

}  // namespace

void register_attention_kernels(detail::KernelRegistry& r) {
  r.set(OpId::FlashAttention, kCUDA, &flash_kernel);
  r.set(OpId::FlashAttentionBackward, kCUDA, &flash_kernel);
  r.set(OpId::FlashAttentionVarlen, kCUDA, &flash_kernel);
  r.set(OpId::FlashAttentionVarlenBackward, kCUDA, &flash_kernel);
}

}  // namespace kiln::gpu
