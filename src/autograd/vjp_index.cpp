// vjps of the indexing primitives (src/ops/defs/index.def): gather/scatter, index_select /
// index_add / index_copy / index_fill, advanced index / index_put and the masked ops. The
// formulas follow PyTorch's derivatives (each gradient is the adjoint gather or scatter).
#include <optional>

#include "autograd/vjp.h"
#include "kiln/autograd.h"

namespace kiln::detail {

namespace {

Tensor zeros_of(const TensorMeta& m, DType dt) {
  return kiln::zeros(m.sizes, TensorOptions(dt).device(m.device));
}

// The gradient of a source tensor laid out like the index-selected slice; 0-dim sources take
// the single element.
Tensor fit(const Tensor& g, const TensorMeta& m) { return m.sizes.empty() ? g.reshape({}) : g; }

// A gradient gathered at index's shape, zero-padded to src's (scatter may use only a leading
// block of src).
Tensor to_src(const Tensor& t, const TensorMeta& src) {
  if (IntArrayRef(src.sizes) == t.sizes()) return t;
  DimVector pads;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    pads.push_back(0);
    pads.push_back(src.sizes[d] - t.size(d));
  }
  return kiln::pad(t, pads);
}

// The leading block of src that scatter reads (index's shape).
Tensor used_src(const Tensor& src, const Tensor& idx) {
  Tensor r = src;
  for (int64_t d = 0; d < idx.dim(); ++d)
    if (r.size(d) != idx.size(d)) r = r.narrow(d, 0, idx.size(d));
  return r;
}

// For scatter without reduction: true where the src element is the one whose value stays (the
// kernel's last write to its destination when indices repeat).
Tensor scatter_winners(const Tensor& idx, int64_t d, IntArrayRef x_sizes) {
  Tensor ids = kiln::arange(idx.numel(), TensorOptions(DType::Int64).device(idx.device()))
                   .reshape(idx.sizes());
  Tensor none = kiln::full(x_sizes, -1, TensorOptions(DType::Int64).device(idx.device()));
  Tensor owner = kiln::scatter(none, d, idx, ids);
  return owner.gather(d, idx) == ids;
}

// Index tensors of an Index / IndexPut node as the optional list of kiln::index (dims before
// attrs.i0 are taken whole).
std::vector<std::optional<Tensor>> index_list(const VjpContext& c, int first) {
  std::vector<std::optional<Tensor>> v(static_cast<size_t>(c.attrs().i0), std::nullopt);
  for (int i = first; i < c.n_in(); ++i) v.emplace_back(c.in(i));
  return v;
}

// Products sent by scatter to each destination: out_p = base_p * prod of the src elements sent
// to p, base = x (scatter multiply, scatter_reduce prod with include_self) or 1. Zeros in src are
// handled exactly by counting them per destination (as the prod reduction's gradient). Sets the
// src gradient; returns the gradient of base.
Tensor scatter_prod_grads(VjpContext& c, bool with_x) {
  const int64_t d = c.attrs().i0;
  Tensor g = c.grad(), x = c.in(0), idx = c.in(1), src = used_src(c.in(2), c.in(1));
  Tensor sz = src == 0;
  Tensor safe = kiln::where(sz, kiln::ones_like(src), src);
  Tensor pn = kiln::scatter(kiln::ones_like(x), d, idx, safe, "multiply");
  Tensor zc = kiln::scatter_add(kiln::zeros_like(x), d, idx, sz.to(x.dtype()));
  if (c.needs(2)) {
    Tensor base = with_x ? x * pn : pn;
    Tensor xp = base.gather(d, idx), zj = zc.gather(d, idx);
    Tensor zero = kiln::zeros_like(xp);
    Tensor others =
        kiln::where(sz, kiln::where(zj == 1, xp, zero), kiln::where(zj == 0, xp / safe, zero));
    c.set(2, to_src(g.gather(d, idx) * conj_if(others), c.in_meta(2)));
  }
  return g * conj_if(kiln::where(zc == 0, pn, kiln::zeros_like(pn)));
}

void scatter_multiply_grads(VjpContext& c) {
  Tensor gx = scatter_prod_grads(c, true);
  c.set(0, gx);
}

// scatter_reduce: i1 = 0 sum 1 prod 2 mean 3 amax 4 amin, flag = include_self. Positions no
// index hits keep x (gradient g); hit positions without include_self drop x (gradient 0).
void scatter_reduce_vjp(VjpContext& c) {
  const int64_t d = c.attrs().i0, red = c.attrs().i1;
  const bool self = c.attrs().flag;
  Tensor g = c.grad(), x = c.in(0), idx = c.in(1), src = used_src(c.in(2), c.in(1));
  Tensor count = kiln::scatter_add(kiln::zeros_like(x), d, idx, kiln::ones_like(src));
  Tensor hit = count != 0;
  Tensor zero = kiln::zeros_like(g);
  Tensor unhit_g = kiln::where(hit, zero, g);
  if (red == 0) {
    c.set(0, self ? g : unhit_g);
    if (c.needs(2)) c.set(2, to_src(g.gather(d, idx), c.in_meta(2)));
  } else if (red == 1) {
    Tensor gx = scatter_prod_grads(c, self);
    c.set(0, self ? gx : unhit_g);
  } else if (red == 2) {
    Tensor n = self ? count + 1 : count;
    Tensor gn = g / kiln::where(n == 0, kiln::ones_like(n), n);
    c.set(0, self ? gn : unhit_g);
    if (c.needs(2)) c.set(2, to_src(gn.gather(d, idx), c.in_meta(2)));
  } else {
    // amax / amin: the gradient is shared evenly by the elements equal to the result.
    Tensor y = c.out(0);
    Tensor eq_self = x == y;
    if (!self) eq_self = eq_self & kiln::logical_not(hit);
    Tensor eq_src = src == y.gather(d, idx);
    Tensor cnt = kiln::scatter_add(eq_self.to(x.dtype()), d, idx, eq_src.to(x.dtype()));
    Tensor share = g / kiln::where(cnt == 0, kiln::ones_like(cnt), cnt);
    c.set(0, kiln::where(eq_self, share, zero));
    if (c.needs(2))
      c.set(2,
            to_src(kiln::where(eq_src, share.gather(d, idx), kiln::zeros_like(src).to(g.dtype())),
                   c.in_meta(2)));
  }
}

constexpr uint32_t kAllIn = 0xFFFFu;

}  // namespace

void register_index_vjps() {
  set_vjp(
      OpId::IndexSelect,
      [](VjpContext& c) {
        Tensor g = c.grad();
        Tensor z = zeros_of(c.in_meta(0), g.dtype());
        c.set(0, z.index_add(c.attrs().i0, c.in(1), g));
      },
      kIn1);
  set_vjp(
      OpId::Gather,
      [](VjpContext& c) {
        Tensor g = c.grad();
        Tensor z = zeros_of(c.in_meta(0), g.dtype());
        c.set(0, z.scatter_add(c.attrs().i0, c.in(1), g));
      },
      kIn1);
  // Scatter: reduce none overwrites (x gets no gradient there), add passes g through, multiply
  // (scatter_multiply_grads) differentiates the products.
  set_vjp(
      OpId::Scatter,
      [](VjpContext& c) {
        const int64_t d = c.attrs().i0, reduce = c.attrs().i1;
        Tensor g = c.grad(), idx = c.in(1);
        if (reduce == 2) return scatter_multiply_grads(c);
        if (c.needs(0)) c.set(0, reduce == 1 ? g : kiln::scatter(g, d, idx, Scalar(0)));
        if (c.needs(2)) {
          Tensor gs = g.gather(d, idx);
          if (reduce == 0)
            gs = kiln::where(scatter_winners(idx, d, c.in_meta(0).sizes), gs, kiln::zeros_like(gs));
          c.set(2, to_src(gs, c.in_meta(2)));
        }
      },
      kIn0 | kIn1 | kIn2);
  set_vjp(
      OpId::ScatterValue,
      [](VjpContext& c) {
        const int64_t d = c.attrs().i0, reduce = c.attrs().i1;
        Tensor g = c.grad();
        if (reduce == 1) return c.set(0, g);
        if (reduce == 0) return c.set(0, kiln::scatter(g, d, c.in(1), Scalar(0)));
        // multiply: out = x * value^(times hit).
        Tensor p = kiln::scatter(kiln::ones_like(g), d, c.in(1), c.attrs().s0, "multiply");
        c.set(0, g * conj_if(p));
      },
      kIn1);
  set_vjp(
      OpId::ScatterAdd,
      [](VjpContext& c) {
        Tensor g = c.grad();
        c.set(0, g);
        if (c.needs(2)) c.set(2, to_src(g.gather(c.attrs().i0, c.in(1)), c.in_meta(2)));
      },
      kIn1);
  set_vjp(OpId::ScatterReduce, scatter_reduce_vjp, kIn0 | kIn1 | kIn2 | kOut0);
  set_vjp(
      OpId::IndexAdd,
      [](VjpContext& c) {
        Tensor g = c.grad();
        c.set(0, g);
        if (c.needs(2)) {
          Tensor s = g.index_select(c.attrs().i0, c.in(1)) * c.attrs().s0;
          c.set(2, fit(s, c.in_meta(2)));
        }
      },
      kIn1);
  set_vjp(
      OpId::IndexCopy,
      [](VjpContext& c) {
        Tensor g = c.grad(), idx = c.in(1);
        const int64_t d = c.attrs().i0;
        if (c.needs(0)) c.set(0, kiln::index_fill(g, d, idx, Scalar(0)));
        if (c.needs(2)) c.set(2, fit(g.index_select(d, idx), c.in_meta(2)));
      },
      kIn1);
  set_vjp(
      OpId::IndexFill,
      [](VjpContext& c) { c.set(0, kiln::index_fill(c.grad(), c.attrs().i0, c.in(1), Scalar(0))); },
      kIn1);
  // Index: the indexed dims (adjacent, from attrs.i0) are flattened into one, and the gradient
  // is accumulated there with index_add at the linear positions (index_add has a vjp).
  set_vjp(
      OpId::Index,
      [](VjpContext& c) {
        Tensor g = c.grad();
        const auto& xs = c.in_meta(0).sizes;
        const int64_t first = c.attrs().i0, m = c.n_in() - 1;
        Tensor lin;
        int64_t span = 1;
        for (int64_t k = 0; k < m; ++k) {
          const int64_t s = xs[first + k];
          Tensor ik = c.in(static_cast<int>(k + 1)).to(DType::Int64);
          ik = kiln::where(ik < 0, ik + s, ik);
          lin = lin.defined() ? lin * s + ik : ik;
          span *= s;
        }
        const int64_t bdim = lin.dim();
        DimVector flat_x(xs.begin(), xs.begin() + first);
        flat_x.push_back(span);
        for (size_t d = first + m; d < xs.size(); ++d) flat_x.push_back(xs[d]);
        DimVector flat_g(g.sizes().begin(), g.sizes().begin() + first);
        flat_g.push_back(lin.numel());
        for (int64_t d = first + bdim; d < g.dim(); ++d) flat_g.push_back(g.size(d));
        Tensor z = kiln::zeros(flat_x, TensorOptions(g.dtype()).device(g.device()));
        Tensor r = z.index_add(first, lin.reshape({-1}), g.reshape(flat_g));
        c.set(0, r.reshape(xs));
      },
      kAllIn & ~kIn0);
  // IndexPut: in = (x, values, idx...).
  set_vjp(
      OpId::IndexPut,
      [](VjpContext& c) {
        Tensor g = c.grad();
        auto idx = index_list(c, 2);
        if (c.needs(0)) {
          if (c.attrs().flag) {
            c.set(0, g);
          } else {
            // Positions overwritten by values get no gradient (mask built without recording).
            Tensor hit;
            {
              NoGradGuard ng;
              Tensor one = kiln::ones({}, TensorOptions(g.dtype()).device(g.device()));
              hit = kiln::index_put(kiln::zeros_like(g.detach()), idx, one, false);
            }
            c.set(0, kiln::where(hit != 0, kiln::zeros_like(g), g));
          }
        }
        if (c.needs(1)) {
          Tensor gv = kiln::index(g, idx);
          if (!c.attrs().flag) {
            // Without accumulate, repeated indices keep one write (the kernel's last), as for
            // scatter: only that value gets the gradient, so it is the derivative of what the
            // forward computed (PyTorch gives every duplicate the gradient).
            Tensor win;
            {
              NoGradGuard ng;
              TensorOptions i64 = TensorOptions(DType::Int64).device(g.device());
              Tensor ids = kiln::arange(gv.numel(), i64).reshape(gv.sizes());
              Tensor owner = kiln::index_put(kiln::full(g.sizes(), -1, i64), idx, ids, false);
              win = kiln::index(owner, idx) == ids;
            }
            gv = kiln::where(win, gv, kiln::zeros_like(gv));
          }
          c.set(1, gv);
        }
      },
      kAllIn & ~(kIn0 | kIn1));
  // MaskedFill: in = (x, mask) of one shape.
  set_vjp(
      OpId::MaskedFill,
      [](VjpContext& c) { c.set(0, kiln::masked_fill(c.grad(), c.in(1), Scalar(0))); }, kIn1);
  // MaskedSelect: in = (x, mask) of one shape; out is 1-D.
  set_vjp(
      OpId::MaskedSelect,
      [](VjpContext& c) {
        Tensor g = c.grad();
        Tensor z = zeros_of(c.in_meta(0), g.dtype());
        c.set(0, kiln::masked_scatter(z, c.in(1), g));
      },
      kIn1);
  // MaskedScatter: in = (x, mask, source); source elements feed the true positions in order.
  set_vjp(
      OpId::MaskedScatter,
      [](VjpContext& c) {
        Tensor g = c.grad(), mask = c.in(1);
        if (c.needs(0)) c.set(0, kiln::masked_fill(g, mask, Scalar(0)));
        if (c.needs(2)) {
          const TensorMeta& s = c.in_meta(2);
          int64_t n = 1;
          for (int64_t v : s.sizes) n *= v;
          Tensor sel = kiln::masked_select(g, mask);
          if (sel.numel() < n) {
            Tensor pad =
                kiln::zeros({n - sel.numel()}, TensorOptions(g.dtype()).device(g.device()));
            sel = kiln::cat({sel, pad}, 0);
          }
          c.set(2, sel.reshape(s.sizes));
        }
      },
      kIn1);
}

}  // namespace kiln::detail
