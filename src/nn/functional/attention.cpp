// kiln::nn::functional scaled_dot_product_attention (fused flash kernels or the composite math
// path), varlen_attention, the fused entry points that return the log-sum-exp, and
// kiln::nn::attention_backend().
#include <cmath>
#include <cstdio>
#include <limits>
#include <mutex>
#include <set>
#include <string>

#include "amp/autocast_state.h"
#include "backend/gpu/graph_rng.h"
#include "kernels/gpu/attention/flash_call.h"
#include "kernels/philox.h"
#include "kiln/nn/attention.h"
#include "kiln/nn/functional/activation.h"
#include "kiln/nn/functional/misc.h"
#include "kiln/ops.h"
#include "kiln/random.h"
#include "ops/run.h"
#include "ops/tensor_factory.h"

// Note [Flash attention call]
// ---------------------------
// The four primitives of src/ops/defs/attention.def take q, k, v and grad_o with any strides and
// a unit head-dim stride (the front ends pass views as they are when flash_layout_ok, in
// src/kernels/gpu/attention/flash_call.h, says so: GPT-2's heads of one packed QKV projection
// need no copy; Note [Flash attention strides]); outputs and gradients may be strided too. The
// dense forward returns o as [B, Tq, Hq, D] memory seen as [B, Hq, Tq, D] (PyTorch's flash backend
// does the same), so o.transpose(1, 2).reshape({B, Tq, Hq * D}) is a view. Attrs:
//   s0 = scale (double); s1 = dropout probability p (has_s1; 0 = no dropout); flag = is_causal
//   (key j masked for query i when j > i, top-left aligned, per sequence for varlen); i0, i1 =
//   Philox seed and offset (bit-cast to int64) of the dropout mask (Note [Flash attention
//   dropout], src/kernels/gpu/attention/flash_params.h); ints = {} (dense) or {max_seqlen_q,
//   max_seqlen_k} (varlen).
//   FlashAttention        in {q [B, Hq, Tq, D], k [B, Hk, Tk, D], v [B, Hk, Tk, D], [mask]};
//                         out {o [B, Hq, Tq, D], lse [B, Hq, Tq]}. Hq % Hk == 0 (query head h reads
//                         key/value head h / (Hq / Hk)). mask: additive, float32 (float64 for
//                         float64 inputs), [B, Hq, Tq, Tk] with any strides (broadcast dims have
//                         stride 0); bool masks arrive as 0 / -inf.
//   FlashAttentionBackward in {grad_o, q, k, v, o, lse, [mask]}; out {dq, dk, dv} (shapes of q, k,
//   v). FlashAttentionVarlen  in {q [Nq, Hq, D], k [Nk, Hk, D], v [Nk, Hk, D], cu_seqlens_q [B +
//   1],
//                         cu_seqlens_k [B + 1] (int32)}; out {o [Nq, Hq, D], lse [Hq, Nq]}.
//   FlashAttentionVarlenBackward in {grad_o, q, k, v, o, lse, cu_seqlens_q, cu_seqlens_k};
//                         out {dq, dk, dv}.
// lse is float32 (float64 for float64 inputs): lse_i = log sum_j exp(s_ij), s_ij = scale q_i.k_j
// + mask_ij, and -inf for a row whose keys are all masked (its output row is 0). The backward
// recomputes P_ij = exp(s_ij - lse_i) from q, k and lse; the gradient does not flow into lse or
// the mask.

namespace kiln {

namespace detail {
namespace {
thread_local const char* t_attention_backend = "";
}  // namespace
void set_attention_backend(const char* name) { t_attention_backend = name; }
}  // namespace detail

namespace nn {

const char* attention_backend() { return detail::t_attention_backend; }

namespace functional {
namespace {

const double kNegInf = -std::numeric_limits<double>::infinity();

// Repeats dim -3 (heads) of t `times` times, each head consecutively (repeat_interleave).
Tensor repeat_heads(const Tensor& t, int64_t times) {
  if (times == 1) return t;
  const int64_t nd = t.dim();
  DimVector expanded;
  for (int64_t d = 0; d < nd; ++d) {
    if (d == nd - 2) expanded.push_back(times);
    expanded.push_back(t.size(d));
  }
  DimVector out(t.sizes().begin(), t.sizes().end());
  out[nd - 3] *= times;
  return t.unsqueeze(nd - 2).expand(expanded).reshape(out);
}

// The composite path (the reference): softmax(q k^T * scale + mask) v.
Tensor sdpa_math(const Tensor& query, const Tensor& key, const Tensor& value,
                 const Tensor& attn_mask, double dropout_p, bool is_causal,
                 std::optional<double> scale, bool enable_gqa) {
  const char* op = "scaled_dot_product_attention";
  Tensor k = key, v = value;
  if (enable_gqa && query.dim() >= 3 && key.dim() >= 3) {
    const int64_t hq = query.size(-3), hk = key.size(-3), hv = value.size(-3);
    KILN_CHECK(hk > 0 && hv > 0 && hq % hk == 0 && hq % hv == 0, "[", op,
               "] number of heads in key/value must divide the number of heads in query");
    k = repeat_heads(k, hq / hk);
    v = repeat_heads(v, hq / hv);
  }
  const int64_t l = query.size(-2), s = k.size(-2);
  const double sc = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(query.size(-1)));
  Tensor attn = kiln::matmul(query * sc, k.transpose(-2, -1));
  bool masked = false;
  if (is_causal) {
    Tensor i = kiln::arange(l, TensorOptions(DType::Int64).device(query.device())).unsqueeze(1);
    Tensor j = kiln::arange(s, TensorOptions(DType::Int64).device(query.device())).unsqueeze(0);
    attn = kiln::where(j <= i, attn, Scalar(kNegInf));
    masked = true;
  } else if (attn_mask.defined()) {
    if (attn_mask.dtype() == DType::Bool) {
      attn = kiln::where(attn_mask, attn, Scalar(kNegInf));
      masked = true;
    } else {
      attn = attn + attn_mask;
    }
  }
  Tensor w = softmax(attn, -1);
  // Rows with every position masked give zeros (PyTorch's safe softmax), not NaN.
  if (masked) w = kiln::where((attn == kNegInf).all(-1, true), Scalar(0.0), w);
  if (dropout_p > 0) w = dropout(w, dropout_p, true);
  return kiln::matmul(w, v);
}

void warn_once(const std::string& reason) {
  static std::mutex mu;
  static std::set<std::string> seen;
  std::lock_guard<std::mutex> lock(mu);
  if (!seen.insert(reason).second) return;
  std::fprintf(stderr,
               "kiln warning: [scaled_dot_product_attention] fused kernel not used (%s); "
               "running the math path\n",
               reason.c_str());
}

DType lse_dtype(DType d) { return d == DType::Float64 ? DType::Float64 : DType::Float32; }

// Reserves the dropout counters of `elements` weights and stores (seed, offset) in the attrs.
void set_dropout(OpCall& c, double p, Device dev, int64_t elements) {
  c.attrs.s1 = p;
  c.attrs.has_s1 = true;
  if (p <= 0 || elements <= 0) return;
  Generator gen = default_generator(dev);
  const PhiloxSeedOffset so = gen.reserve(philox_counters(static_cast<uint64_t>(elements), 1));
  if (dev.is_cuda()) {
    // A captured graph would replay this call's mask forever: not supported yet (the kernels
    // would have to read (seed, offset) from the graph's state tensor, Note [Random op contract]).
    const gpu::CapturedRng cap =
        gpu::capture_rng(gen, so, kiln::detail::resolve_rng_device(dev).index);
    KILN_CHECK(!cap.state.defined(), "[", op_name(c.op),
               "] dropout inside a captured CUDA graph is not supported by the fused attention "
               "kernels yet");
  }
  c.attrs.i0 = static_cast<int64_t>(so.seed);
  c.attrs.i1 = static_cast<int64_t>(so.offset);
}

void check_qkv(const char* op, const Tensor& q, const Tensor& k, const Tensor& v, int64_t dims) {
  KILN_CHECK(q.defined() && k.defined() && v.defined(), "[", op,
             "] query, key and value must be defined");
  KILN_CHECK(q.dim() == dims && k.dim() == dims && v.dim() == dims, "[", op, "] expected ", dims,
             "-D query, key and value, but got ", q.sizes(), ", ", k.sizes(), ", ", v.sizes());
  KILN_CHECK(is_floating_point(q.dtype()) && q.dtype() == k.dtype() && q.dtype() == v.dtype(), "[",
             op, "] expected query, key and value of one floating dtype, but got ",
             dtype_name(q.dtype()), ", ", dtype_name(k.dtype()), ", ", dtype_name(v.dtype()));
  KILN_CHECK(q.device() == k.device() && q.device() == v.device(), "[", op,
             "] query, key and value must be on one device");
  KILN_CHECK(q.size(-1) == k.size(-1) && q.size(-1) == v.size(-1), "[", op,
             "] query, key and value must have one head dim, but got ", q.size(-1), ", ",
             k.size(-1), ", ", v.size(-1));
  KILN_CHECK(k.sizes() == v.sizes(), "[", op, "] key and value shapes differ: ", k.sizes(), " and ",
             v.sizes());
}

}  // namespace

std::tuple<Tensor, Tensor> _scaled_dot_product_flash_attention(
    const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& attn_mask,
    double dropout_p, bool is_causal, std::optional<double> scale, bool enable_gqa) {
  const char* op = "flash_attention";
  check_qkv(op, query, key, value, 4);
  const int64_t b = query.size(0), hq = query.size(1), tq = query.size(2), d = query.size(3);
  const int64_t hk = key.size(1), tk = key.size(2);
  KILN_CHECK(key.size(0) == b, "[", op, "] query and key batch sizes differ: ", b, " and ",
             key.size(0));
  KILN_CHECK(hq == hk || (enable_gqa && hk > 0 && hq % hk == 0), "[", op, "] ", hq,
             " query heads and ", hk, " key/value heads need enable_gqa and Hq % Hk == 0");
  KILN_CHECK(!(is_causal && attn_mask.defined()), "[", op,
             "] Explicit attn_mask should not be set when is_causal=True");
  KILN_CHECK(dropout_p >= 0 && dropout_p <= 1, "[", op, "] dropout_p must be in [0, 1]");
  OpCall c(OpId::FlashAttention);
  c.in.push_back(kiln::detail::flash_operand(query));
  c.in.push_back(kiln::detail::flash_operand(key));
  c.in.push_back(kiln::detail::flash_operand(value));
  const DType md = lse_dtype(query.dtype());
  if (attn_mask.defined()) {
    KILN_CHECK(attn_mask.device() == query.device(), "[", op, "] attn_mask is on ",
               attn_mask.device().str(), " but query is on ", query.device().str());
    Tensor m = attn_mask.dtype() == DType::Bool
                   ? kiln::where(attn_mask, Scalar(0.0), Scalar(kNegInf)).to(md)
                   : attn_mask.to(md);
    KILN_CHECK(m.dim() <= 4, "[", op, "] attn_mask of shape ", m.sizes(),
               " does not broadcast to [B, Hq, Tq, Tk]");
    c.in.push_back(m.expand({b, hq, tq, tk}));
  }
  c.attrs.s0 = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(d));
  c.attrs.has_s0 = true;
  c.attrs.flag = is_causal;
  set_dropout(c, dropout_p, query.device(), b * hq * tq * tk);
  // o is [B, Tq, Hq, D] memory seen as [B, Hq, Tq, D] (Note [Flash attention call]).
  c.out.push_back(kiln::detail::empty_strided_impl({b, hq, tq, d}, {tq * hq * d, d, hq * d, 1},
                                                   query.dtype(), query.device()));
  c.out.push_back(kiln::detail::empty_impl({b, hq, tq}, md, query.device()));
  c.compute = query.dtype();
  kiln::detail::run(c);
  return {c.out[0], c.out[1]};
}

std::tuple<Tensor, Tensor> _varlen_flash_attention(const Tensor& query, const Tensor& key,
                                                   const Tensor& value, const Tensor& cu_seqlens_q,
                                                   const Tensor& cu_seqlens_k, int64_t max_seqlen_q,
                                                   int64_t max_seqlen_k, double dropout_p,
                                                   bool is_causal, std::optional<double> scale) {
  const char* op = "varlen_attention";
  check_qkv(op, query, key, value, 3);
  const int64_t nq = query.size(0), hq = query.size(1), d = query.size(2);
  const int64_t nk = key.size(0), hk = key.size(1);
  KILN_CHECK(hk > 0 && hq % hk == 0, "[", op, "] the ", hk,
             " key/value heads must divide the query's ", hq);
  for (const Tensor* cu : {&cu_seqlens_q, &cu_seqlens_k})
    KILN_CHECK(cu->defined() && cu->dtype() == DType::Int32 && cu->dim() == 1 && cu->numel() >= 1 &&
                   cu->device() == query.device(),
               "[", op, "] cu_seqlens must be 1-D int32 tensors on the query's device");
  KILN_CHECK(cu_seqlens_q.numel() == cu_seqlens_k.numel(), "[", op,
             "] cu_seqlens_q and cu_seqlens_k must have one length");
  KILN_CHECK(dropout_p >= 0 && dropout_p <= 1, "[", op, "] dropout_p must be in [0, 1]");
  // The lengths are validated on the host (a small copy) so a kernel never reads out of range.
  Tensor cq = cu_seqlens_q.to(Device(DeviceType::CPU)).contiguous();
  Tensor ck = cu_seqlens_k.to(Device(DeviceType::CPU)).contiguous();
  const int32_t *pq = cq.data_ptr<int32_t>(), *pk = ck.data_ptr<int32_t>();
  const int64_t nb = cq.numel() - 1;
  KILN_CHECK(pq[0] == 0 && pk[0] == 0, "[", op, "] cu_seqlens must start at 0");
  for (int64_t i = 0; i < nb; ++i) {
    const int64_t lq = pq[i + 1] - pq[i], lk = pk[i + 1] - pk[i];
    KILN_CHECK(lq >= 0 && lk >= 0 && lq <= max_seqlen_q && lk <= max_seqlen_k, "[", op,
               "] sequence ", i, " has lengths ", lq, ", ", lk, " beyond max_seqlen (",
               max_seqlen_q, ", ", max_seqlen_k, ") or negative");
  }
  KILN_CHECK(pq[nb] == nq && pk[nb] == nk, "[", op, "] cu_seqlens end at ", pq[nb], ", ", pk[nb],
             " but query and key have ", nq, " and ", nk, " rows");
  OpCall c(OpId::FlashAttentionVarlen);
  c.in.push_back(kiln::detail::flash_operand(query));
  c.in.push_back(kiln::detail::flash_operand(key));
  c.in.push_back(kiln::detail::flash_operand(value));
  c.in.push_back(cu_seqlens_q.contiguous());
  c.in.push_back(cu_seqlens_k.contiguous());
  c.attrs.ints = {max_seqlen_q, max_seqlen_k};
  c.attrs.s0 = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(d));
  c.attrs.has_s0 = true;
  c.attrs.flag = is_causal;
  set_dropout(c, dropout_p, query.device(), nb * hq * max_seqlen_q * max_seqlen_k);
  c.out.push_back(kiln::detail::empty_impl(query.sizes(), query.dtype(), query.device()));
  c.out.push_back(kiln::detail::empty_impl({hq, nq}, lse_dtype(query.dtype()), query.device()));
  c.compute = query.dtype();
  kiln::detail::run(c);
  return {c.out[0], c.out[1]};
}

Tensor varlen_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                        const Tensor& cu_seqlens_q, const Tensor& cu_seqlens_k,
                        int64_t max_seqlen_q, int64_t max_seqlen_k, double dropout_p,
                        bool is_causal, std::optional<double> scale) {
  return std::get<0>(_varlen_flash_attention(query, key, value, cu_seqlens_q, cu_seqlens_k,
                                             max_seqlen_q, max_seqlen_k, dropout_p, is_causal,
                                             scale));
}

namespace {
// Why the fused kernels cannot run this call (empty: they can).
std::string fused_blocker(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                          bool enable_gqa) {
  if (q.dtype() != DType::Float16 && q.dtype() != DType::BFloat16)
    return std::string(dtype_name(q.dtype())) + " inputs (fused: float16, bfloat16)";
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4) return "inputs are not 4-D [B, H, T, D]";
  const int64_t d = q.size(3);
  if (d != 64 && d != 128 && d != 256)
    return "head dim " + std::to_string(d) + " (fused: 64, 128, 256)";
  if (v.size(3) != d || k.size(3) != d) return "value head dim differs from the query's";
  if (k.sizes() != v.sizes() || k.size(0) != q.size(0)) return "key/value shapes broadcast";
  if (k.size(1) != q.size(1) && !(enable_gqa && k.size(1) > 0 && q.size(1) % k.size(1) == 0))
    return "key/value heads broadcast without enable_gqa";
  if (mask.defined() && mask.requires_grad()) return "attn_mask requires grad";
  if (mask.defined() && mask.dim() > 4) return "attn_mask has more than 4 dims";
  return {};
}
}  // namespace

Tensor scaled_dot_product_attention(const Tensor& query_in, const Tensor& key_in,
                                    const Tensor& value_in, const Tensor& attn_mask_in,
                                    double dropout_p, bool is_causal, std::optional<double> scale,
                                    bool enable_gqa) {
  const char* op = "scaled_dot_product_attention";
  Tensor query = query_in, key = key_in, value = value_in, attn_mask = attn_mask_in;
  if (KILN_UNLIKELY(detail::autocast_active()))  // Note [autocast lists]: attention goes lower
    detail::autocast_args(detail::AutocastPolicy::Lower, {&query, &key, &value, &attn_mask});
  KILN_CHECK(query.defined() && key.defined() && value.defined(), "[", op,
             "] query, key and value must be defined");
  KILN_CHECK(query.dim() >= 2 && key.dim() >= 2 && value.dim() >= 2, "[", op,
             "] expected query, key and value of at least 2 dims");
  KILN_CHECK(query.is_floating_point(), "[", op, "] expected floating point inputs");
  KILN_CHECK(query.dtype() == key.dtype() && query.dtype() == value.dtype(), "[", op,
             "] Expected query, key, and value to have the same dtype, but got query.dtype: ",
             dtype_name(query.dtype()), " key.dtype: ", dtype_name(key.dtype()),
             ", and value.dtype: ", dtype_name(value.dtype()), " instead.");
  KILN_CHECK(query.size(-1) == key.size(-1), "[", op,
             "] query and key embedding sizes differ: ", query.size(-1), " and ", key.size(-1));
  KILN_CHECK(key.size(-2) == value.size(-2), "[", op,
             "] key and value sequence lengths differ: ", key.size(-2), " and ", value.size(-2));
  KILN_CHECK(!(is_causal && attn_mask.defined()), "[", op,
             "] _scaled_dot_product_attention: Explicit attn_mask should not be set when "
             "is_causal=True");
  KILN_CHECK(dropout_p >= 0 && dropout_p <= 1, "[", op, "] dropout_p must be in [0, 1]");
  if (query.is_cuda()) {
    const std::string why = fused_blocker(query, key, value, attn_mask, enable_gqa);
    if (why.empty())
      return std::get<0>(_scaled_dot_product_flash_attention(
          query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa));
    warn_once(why);
  }
  kiln::detail::set_attention_backend("math");
  return sdpa_math(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa);
}

}  // namespace functional
}  // namespace nn
}  // namespace kiln
