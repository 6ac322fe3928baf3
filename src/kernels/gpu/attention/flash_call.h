// flash_params(c): the FlashParams of a FlashAttention* OpCall laid out as Note [Flash attention
// call] (src/nn/functional/attention.cpp) says; shared by the CPU and GPU kernels.
#pragma once

#include "kernels/gpu/attention/flash_params.h"
#include "ops/op.h"

namespace kiln::detail {

inline bool flash_is_backward(OpId id) {
  return id == OpId::FlashAttentionBackward || id == OpId::FlashAttentionVarlenBackward;
}
inline bool flash_is_varlen(OpId id) {
  return id == OpId::FlashAttentionVarlen || id == OpId::FlashAttentionVarlenBackward;
}

inline FlashParams flash_params(const OpCall& c) {
  const char* op = op_name(c.op);
  const bool bwd = flash_is_backward(c.op), varlen = flash_is_varlen(c.op);
  const int base = bwd ? 1 : 0;
  const Tensor &q = c.in[base], &k = c.in[base + 1], &v = c.in[base + 2];
  for (const Tensor* t : {&q, &k, &v})
    KILN_CHECK(t->is_contiguous(), "[", op, "] expects contiguous query, key and value");
  FlashParams p;
  p.q = q.data_ptr();
  p.k = k.data_ptr();
  p.v = v.data_ptr();
  if (varlen) {
    const Tensor& cq = c.in[bwd ? 6 : 3];
    const Tensor& ck = c.in[bwd ? 7 : 4];
    p.cu_q = static_cast<const int32_t*>(cq.data_ptr());
    p.cu_k = static_cast<const int32_t*>(ck.data_ptr());
    p.b = static_cast<int>(cq.numel() - 1);
    p.hq = static_cast<int>(q.size(1));
    p.hk = static_cast<int>(k.size(1));
    p.d = static_cast<int>(q.size(2));
    p.tq = c.attrs.ints[0];
    p.tk = c.attrs.ints[1];
    p.q_sh = p.d;
    p.q_sr = static_cast<int64_t>(p.hq) * p.d;
    p.k_sh = p.d;
    p.k_sr = static_cast<int64_t>(p.hk) * p.d;
    p.lse_sh = q.size(0);
  } else {
    p.b = static_cast<int>(q.size(0));
    p.hq = static_cast<int>(q.size(1));
    p.hk = static_cast<int>(k.size(1));
    p.d = static_cast<int>(q.size(3));
    p.tq = q.size(2);
    p.tk = k.size(2);
    p.q_sr = p.d;
    p.q_sh = p.tq * p.d;
    p.q_sb = p.hq * p.q_sh;
    p.k_sr = p.d;
    p.k_sh = p.tk * p.d;
    p.k_sb = p.hk * p.k_sh;
    p.lse_sh = p.tq;
    p.lse_sb = p.hq * p.tq;
    const size_t mi = bwd ? 6 : 3;
    if (c.in.size() > mi) {
      const Tensor& m = c.in[mi];
      p.mask = m.data_ptr();
      p.m_sb = m.stride(0);
      p.m_sh = m.stride(1);
      p.m_sr = m.stride(2);
      p.m_sc = m.stride(3);
    }
  }
  p.dk_sb = p.k_sb;
  p.dk_sh = p.k_sh;
  p.dk_sr = p.k_sr;
  p.scale_d = c.attrs.s0.to<double>();
  p.scale = static_cast<float>(p.scale_d);
  const double pd = c.attrs.has_s1 ? c.attrs.s1.to<double>() : 0.0;
  p.p_drop = static_cast<float>(pd);
  p.rp_drop = pd < 1.0 ? static_cast<float>(1.0 / (1.0 - pd)) : 0.0f;
  p.causal = c.attrs.flag;
  p.seed = static_cast<uint64_t>(c.attrs.i0);
  p.offset = static_cast<uint64_t>(c.attrs.i1);
  if (bwd) {
    p.dout = c.in[0].data_ptr();
    p.o = c.in[4].data_ptr();
    p.lse = c.in[5].data_ptr();
    p.dq = c.out[0].data_ptr();
    p.dk = c.out[1].data_ptr();
    p.dv = c.out[2].data_ptr();
  } else {
    p.o = c.out[0].data_ptr();
    p.lse = c.out[1].data_ptr();
  }
  return p;
}

}  // namespace kiln::detail
