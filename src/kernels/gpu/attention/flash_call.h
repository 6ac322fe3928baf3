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

// Note [Flash attention strides] (flash_params.h): the kernels take q, k, v and grad_o with any
// strides and a unit head-dim stride; on the GPU the rows must also be 16-byte aligned (data
// pointer and every batch / head / row byte stride a multiple of 16: cp.async and ldmatrix read
// whole 16-byte chunks), so one rule serves the tensor-core and portable kernels alike. Dims of
// size 1 do not count (flash_strides gives them stride 0).
inline bool flash_layout_ok(const Tensor& t) {
  const int64_t nd = t.dim();
  if (nd == 0 || (t.size(-1) > 1 && t.stride(-1) != 1)) return false;
  if (!t.device().is_cuda()) return true;
  if (t.numel() > 0 && reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 != 0) return false;
  const int64_t es = static_cast<int64_t>(element_size(t.dtype()));
  for (int64_t i = 0; i + 1 < nd; ++i)
    if (t.size(i) > 1 && (t.stride(i) * es) % 16 != 0) return false;
  return true;
}
// t as the fused kernels take it: itself when flash_layout_ok, else a contiguous copy.
inline Tensor flash_operand(const Tensor& t) { return flash_layout_ok(t) ? t : t.contiguous(); }

// Strides of t into (sb, sh, sr): [B, H, T, D] (dense) or [N, H, D] (varlen: sb unused). A dim
// of size 1 (only index 0 is read) gets the stride a contiguous layout of the dims inside it would
// have, so an odd stride there never blocks the aligned kernels (flash_layout_ok ignores it too).
inline void flash_strides(const Tensor& t, bool varlen, int64_t& sb, int64_t& sh, int64_t& sr) {
  const auto st = [&](int64_t dim, int64_t packed) {
    return t.size(dim) == 1 ? packed : t.stride(dim);
  };
  const int64_t d = t.size(-1);
  if (varlen) {
    sb = 0;
    sh = st(1, d);
    sr = st(0, t.size(1) * sh);
  } else {
    sr = st(2, d);
    sh = st(1, t.size(2) * sr);
    sb = st(0, t.size(1) * sh);
  }
}

inline FlashParams flash_params(const OpCall& c) {
  const char* op = op_name(c.op);
  const bool bwd = flash_is_backward(c.op), varlen = flash_is_varlen(c.op);
  const int base = bwd ? 1 : 0;
  const Tensor &q = c.in[base], &k = c.in[base + 1], &v = c.in[base + 2];
  // Note [Flash attention strides]: any strides, unit stride in the head dim.
  const auto unit = [](const Tensor& t) { return t.size(-1) <= 1 || t.stride(-1) == 1; };
  for (const Tensor* t : {&q, &k, &v})
    KILN_CHECK(unit(*t), "[", op, "] expects query, key and value with unit head-dim stride");
  FlashParams p;
  p.q = q.data_ptr();
  p.k = k.data_ptr();
  p.v = v.data_ptr();
  flash_strides(q, varlen, p.q_sb, p.q_sh, p.q_sr);
  flash_strides(k, varlen, p.k_sb, p.k_sh, p.k_sr);
  flash_strides(v, varlen, p.v_sb, p.v_sh, p.v_sr);
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
    p.acc_sh = p.d;
    p.acc_sr = static_cast<int64_t>(p.hq) * p.d;
    p.lse_sh = q.size(0);
  } else {
    p.b = static_cast<int>(q.size(0));
    p.hq = static_cast<int>(q.size(1));
    p.hk = static_cast<int>(k.size(1));
    p.d = static_cast<int>(q.size(3));
    p.tq = q.size(2);
    p.tk = k.size(2);
    p.acc_sr = p.d;
    p.acc_sh = p.tq * p.d;
    p.acc_sb = p.hq * p.acc_sh;
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
  p.scale_d = c.attrs.s0.to<double>();
  p.scale = static_cast<float>(p.scale_d);
  const double pd = c.attrs.has_s1 ? c.attrs.s1.to<double>() : 0.0;
  p.p_drop = static_cast<float>(pd);
  p.rp_drop = pd < 1.0 ? static_cast<float>(1.0 / (1.0 - pd)) : 0.0f;
  p.causal = c.attrs.flag;
  p.seed = static_cast<uint64_t>(c.attrs.i0);
  p.offset = static_cast<uint64_t>(c.attrs.i1);
  const Tensor& o = bwd ? c.in[4] : c.out[0];
  KILN_CHECK(unit(o), "[", op, "] expects an output with unit head-dim stride");
  flash_strides(o, varlen, p.o_sb, p.o_sh, p.o_sr);
  if (bwd) {
    const Tensor &g = c.in[0], &dq = c.out[0], &dk = c.out[1], &dv = c.out[2];
    KILN_CHECK(unit(g), "[", op, "] expects grad_out with unit head-dim stride");
    KILN_ASSERT(unit(dq) && unit(dk) && dk.strides() == dv.strides());
    flash_strides(g, varlen, p.do_sb, p.do_sh, p.do_sr);
    flash_strides(dq, varlen, p.dq_sb, p.dq_sh, p.dq_sr);
    flash_strides(dk, varlen, p.dk_sb, p.dk_sh, p.dk_sr);
    p.dout = g.data_ptr();
    p.o = c.in[4].data_ptr();
    p.lse = c.in[5].data_ptr();
    p.dq = dq.data_ptr();
    p.dk = dk.data_ptr();
    p.dv = dv.data_ptr();
  } else {
    p.o = c.out[0].data_ptr();
    p.lse = c.out[1].data_ptr();
  }
  return p;
}

}  // namespace kiln::detail
