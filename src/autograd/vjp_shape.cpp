// vjps of the data-moving shape primitives (src/ops/defs/shape.def): cat, flip, tril/triu,
// diag_embed and repeat_interleave; each gradient is the adjoint data movement.
#include "autograd/vjp.h"

namespace kiln::detail {

void register_shape_vjps() {
  // Cat: each input gets its slice of the gradient along the cat dim.
  set_vjp(
      OpId::Cat,
      [](VjpContext& c) {
        const int64_t d = c.attrs().i0;
        Tensor g = c.grad();
        int64_t off = 0;
        for (int i = 0; i < c.n_in(); ++i) {
          const int64_t len = c.in_meta(i).sizes[d];
          if (c.needs(i)) c.set(i, g.narrow(d, off, len));
          off += len;
        }
      },
      0);
  set_vjp(
      OpId::Flip, [](VjpContext& c) { c.set(0, kiln::flip(c.grad(), c.attrs().ints)); }, 0);
  set_vjp(
      OpId::Tril, [](VjpContext& c) { c.set(0, kiln::tril(c.grad(), c.attrs().i0)); }, 0);
  set_vjp(
      OpId::Triu, [](VjpContext& c) { c.set(0, kiln::triu(c.grad(), c.attrs().i0)); }, 0);
  // DiagEmbed: the gradient is the same diagonal of the output gradient, moved to the end.
  set_vjp(
      OpId::DiagEmbed,
      [](VjpContext& c) {
        const int64_t dims = c.attrs().i1;
        c.set(0, c.grad().diagonal(c.attrs().i0, dims / 64, dims % 64));
      },
      0);
  // RepeatInterleave: each input slice collects the sum of its repeated copies.
  set_vjp(
      OpId::RepeatInterleave,
      [](VjpContext& c) {
        const int64_t d = c.attrs().i0;
        Tensor reps = c.in(1);
        Tensor g = c.grad();
        Tensor src = kiln::repeat_interleave(reps.to(g.device()));
        const TensorMeta& m = c.in_meta(0);
        Tensor z = kiln::zeros(m.sizes, TensorOptions(g.dtype()).device(m.device));
        c.set(0, z.index_add(d, src, g));
      },
      kIn1);
}

}  // namespace kiln::detail
