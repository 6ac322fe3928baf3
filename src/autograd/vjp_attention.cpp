// vjps of the fused attention primitives: FlashAttention(Varlen) -> FlashAttention(Varlen)Backward,
// which recomputes the attention weights from q, k and the saved log-sum-exp; packed-QKV gradients.
#include "autograd/view_autograd.h"
#include "autograd/vjp.h"
#include "kernels/gpu/attention/flash_call.h"
#include "ops/tensor_factory.h"

namespace kiln::detail {
namespace {

// Note [Packed QKV gradients]
// ---------------------------
// GPT-2 style models compute qkv = x W^T as one [B, T, 3 H D] tensor and split it into q, k, v
// heads: views of one [B, T, 3, H, D] tensor, i.e. q, k, v of equal sizes [B, H, T, D], equal
// strides (3 H D T, D, 3 H D, 1) (dims of size 1 do not count: B == 1 frees the batch stride),
// one storage, and k, v starting H D and 2 H D elements after q. Their gradients are then
// allocated the same way: ONE [B, T, 3 H D] buffer, with dq, dk, dv returned as plain
// (autograd-untracked) views of it at offsets 0, H D, 2 H D and q's strides. The kernels write
// every element of the three views, which together tile the buffer exactly, so after the
// transposes' and reshapes' backward (views again) the split's backward sees three gradients that
// exactly tile one buffer in order and returns that buffer as the gradient of qkv without a copy
// (src/autograd, the split's multi-output node). Any other layout gets contiguous gradients.
bool strides_match(const Tensor& t, const int64_t (&st)[4]) {
  for (int64_t i = 0; i < 4; ++i)
    if (t.size(i) > 1 && t.stride(i) != st[i]) return false;
  return true;
}

bool packed_qkv(const Tensor& q, const Tensor& k, const Tensor& v) {
  if (q.dim() != 4 || k.sizes() != q.sizes() || v.sizes() != q.sizes() || q.numel() == 0)
    return false;
  const Storage& s = q.impl()->storage();
  if (!s || k.impl()->storage().get() != s.get() || v.impl()->storage().get() != s.get())
    return false;
  const int64_t h = q.size(1), t = q.size(2), d = q.size(3), row = 3 * h * d;
  const int64_t want[4] = {row * t, d, row, 1};
  return strides_match(q, want) && strides_match(k, want) && strides_match(v, want) &&
         k.storage_offset() == q.storage_offset() + h * d &&
         v.storage_offset() == q.storage_offset() + 2 * h * d;
}

// in {q, k, v, [mask]} (dense) or {q, k, v, cu_q, cu_k} (varlen); out {o, lse}.
void flash_vjp(VjpContext& ctx) {
  const bool varlen = ctx.op() == OpId::FlashAttentionVarlen;
  const char* op = op_name(ctx.op());
  KILN_CHECK(!ctx.has_grad(1), "[", op,
             "] the log-sum-exp output is not differentiable (it is returned for inspection)");
  if (!ctx.needs(0) && !ctx.needs(1) && !ctx.needs(2)) return;
  KILN_CHECK(varlen || ctx.n_in() < 4 || !ctx.needs(3), "[", op,
             "] attn_mask gets no gradient from the fused kernels");
  OpCall c(varlen ? OpId::FlashAttentionVarlenBackward : OpId::FlashAttentionBackward);
  c.attrs = ctx.attrs();
  const Tensor q = ctx.in(0), k = ctx.in(1), v = ctx.in(2);
  c.in.push_back(flash_operand(ctx.grad(0).to(q.dtype())));
  c.in.push_back(q);
  c.in.push_back(k);
  c.in.push_back(v);
  c.in.push_back(ctx.out(0));
  c.in.push_back(ctx.out(1));
  if (varlen) {
    c.in.push_back(ctx.in(3));
    c.in.push_back(ctx.in(4));
  } else if (ctx.n_in() > 3) {
    c.in.push_back(ctx.in(3));
  }
  if (!varlen && packed_qkv(q, k, v)) {
    const int64_t b = q.size(0), h = q.size(1), t = q.size(2), d = q.size(3);
    const Tensor buf = empty_impl({b, t, 3 * h * d}, q.dtype(), q.device());
    const int64_t st[4] = {3 * h * d * t, d, 3 * h * d, 1};
    for (int64_t i = 0; i < 3; ++i)
      c.out.push_back(alias_untracked(buf, q.sizes(), IntArrayRef(st, 4), i * h * d));
  } else {
    for (const Tensor* x : {&q, &k, &v})
      c.out.push_back(empty_impl(x->sizes(), x->dtype(), x->device()));
  }
  c.compute = q.dtype();
  run(c);
  ctx.set(0, c.out[0]);
  ctx.set(1, c.out[1]);
  ctx.set(2, c.out[2]);
}

}  // namespace

void register_attention_vjps() {
  constexpr uint32_t kIn3 = 8u, kIn4 = 16u;
  set_vjp(OpId::FlashAttention, flash_vjp, kIn0 | kIn1 | kIn2 | kIn3 | kOut0 | kOut1);
  set_vjp(OpId::FlashAttentionVarlen, flash_vjp, kIn0 | kIn1 | kIn2 | kIn3 | kIn4 | kOut0 | kOut1);
}

}  // namespace kiln::detail
