// vjps of the reductions (src/ops/defs/reduce.def): attrs.ints holds the reduced dims (all
// dims listed), attrs.flag keepdim; gradients are broadcast back over the reduced dims.
#include <cmath>
#include <limits>

#include "autograd/vjp.h"

namespace kiln::detail {

Tensor unsqueeze_reduced(const Tensor& g, IntArrayRef dims, int64_t in_dim, bool keepdim) {
  if (keepdim || in_dim == 0) return g;
  Tensor r = g;
  for (int64_t d : dims) r = r.unsqueeze(d);  // dims ascending
  return r;
}

namespace {

// g (or a saved output) re-expanded to the input's shape.
Tensor expand_back(const VjpContext& c, const Tensor& t) {
  const TensorMeta& m = c.in_meta(0);
  Tensor r =
      unsqueeze_reduced(t, c.attrs().ints, static_cast<int64_t>(m.sizes.size()), c.attrs().flag);
  return r.expand(m.sizes);
}

int64_t reduced_count(const VjpContext& c) {
  int64_t n = 1;
  for (int64_t d : c.attrs().ints) n *= c.in_meta(0).sizes[d];
  return n;
}

Tensor masked(const Tensor& cond, const Tensor& g) {
  return kiln::where(cond, g, kiln::zeros_like(g));
}

// amax/amin, and the inf-norms: the gradient is split evenly among the extremal elements.
Tensor evenly(const VjpContext& c, const Tensor& x, const Tensor& y, const Tensor& g) {
  Tensor mask = x == expand_back(c, y);
  Tensor cnt = mask.sum(c.attrs().ints, true);
  Tensor ge = expand_back(c, g);
  Tensor share = ge / cnt.expand(c.in_meta(0).sizes);
  return masked(mask, share);
}

}  // namespace

void register_reduce_vjps() {
  set_vjp(
      OpId::Sum, [](VjpContext& c) { c.set(0, expand_back(c, c.grad())); }, 0);
  set_vjp(
      OpId::NanSum,
      [](VjpContext& c) {
        c.set(0, masked(kiln::logical_not(kiln::isnan(c.in(0))), expand_back(c, c.grad())));
      },
      kIn0);
  set_vjp(
      OpId::Mean,
      [](VjpContext& c) {
        c.set(0, expand_back(c, c.grad()) / static_cast<double>(reduced_count(c)));
      },
      0);
  set_vjp(
      OpId::NanMean,
      [](VjpContext& c) {
        Tensor ok = kiln::logical_not(kiln::isnan(c.in(0)));
        Tensor cnt = ok.sum(c.attrs().ints, true).to(c.grad().dtype());
        c.set(0, masked(ok, expand_back(c, c.grad()) / cnt.expand(c.in_meta(0).sizes)));
      },
      kIn0);
  set_vjp(
      OpId::Prod,
      [](VjpContext& c) {
        // d prod / d x_i = product of the others: out / x_i without zeros; with one zero in
        // the slice only that element gets the product of the rest; with more, all get 0.
        Tensor x = c.in(0), g = expand_back(c, c.grad());
        Tensor zero = x == 0;
        Tensor safe = kiln::where(zero, kiln::ones_like(x), x);
        const auto& sizes = c.in_meta(0).sizes;
        Tensor cnt = zero.sum(c.attrs().ints, true).expand(sizes);
        Tensor prod_nz = safe;
        for (int64_t d : c.attrs().ints) prod_nz = prod_nz.prod(d, true);
        prod_nz = prod_nz.expand(sizes);
        Tensor others = kiln::where(cnt == 0, prod_nz / safe,
                                    kiln::where((cnt == 1) & zero, prod_nz, kiln::zeros_like(x)));
        c.set(0, g * conj_if(others));
      },
      kIn0);
  auto extreme = [](VjpContext& c) { c.set(0, evenly(c, c.in(0), c.out(0), c.grad())); };
  set_vjp(OpId::Amax, extreme, kIn0 | kOut0);
  set_vjp(OpId::Amin, extreme, kIn0 | kOut0);
  // max/min over one dim: the gradient goes to the element the indices point at.
  auto with_indices = [](VjpContext& c) {
    const TensorMeta& m = c.in_meta(0);
    const int64_t n = static_cast<int64_t>(m.sizes.size());
    if (n == 0) {
      c.set(0, c.grad());
      return;
    }
    const int64_t d = c.attrs().ints.empty() ? 0 : c.attrs().ints[0];
    Tensor idx = c.out(1);
    if (!c.attrs().flag) idx = idx.unsqueeze(d);
    DimVector shape(n, 1);
    shape[d] = m.sizes[d];
    Tensor ar = kiln::arange(m.sizes[d], TensorOptions(DType::Int64).device(m.device)).view(shape);
    Tensor ge = expand_back(c, c.grad());
    c.set(0, masked(ar == idx, ge));
  };
  set_vjp(OpId::MaxDim, with_indices, kOut1);
  set_vjp(OpId::MinDim, with_indices, kOut1);
  // var_mean / std_mean: outputs (var|std, mean).
  auto var_std = [](VjpContext& c) {
    Tensor x = c.in(0);
    const double n = static_cast<double>(reduced_count(c));
    const double corr = c.attrs().has_s0 ? c.attrs().s0.to<double>() : 1.0;
    Tensor r;
    if (c.has_grad(0)) {
      Tensor mean = expand_back(c, c.out(1));
      Tensor diff = x - mean;
      Tensor gv = expand_back(c, c.grad(0));
      if (c.op() == OpId::StdMean) {
        Tensor s = expand_back(c, c.out(0));
        Tensor safe = kiln::where(s == 0, kiln::ones_like(s), s);
        gv = masked(s != 0, gv / safe * 0.5);
      }
      r = gv * diff * (2.0 / std::max(n - corr, 0.0));
    }
    if (c.has_grad(1)) {
      Tensor gm = expand_back(c, c.grad(1)) / n;
      r = r.defined() ? r + gm : gm;
    }
    if (r.defined()) c.set(0, r);
  };
  set_vjp(OpId::VarMean, var_std, kIn0 | kOut0 | kOut1);
  set_vjp(OpId::StdMean, var_std, kIn0 | kOut0 | kOut1);
  set_vjp(
      OpId::Norm,
      [](VjpContext& c) {
        Tensor x = c.in(0), y = c.out(0), g = c.grad();
        const double p = c.attrs().s0.to<double>();
        if (p == 0) return;
        if (std::isinf(p)) {
          Tensor a = kiln::abs(x);
          c.set(0, evenly(c, a, y, g) * kiln::sgn(x));
          return;
        }
        if (p == 1) {
          c.set(0, expand_back(c, g) * kiln::sgn(x));
          return;
        }
        Tensor ye = expand_back(c, y), ge = expand_back(c, g);
        Tensor scaled;
        if (p == 2) {
          scaled = x;
        } else if (p < 1) {
          Tensor a = kiln::abs(x);
          Tensor safe = kiln::where(a == 0, kiln::ones_like(a), a);
          scaled = masked(a != 0, kiln::sgn(x) * kiln::pow(safe, p - 1));
        } else {
          scaled = x * kiln::pow(kiln::abs(x), p - 2);
        }
        Tensor ysafe = kiln::where(ye == 0, kiln::ones_like(ye), ye);
        Tensor scale = masked(ye != 0, ge / (p == 2 ? ysafe : kiln::pow(ysafe, p - 1)));
        c.set(0, scaled * scale);
      },
      kIn0 | kOut0);
  set_vjp(
      OpId::LogSumExp,
      [](VjpContext& c) {
        Tensor x = c.in(0);
        c.set(0, expand_back(c, c.grad()) * kiln::exp(x - expand_back(c, c.out(0))));
      },
      kIn0 | kOut0);
}

}  // namespace kiln::detail
