// The CPU reduction engine shared by every reduction kernel: the geometry of kept and reduced
// dims, the fixed pairwise combine tree, and the parallel driver (Note [CPU reduction order]).
// The per-op math (leaf, combine, write) lives in reduce_ops.h.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>

#include "backend/cpu/parallel.h"
#include "kiln/tensor.h"
#include "ops/op.h"

namespace kiln::cpu::red {

// Note [CPU reduction order]
// The reduced elements of one output are walked in a fixed linear order: row-major over the
// reduced dims, which are first sorted by decreasing stride (memory order) unless the op returns
// indices (then they keep their logical order), and merged where contiguous. The order is cut
// into leaves of Op::kLeaf elements (inner mode) or kLaneRows rows (lane mode). A leaf is reduced
// by the op's leaf function (several independent accumulators, or two passes for var/logsumexp);
// leaf results are combined by a binary counter, i.e. a perfect pairwise tree over aligned
// blocks of 2^k leaves, so a float sum's error grows like O(leaf + log n). A parallel split of
// one output's range uses aligned blocks of 2^k leaves whose results enter the same counter at
// level k: serial and threaded runs perform the same operations in the same order, and results
// never depend on the thread count.
// Inner mode: a reduced dim is innermost in memory; each output walks its own elements.
// Lane mode: a kept dim is innermost (e.g. dim 0 of a [1M, 64] tensor); up to kLanes adjacent
// outputs are reduced together, one vectorizable step across the lanes per reduced row.

constexpr int kMaxDims = 64;
constexpr int kMaxLevels = 64;
constexpr int64_t kLanes = 64;
constexpr int64_t kLaneRows = 16;

struct Geometry {
  int nr = 0;  // reduced dims (size > 1, merged), outer first
  int64_t rsize[kMaxDims] = {}, rst[kMaxDims] = {};
  int nk = 0;  // kept dims (size > 1), outer first; the lane dim is not among them
  int64_t ksize[kMaxDims] = {}, kin[kMaxDims] = {}, kout[2][kMaxDims] = {};
  bool lanes = false;
  int64_t lane_n = 1, lane_in = 0, lane_out[2] = {0, 0};
  int64_t O = 1;  // outputs
  int64_t R = 1;  // reduced elements per output
};

// Geometry of reducing `in` over `dims` (wrapped, any order; empty for a 0-dim input) into
// outs[0..nout) (keepdim or not, detected from their rank). Strides are in elements. `ordered`
// keeps the reduced dims in logical order (ops that return indices).
Geometry make_geometry(const Tensor& in, IntArrayRef dims, const Tensor* outs, int nout,
                       bool ordered);

// Calls f(ptr, stride, n, first_index) for the runs of the innermost reduced dim that cover the
// reduced linear range [a, b) of the output whose elements start at p.
template <class T, class F>
inline void for_segments(const Geometry& g, const T* p, int64_t a, int64_t b, const F& f) {
  if (a >= b) return;
  if (g.nr <= 1) {  // the common case: one (merged) reduced dim; R == 1 when there is none
    const int64_t s = g.nr == 1 ? g.rst[0] : 0;
    f(p + a * s, s, b - a, a);
    return;
  }
  const int last = g.nr - 1;
  const int64_t n_in = g.rsize[last], s_in = g.rst[last];
  int64_t row = a / n_in, off = a - row * n_in;
  int64_t idx[kMaxDims];
  const T* rp = p;
  for (int d = last - 1; d >= 0; --d) {
    idx[d] = row % g.rsize[d];
    row /= g.rsize[d];
    rp += idx[d] * g.rst[d];
  }
  while (true) {
    const int64_t n = std::min(n_in - off, b - a);
    f(rp + off * s_in, s_in, n, a);
    a += n;
    if (a >= b) return;
    off = 0;
    for (int d = last - 1; d >= 0; --d) {
      rp += g.rst[d];
      if (++idx[d] < g.rsize[d]) break;
      rp -= g.rst[d] * g.rsize[d];
      idx[d] = 0;
    }
  }
}

// Walks the kept dims in row-major order, tracking the input and output element offsets.
struct KeptCursor {
  const Geometry& g;
  int64_t idx[kMaxDims];
  int64_t in = 0, out0 = 0, out1 = 0;
  KeptCursor(const Geometry& geo, int64_t start) : g(geo) {
    for (int d = g.nk - 1; d >= 0; --d) {
      idx[d] = start % g.ksize[d];
      start /= g.ksize[d];
      in += idx[d] * g.kin[d];
      out0 += idx[d] * g.kout[0][d];
      out1 += idx[d] * g.kout[1][d];
    }
  }
  void next() {
    for (int d = g.nk - 1; d >= 0; --d) {
      in += g.kin[d];
      out0 += g.kout[0][d];
      out1 += g.kout[1][d];
      if (++idx[d] < g.ksize[d]) return;
      in -= g.kin[d] * g.ksize[d];
      out0 -= g.kout[0][d] * g.ksize[d];
      out1 -= g.kout[1][d] * g.ksize[d];
      idx[d] = 0;
    }
  }
};

// The binary counter over scalar accumulators (Note [CPU reduction order]).
template <class Acc>
struct Tree {
  Acc item[kMaxLevels];
  int8_t level[kMaxLevels];
  int n = 0;
  template <class Op>
  void push(Acc a, int lv, const Op& op) {
    while (n > 0 && level[n - 1] == lv) {
      a = op.combine(item[n - 1], a);
      --n;
      ++lv;
    }
    item[n] = a;
    level[n++] = static_cast<int8_t>(lv);
  }
  void append(const Acc& a) {  // the last, partial block: never merged on push
    item[n] = a;
    level[n++] = -1;
  }
  template <class Op>
  Acc finish(const Op& op) const {
    Acc r = item[n - 1];
    for (int i = n - 2; i >= 0; --i) r = op.combine(item[i], r);
    return r;
  }
};

// The binary counter over blocks of W lane accumulators, in caller-provided storage.
template <class Acc>
struct LaneTree {
  Acc* buf;
  int64_t W;
  int8_t level[kMaxLevels];
  int n = 0;
  LaneTree(Acc* b, int64_t w) : buf(b), W(w) {}
  Acc* top() { return buf + n * W; }  // where the next item is written before push/append
  template <class Op>
  void push(int lv, const Op& op) {
    while (n > 0 && level[n - 1] == lv) {
      Acc* a = buf + (n - 1) * W;
      const Acc* b = a + W;
      for (int64_t w = 0; w < W; ++w) a[w] = op.combine(a[w], b[w]);
      --n;
      ++lv;
    }
    level[n++] = static_cast<int8_t>(lv);
  }
  void append() { level[n++] = -1; }
  template <class Op>
  Acc* finish(const Op& op) {
    for (int i = n - 2; i >= 0; --i) {
      Acc* a = buf + i * W;
      const Acc* b = a + W;
      for (int64_t w = 0; w < W; ++w) a[w] = op.combine(a[w], b[w]);
    }
    return buf;
  }
};

// Scratch storage for accumulators (std::vector<bool> has no data()).
template <class Acc>
struct Buffer {
  std::unique_ptr<Acc[]> p;
  explicit Buffer(int64_t n) : p(new Acc[static_cast<size_t>(n)]) {}
  Acc* data() { return p.get(); }
  Acc& operator[](int64_t i) { return p[i]; }
};

inline int ceil_log2(int64_t v) {
  int k = 0;
  while ((int64_t(1) << k) < v) ++k;
  return k;
}

// Splits `leaves` leaves into aligned blocks of 2^k leaves, about 4 per thread.
inline int chunk_level(int64_t leaves, int threads) {
  int64_t target = std::max<int64_t>(1, leaves / (4 * int64_t(threads)));
  return ceil_log2(target);
}

template <class Op>
void run_inner(const Op& op, const Geometry& g, const typename Op::In* x) {
  using Acc = typename Op::Acc;
  using In = typename Op::In;
  const int64_t R = g.R, L = Op::kLeaf;
  auto leaf = [&](const In* p, int64_t a, int64_t b) {
    return op.leaf([&](const auto& f) { for_segments(g, p, a, b, f); });
  };
  auto whole = [&](const In* p) -> Acc {
    if (R <= L) return leaf(p, 0, R);
    Tree<Acc> t;
    for (int64_t s = 0; s < R; s += L) t.push(leaf(p, s, std::min(R, s + L)), 0, op);
    return t.finish(op);
  };
  const int nt = get_num_threads();
  const int64_t leaves = (R + L - 1) / L;
  if (g.O >= 2 * nt || leaves < 8 || nt == 1 || in_parallel_region()) {
    const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(R, 1));
    if (g.nr == 1 && g.rst[0] == 1 && R <= L && g.nk <= 1) {
      // Short contiguous rows (e.g. sum over dim 1 of [1M, 16]): one leaf per output, outputs
      // one stride apart; the same leaf as below, without the per-output walking machinery.
      const int64_t si = g.nk == 1 ? g.kin[0] : 0;
      const int64_t so0 = g.nk == 1 ? g.kout[0][0] : 0, so1 = g.nk == 1 ? g.kout[1][0] : 0;
      parallel_for(0, g.O, grain, [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) {
          const In* p = x + o * si;
          op.write(op.leaf([&](const auto& f) { f(p, int64_t(1), R, int64_t(0)); }), o * so0,
                   o * so1);
        }
      });
      return;
    }
    parallel_for(0, g.O, grain, [&](int64_t b, int64_t e) {
      KeptCursor cur(g, b);
      for (int64_t o = b; o < e; ++o, cur.next()) op.write(whole(x + cur.in), cur.out0, cur.out1);
    });
    return;
  }
  // Few outputs with long reductions: split each output's range into aligned blocks.
  const int k = chunk_level(leaves, nt);
  const int64_t chunk = L << k;
  const int64_t nchunks = (R + chunk - 1) / chunk;
  Buffer<Acc> part(nchunks);
  KeptCursor cur(g, 0);
  for (int64_t o = 0; o < g.O; ++o, cur.next()) {
    const In* p = x + cur.in;
    parallel_for(0, nchunks, 1, [&](int64_t cb, int64_t ce) {
      for (int64_t c = cb; c < ce; ++c) {
        Tree<Acc> t;
        const int64_t e = std::min(R, (c + 1) * chunk);
        for (int64_t s = c * chunk; s < e; s += L) t.push(leaf(p, s, std::min(e, s + L)), 0, op);
        part[c] = t.finish(op);
      }
    });
    Tree<Acc> t;
    for (int64_t c = 0; c + 1 < nchunks; ++c) t.push(part[c], k, op);
    t.append(part[nchunks - 1]);
    op.write(t.finish(op), cur.out0, cur.out1);
  }
}

template <class Op>
void run_lanes(const Op& op, const Geometry& g, const typename Op::In* x) {
  using Acc = typename Op::Acc;
  using In = typename Op::In;
  const int64_t R = g.R, L = kLaneRows;
  const int64_t nb = (g.lane_n + kLanes - 1) / kLanes;  // lane blocks per outer output
  const int64_t outer = g.O / g.lane_n;
  const int64_t units = outer * nb;
  const int64_t leaves = (R + L - 1) / L;
  const int64_t tree_slots = ceil_log2(leaves) + 3;
  auto leaf = [&](const In* p, int64_t a, int64_t b, int64_t W, Acc* dst) {
    op.leaf_lanes([&](const auto& f) { for_segments(g, p, a, b, f); }, W, g.lane_in, dst);
  };
  // Reduces rows [a, b) (aligned) of W lanes at p into a tree; returns the finished block.
  auto range = [&](const In* p, int64_t a, int64_t b, int64_t W, Acc* scratch) -> Acc* {
    LaneTree<Acc> t(scratch, W);
    for (int64_t s = a; s < b; s += L) {
      leaf(p, s, std::min(b, s + L), W, t.top());
      t.push(0, op);
    }
    return t.finish(op);
  };
  auto write_block = [&](const Acc* res, int64_t W, int64_t o0, int64_t o1) {
    for (int64_t w = 0; w < W; ++w)
      op.write(res[w], o0 + w * g.lane_out[0], o1 + w * g.lane_out[1]);
  };
  const int nt = get_num_threads();
  if (units >= 2 * nt || leaves < 8 || nt == 1 || in_parallel_region()) {
    const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(R * kLanes, 1));
    parallel_for(0, units, grain, [&](int64_t b, int64_t e) {
      Buffer<Acc> scratch(tree_slots * kLanes);
      int64_t q = b / nb;
      KeptCursor cur(g, q);
      for (int64_t u = b; u < e; ++u) {
        if (u / nb != q) {
          ++q;
          cur.next();
        }
        const int64_t bi = u % nb, l0 = bi * kLanes;
        const int64_t W = std::min(kLanes, g.lane_n - l0);
        const Acc* res = range(x + cur.in + l0 * g.lane_in, 0, R, W, scratch.data());
        write_block(res, W, cur.out0 + l0 * g.lane_out[0], cur.out1 + l0 * g.lane_out[1]);
      }
    });
    return;
  }
  const int k = chunk_level(leaves, nt);
  const int64_t chunk = L << k;
  const int64_t nchunks = (R + chunk - 1) / chunk;
  Buffer<Acc> part(nchunks * kLanes);
  Buffer<Acc> top_scratch((ceil_log2(nchunks) + 3) * kLanes);
  for (int64_t u = 0; u < units; ++u) {
    const int64_t q = u / nb, bi = u % nb, l0 = bi * kLanes;
    const int64_t W = std::min(kLanes, g.lane_n - l0);
    KeptCursor cur(g, q);
    const In* p = x + cur.in + l0 * g.lane_in;
    parallel_for(0, nchunks, 1, [&](int64_t cb, int64_t ce) {
      Buffer<Acc> scratch((k + 3) * kLanes);
      for (int64_t c = cb; c < ce; ++c) {
        const Acc* r = range(p, c * chunk, std::min(R, (c + 1) * chunk), W, scratch.data());
        std::copy(r, r + W, part.data() + c * kLanes);
      }
    });
    LaneTree<Acc> t(top_scratch.data(), W);
    for (int64_t c = 0; c < nchunks; ++c) {
      std::copy(part.data() + c * kLanes, part.data() + c * kLanes + W, t.top());
      if (c + 1 < nchunks)
        t.push(k, op);
      else
        t.append();
    }
    write_block(t.finish(op), W, cur.out0 + l0 * g.lane_out[0], cur.out1 + l0 * g.lane_out[1]);
  }
}

// Runs a reduction op over the geometry (O == 0 does nothing; R == 0 writes each output's
// identity through op.write).
template <class Op>
void run(const Op& op, const Geometry& g, const typename Op::In* x) {
  if (g.O == 0) return;
  if (g.lanes)
    run_lanes(op, g, x);
  else
    run_inner(op, g, x);
}

// Builds the geometry from an OpCall (input c.in[0], outputs c.out[0..nout)) and runs op.
template <class Op>
void reduce(const Op& op, const OpCall& c, int nout) {
  const Tensor& x = c.in[0];
  Geometry g = make_geometry(x, c.attrs.ints, c.out.data(), nout, Op::kOrdered);
  run(op, g, static_cast<const typename Op::In*>(x.data_ptr()));
}

}  // namespace kiln::cpu::red
