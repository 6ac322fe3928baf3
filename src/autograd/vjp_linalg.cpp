// vjps of the matmul primitive (Bmm: out = alpha * op(a) @ b + beta * c, op = conj when
// attrs.flag) and of the core rows: Copy (the engine casts the gradient) and the view rows.
#include "autograd/vjp.h"

namespace kiln::detail {

void register_linalg_vjps() {
  set_vjp(
      OpId::Bmm,
      [](VjpContext& c) {
        Tensor g = c.grad();
        const bool conj_a = c.attrs().flag;
        Scalar alpha = conj_scalar(c.attrs().has_s0 ? c.attrs().s0 : Scalar(1));
        if (c.needs(0)) {
          // d/da of a @ b: g @ b^H; with op = conj the result is conjugated.
          Tensor ga = times(kiln::bmm(g, conj_if(c.in(1)).mT()), alpha);
          c.set(0, conj_a ? conj_if(ga) : ga);
        }
        if (c.needs(1)) {
          Tensor a = c.in(0);
          const Tensor& b = c.in(1);
          if (b.dim() >= 2 && b.stride(-2) == 1 && b.stride(-1) != 1 && b.size(-1) > 1) {
            // b is a transposed view (linear's weight.t()): (g^T a)^T, so the gradient comes out
            // in the layout of the tensor b views, as PyTorch arranges it (no transposing cast
            // into a row-major weight's .grad).
            Tensor gt = kiln::bmm(g.mT(), conj_a ? a : conj_if(a)).mT();
            c.set(1, times(gt, alpha));
          } else {
            Tensor ah = conj_a ? a.mT() : conj_if(a).mT();
            c.set(1, times(kiln::bmm(ah, g), alpha));
          }
        }
        if (c.n_in() > 2 && c.needs(2)) {
          Scalar beta = conj_scalar(c.attrs().has_s1 ? c.attrs().s1 : Scalar(1));
          c.set(2, times(g, beta));
        }
      },
      kIn0 | kIn1);
}

void register_core_vjps() {
  set_vjp(
      OpId::Copy, [](VjpContext& c) { c.set(0, c.grad()); }, 0);
  // View rows never run through run(): each view op in src/ops/view.cpp records its own node
  // (finish_view). The rows point here so that registry_complete sees them covered.
  for (OpId id : {OpId::ViewOp, OpId::Permute, OpId::Expand, OpId::Squeeze, OpId::Unsqueeze,
                  OpId::Select, OpId::Slice, OpId::Diagonal, OpId::AsStrided, OpId::Unfold})
    set_vjp(
        id,
        [](VjpContext& c) {
          KILN_ASSERT(false, "view ops are differentiated in src/ops/view.cpp, not through run()");
        },
        0);
}

}  // namespace kiln::detail
