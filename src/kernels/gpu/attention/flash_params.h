// FlashParams: one fused-attention call (dense or variable-length) as plain pointers, strides and
// sizes, shared by the CPU reference kernels and the GPU kernels; the dropout rule (Philox).
#pragma once

#include "kernels/philox.h"
#include "kiln/macros.h"

namespace kiln::detail {

// Note [Flash attention strides]: every tensor has its own element strides (batch sb, head sh,
// row sr) and unit stride in the head dim: q, k, v, o (forward output / saved output), dout, dq,
// and dk (shared by dk and dv; Hq heads when the kernel writes per-query-head partial sums for
// grouped-query attention). Variable-length calls keep [N, H, D] tensors: sb is unused and rows
// start at cu_q / cu_k. lse / delta and the GPU dq_acc accumulator are always contiguous
// ([B, H, T] / [B, H, T, D], or [H, N] / [N, H, D] for variable-length calls).
struct FlashParams {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* o = nullptr;           // forward output; backward: the saved forward output (read)
  void* lse = nullptr;         // float (GPU, CPU float32/16-bit) or double (CPU float64)
  const void* mask = nullptr;  // additive, float (double for float64 inputs), 4 strides
  int64_t m_sb = 0, m_sh = 0, m_sr = 0, m_sc = 0;
  const void* dout = nullptr;
  void* dq = nullptr;
  void* dk = nullptr;
  void* dv = nullptr;
  float* dq_acc = nullptr;        // GPU: float accumulator of dq (atomics), contiguous
  float* delta = nullptr;         // GPU: rowsum(grad_o * o), layout of lse
  const int32_t* cu_q = nullptr;  // variable-length: cumulative sequence starts [B + 1]
  const int32_t* cu_k = nullptr;
  int64_t q_sb = 0, q_sh = 0, q_sr = 0;
  int64_t k_sb = 0, k_sh = 0, k_sr = 0;
  int64_t v_sb = 0, v_sh = 0, v_sr = 0;
  int64_t o_sb = 0, o_sh = 0, o_sr = 0;
  int64_t do_sb = 0, do_sh = 0, do_sr = 0;
  int64_t dq_sb = 0, dq_sh = 0, dq_sr = 0;
  int64_t dk_sb = 0, dk_sh = 0, dk_sr = 0;     // dk and dv
  int64_t acc_sb = 0, acc_sh = 0, acc_sr = 0;  // GPU dq_acc: contiguous in q's shape
  int64_t lse_sb = 0, lse_sh = 0;
  int b = 0, hq = 0, hk = 0, d = 0;
  int64_t tq = 0, tk = 0;  // dense: the lengths; variable-length: the maxima
  float scale = 1.0f;
  double scale_d = 1.0;
  float p_drop = 0.0f;   // dropout probability (0: none)
  float rp_drop = 1.0f;  // 1 / (1 - p), 0 when p == 1
  uint64_t seed = 0, offset = 0;
  bool causal = false;
  bool dkv_f32 = false;  // dk/dv are float accumulators (GQA partial sums), not the input dtype

  KILN_HD int64_t q_row0(int bi) const { return cu_q ? cu_q[bi] * q_sr : bi * q_sb; }
  KILN_HD int64_t k_row0(int bi) const { return cu_k ? cu_k[bi] * k_sr : bi * k_sb; }
  KILN_HD int64_t v_row0(int bi) const { return cu_k ? cu_k[bi] * v_sr : bi * v_sb; }
  KILN_HD int64_t o_row0(int bi) const { return cu_q ? cu_q[bi] * o_sr : bi * o_sb; }
  KILN_HD int64_t do_row0(int bi) const { return cu_q ? cu_q[bi] * do_sr : bi * do_sb; }
  KILN_HD int64_t dq_row0(int bi) const { return cu_q ? cu_q[bi] * dq_sr : bi * dq_sb; }
  KILN_HD int64_t dk_row0(int bi) const { return cu_k ? cu_k[bi] * dk_sr : bi * dk_sb; }
  KILN_HD int64_t acc_row0(int bi) const { return cu_q ? cu_q[bi] * acc_sr : bi * acc_sb; }
  KILN_HD int64_t q_len(int bi) const { return cu_q ? cu_q[bi + 1] - cu_q[bi] : tq; }
  KILN_HD int64_t k_len(int bi) const { return cu_k ? cu_k[bi + 1] - cu_k[bi] : tk; }
  // Index of (b, h, row 0) in lse / delta (rows are consecutive).
  KILN_HD int64_t lse_row0(int bi, int h) const {
    return (cu_q ? static_cast<int64_t>(cu_q[bi]) : bi * lse_sb) + h * lse_sh;
  }
  KILN_HD int64_t mask_at(int bi, int h, int64_t i, int64_t j) const {
    return bi * m_sb + h * m_sh + i * m_sr + j * m_sc;
  }
};

// Note [Flash attention dropout]: element (b, h, i, j) of the attention weights (query head h,
// row i and key j counted inside the sequence) owns word e = ((b * Hq + h) * Tq + i) * Tk + j of
// the call's Philox stream (Note [Philox streams], one word per element; Tq, Tk the lengths, the
// maxima for variable-length calls). It is kept when u = (word >> 8) * 2^-24 >= p, and kept
// weights are scaled by 1 / (1 - p). The forward and the backward regenerate the same words, so
// nothing is stored; the CPU and GPU kernels draw bit-identical masks.
KILN_HD inline bool flash_keep(const FlashParams& p, int bi, int h, int64_t i, int64_t j) {
  const uint64_t e =
      ((static_cast<uint64_t>(bi) * static_cast<uint64_t>(p.hq) + static_cast<uint64_t>(h)) *
           static_cast<uint64_t>(p.tq) +
       static_cast<uint64_t>(i)) *
          static_cast<uint64_t>(p.tk) +
      static_cast<uint64_t>(j);
  const uint32_t w = philox_word(p.seed, p.offset, e);
  return static_cast<float>(w >> 8) * (1.0f / 16777216.0f) >= p.p_drop;
}

}  // namespace kiln::detail
