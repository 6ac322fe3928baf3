// CPU kernels of the fused attention primitives (FlashAttention, its backward and the
// variable-length forms): the exact math in double, the reference of the GPU kernels
// (Note [Flash attention call], src/nn/functional/attention.cpp); any strides per tensor.
#include <cmath>
#include <limits>
#include <vector>

#include "backend/cpu/parallel.h"
#include "core/dispatch_dtype.h"
#include "dispatch/registry.h"
#include "kernels/convert.h"
#include "kernels/gpu/attention/flash_call.h"
#include "kiln/nn/attention.h"

namespace kiln::cpu {
namespace {

using detail::FlashParams;
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// Scores of row i of (b, h) against the keys of its sequence: scale q.k + mask, -inf where causal
// masks. Returns the row maximum.
template <class T, class M>
double score_row(const FlashParams& p, int b, int h, int64_t i, int64_t lk,
                 std::vector<double>& s) {
  const T* q = static_cast<const T*>(p.q) + p.q_row0(b) + h * p.q_sh + i * p.q_sr;
  const int hk = h / (p.hq / p.hk);
  const T* k0 = static_cast<const T*>(p.k) + p.k_row0(b) + hk * p.k_sh;
  const M* mask = static_cast<const M*>(p.mask);
  double mx = kNegInf;
  for (int64_t j = 0; j < lk; ++j) {
    double v = kNegInf;
    if (!(p.causal && j > i)) {
      const T* kr = k0 + j * p.k_sr;
      double acc = 0;
      for (int d = 0; d < p.d; ++d)
        acc += detail::convert<double>(q[d]) * detail::convert<double>(kr[d]);
      v = acc * p.scale_d;
      if (mask) v += detail::convert<double>(mask[p.mask_at(b, h, i, j)]);
    }
    s[j] = v;
    if (v > mx) mx = v;
  }
  return mx;
}

double drop_factor(const FlashParams& p, int b, int h, int64_t i, int64_t j, double rp) {
  if (p.p_drop <= 0.0f) return 1.0;
  return detail::flash_keep(p, b, h, i, j) ? rp : 0.0;
}

template <class T, class M, class L>
void forward(const FlashParams& p) {
  const double rp = p.p_drop < 1.0f ? 1.0 / (1.0 - static_cast<double>(p.p_drop)) : 0.0;
  parallel_for(0, static_cast<int64_t>(p.b) * p.hq, 1, [&](int64_t r0, int64_t r1) {
    std::vector<double> s, acc(static_cast<size_t>(p.d));
    for (int64_t r = r0; r < r1; ++r) {
      const int b = static_cast<int>(r / p.hq), h = static_cast<int>(r % p.hq);
      const int hk = h / (p.hq / p.hk);
      const int64_t lq = p.q_len(b), lk = p.k_len(b);
      s.resize(static_cast<size_t>(lk));
      const T* v0 = static_cast<const T*>(p.v) + p.v_row0(b) + hk * p.v_sh;
      for (int64_t i = 0; i < lq; ++i) {
        const double mx = score_row<T, M>(p, b, h, i, lk, s);
        T* o = static_cast<T*>(p.o) + p.o_row0(b) + h * p.o_sh + i * p.o_sr;
        L* lse = static_cast<L*>(p.lse) + p.lse_row0(b, h) + i;
        std::fill(acc.begin(), acc.end(), 0.0);
        double l = 0;
        if (mx != kNegInf) {
          for (int64_t j = 0; j < lk; ++j) {
            const double e = std::exp(s[j] - mx);
            l += e;
            const double w = e * drop_factor(p, b, h, i, j, rp);
            if (w == 0) continue;
            const T* vr = v0 + j * p.v_sr;
            for (int d = 0; d < p.d; ++d) acc[d] += w * detail::convert<double>(vr[d]);
          }
        }
        const double inv = l > 0 ? 1.0 / l : 0.0;
        for (int d = 0; d < p.d; ++d) o[d] = detail::convert<T>(acc[d] * inv);
        *lse = static_cast<L>(l > 0 ? mx + std::log(l) : kNegInf);
      }
    }
  });
}

// dv_j = sum_i P~_ij do_i; dS_ij = P_ij (Z_ij do_i.v_j - D_i) with D_i = do_i.o_i;
// dq_i = scale sum_j dS_ij k_j; dk_j = scale sum_i dS_ij q_i (P~ = P Z, Z the dropout factor).
// One task per (batch, key head): the query heads of a group add into the same dk / dv.
template <class T, class M, class L>
void backward(const FlashParams& p) {
  const double rp = p.p_drop < 1.0f ? 1.0 / (1.0 - static_cast<double>(p.p_drop)) : 0.0;
  const int group = p.hq / p.hk;
  parallel_for(0, static_cast<int64_t>(p.b) * p.hk, 1, [&](int64_t r0, int64_t r1) {
    std::vector<double> s, dk, dv, dq(static_cast<size_t>(p.d));
    for (int64_t r = r0; r < r1; ++r) {
      const int b = static_cast<int>(r / p.hk), hk = static_cast<int>(r % p.hk);
      const int64_t lq = p.q_len(b), lk = p.k_len(b);
      const int64_t D = p.d;
      s.resize(static_cast<size_t>(lk));
      dk.assign(static_cast<size_t>(lk * D), 0.0);
      dv.assign(static_cast<size_t>(lk * D), 0.0);
      const T* k0 = static_cast<const T*>(p.k) + p.k_row0(b) + hk * p.k_sh;
      const T* v0 = static_cast<const T*>(p.v) + p.v_row0(b) + hk * p.v_sh;
      for (int h = hk * group; h < (hk + 1) * group; ++h) {
        for (int64_t i = 0; i < lq; ++i) {
          score_row<T, M>(p, b, h, i, lk, s);
          const T* q = static_cast<const T*>(p.q) + p.q_row0(b) + h * p.q_sh + i * p.q_sr;
          const T* go = static_cast<const T*>(p.dout) + p.do_row0(b) + h * p.do_sh + i * p.do_sr;
          const T* o = static_cast<const T*>(p.o) + p.o_row0(b) + h * p.o_sh + i * p.o_sr;
          const double lse =
              static_cast<double>(static_cast<const L*>(p.lse)[p.lse_row0(b, h) + i]);
          double di = 0;
          for (int d = 0; d < D; ++d)
            di += detail::convert<double>(go[d]) * detail::convert<double>(o[d]);
          std::fill(dq.begin(), dq.end(), 0.0);
          for (int64_t j = 0; j < lk; ++j) {
            if (s[j] == kNegInf || lse == kNegInf) continue;
            const double pij = std::exp(s[j] - lse);
            const double z = drop_factor(p, b, h, i, j, rp);
            const T* vr = v0 + j * p.v_sr;
            const T* kr = k0 + j * p.k_sr;
            double dpd = 0;
            for (int d = 0; d < D; ++d)
              dpd += detail::convert<double>(go[d]) * detail::convert<double>(vr[d]);
            const double ds = pij * (dpd * z - di) * p.scale_d;
            const double pz = pij * z;
            for (int d = 0; d < D; ++d) {
              dv[j * D + d] += pz * detail::convert<double>(go[d]);
              dk[j * D + d] += ds * detail::convert<double>(q[d]);
              dq[d] += ds * detail::convert<double>(kr[d]);
            }
          }
          T* dqo = static_cast<T*>(p.dq) + p.dq_row0(b) + h * p.dq_sh + i * p.dq_sr;
          for (int d = 0; d < D; ++d) dqo[d] = detail::convert<T>(dq[d]);
        }
      }
      T* dko = static_cast<T*>(p.dk) + p.dk_row0(b) + hk * p.dk_sh;
      T* dvo = static_cast<T*>(p.dv) + p.dk_row0(b) + hk * p.dk_sh;
      for (int64_t j = 0; j < lk; ++j)
        for (int d = 0; d < D; ++d) {
          dko[j * p.dk_sr + d] = detail::convert<T>(dk[j * D + d]);
          dvo[j * p.dk_sr + d] = detail::convert<T>(dv[j * D + d]);
        }
    }
  });
}

void flash_kernel(OpCall& c) {
  const FlashParams p = detail::flash_params(c);
  const bool bwd = detail::flash_is_backward(c.op);
  const Tensor& q = c.in[bwd ? 1 : 0];
  detail::dispatch_types<detail::kFloatMask>(q.dtype(), op_name(c.op), [&]<class T>() {
    if constexpr (std::is_same_v<T, double>) {
      bwd ? backward<T, double, double>(p) : forward<T, double, double>(p);
    } else {
      bwd ? backward<T, float, float>(p) : forward<T, float, float>(p);
    }
  });
  kiln::detail::set_attention_backend("flash_cpu");
}

}  // namespace

void register_attention_kernels(detail::KernelRegistry& r) {
  r.set(OpId::FlashAttention, kCPU, &flash_kernel);
  r.set(OpId::FlashAttentionBackward, kCPU, &flash_kernel);
  r.set(OpId::FlashAttentionVarlen, kCPU, &flash_kernel);
  r.set(OpId::FlashAttentionVarlenBackward, kCPU, &flash_kernel);
}

}  // namespace kiln::cpu
