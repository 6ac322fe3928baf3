// vjps of the fused attention primitives: FlashAttention(Varlen) -> FlashAttention(Varlen)Backward,
// which recomputes the attention weights from q, k and the saved log-sum-exp.
#include "autograd/vjp.h"
#include "ops/tensor_factory.h"

namespace kiln::detail {
namespace {

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
  c.in.push_back(ctx.grad(0).to(q.dtype()).contiguous());
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
  for (const Tensor* t : {&q, &k, &v})
    c.out.push_back(empty_impl(t->sizes(), t->dtype(), t->device()));
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
