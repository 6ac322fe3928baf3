// Reduction geometry: splits a tensor's dims into kept and reduced ones, orders and merges the
// reduced dims, and picks inner or lane mode (Note [CPU reduction order] in reduce_engine.h).
#include "kernels/cpu/reduce_engine.h"

#include <cstdlib>

namespace kiln::cpu::red {

Geometry make_geometry(const Tensor& in, IntArrayRef dims, const Tensor* outs, int nout,
                       bool ordered) {
  KILN_ASSERT(nout >= 1 && nout <= 2, "reductions have one or two outputs");
  Geometry g;
  const int64_t nd = in.dim();
  KILN_CHECK(nd <= kMaxDims, "[reduce] tensors with more than ", kMaxDims,
             " dims are not supported");
  bool reduced[kMaxDims] = {};
  for (int64_t d : dims) {
    KILN_ASSERT(d >= 0 && (d < nd || (nd == 0 && d == 0)), "reduce dim out of range");
    if (nd > 0) reduced[d] = true;
  }
  const bool keepdim = nout > 0 && outs[0].dim() == nd;
  // Reduced dims (size != 1) in logical order, kept dims (size != 1) with their out strides.
  int64_t rs[kMaxDims], rst[kMaxDims];
  int nr = 0;
  int64_t ks[kMaxDims], kin[kMaxDims], kout[2][kMaxDims];
  int nk = 0;
  int out_dim = 0;
  for (int64_t d = 0; d < nd; ++d) {
    const int64_t size = in.sizes()[d];
    if (reduced[d]) {
      g.R *= size;
      if (size != 1) {
        rs[nr] = size;
        rst[nr++] = in.strides()[d];
      }
      if (keepdim) ++out_dim;
      continue;
    }
    g.O *= size;
    if (size != 1) {
      ks[nk] = size;
      kin[nk] = in.strides()[d];
      for (int k = 0; k < 2; ++k) kout[k][nk] = k < nout ? outs[k].strides()[out_dim] : 0;
      ++nk;
    }
    ++out_dim;
  }
  // Memory order for the reduced dims: outer = largest stride (stable, so ties keep order).
  int perm[kMaxDims];
  for (int i = 0; i < nr; ++i) perm[i] = i;
  if (!ordered)
    std::stable_sort(perm, perm + nr,
                     [&](int a, int b) { return std::llabs(rst[a]) > std::llabs(rst[b]); });
  for (int i = 0; i < nr; ++i) {
    const int64_t size = rs[perm[i]], stride = rst[perm[i]];
    if (g.nr > 0 && g.rst[g.nr - 1] == stride * size) {
      g.rsize[g.nr - 1] *= size;
      g.rst[g.nr - 1] = stride;
      continue;
    }
    g.rsize[g.nr] = size;
    g.rst[g.nr++] = stride;
  }
  // Lane mode when a kept dim steps through memory more finely than the innermost reduced dim.
  int lane = -1;
  if (g.R > 1 && g.O > 1 && g.nr > 0) {
    int64_t best = std::llabs(g.rst[g.nr - 1]);
    for (int i = 0; i < nk; ++i)
      if (std::llabs(kin[i]) < best) {
        best = std::llabs(kin[i]);
        lane = i;
      }
  }
  for (int i = 0; i < nk; ++i) {
    if (i == lane) {
      g.lanes = true;
      g.lane_n = ks[i];
      g.lane_in = kin[i];
      g.lane_out[0] = kout[0][i];
      g.lane_out[1] = kout[1][i];
      continue;
    }
    g.ksize[g.nk] = ks[i];
    g.kin[g.nk] = kin[i];
    g.kout[0][g.nk] = kout[0][i];
    g.kout[1][g.nk] = kout[1][i];
    ++g.nk;
  }
  return g;
}

}  // namespace kiln::cpu::red
