// vjps of the scan / sort primitives (src/ops/defs/scan.def): cumsum, logcumsumexp, cummax /
// cummin, and the value-picking ops (sort, topk, kthvalue, median, mode) that route the
// gradient back to the positions their indices name.
#include <tuple>

#include "autograd/vjp.h"
#include "kiln/autograd.h"

namespace kiln::detail {

namespace {

// Sum from position i to the end along d.
Tensor reverse_cumsum(const Tensor& t, int64_t d) {
  const DimVector dims{d};
  return kiln::flip(kiln::cumsum(kiln::flip(t, dims), d), dims);
}

// Scatters the gradient of output 0 into zeros of the input's shape at output 1's indices.
void at_indices(VjpContext& c) {
  const TensorMeta& m = c.in_meta(0);
  Tensor g = c.grad(0);
  if (m.sizes.empty()) {
    c.set(0, g.reshape({}));
    return;
  }
  Tensor z = kiln::zeros(m.sizes, TensorOptions(g.dtype()).device(m.device));
  c.set(0, z.scatter_add(c.attrs().i0, c.out(1), g));
}

// cumprod: d y_i / d x_k = prod_{j <= i, j != k} x_j for i >= k. Without zeros this is
// reverse_cumsum(g * y) / x; with zeros the products that skip x_k are formed explicitly as an
// [..., n, n] matrix (row k: x with x_k replaced by 1, cumulated).
Tensor cumprod_grad(const Tensor& x, const Tensor& y, const Tensor& g, int64_t d) {
  if (!(x == 0).any().item<bool>()) return reverse_cumsum(g * conj_if(y), d) / conj_if(x);
  const int64_t n = x.size(d);
  Tensor xl = x.movedim({d}, {-1});
  Tensor gl = g.movedim({d}, {-1});
  DimVector sq(xl.sizes());
  sq.push_back(n);  // [..., n(k), n(j)]
  Tensor eye = kiln::eye(n, TensorOptions(DType::Bool).device(x.device()));
  Tensor rows = kiln::where(eye, kiln::ones_like(x.select(d, 0).unsqueeze(-1)).unsqueeze(-1),
                            xl.unsqueeze(-2).expand(sq));
  Tensor p = kiln::cumprod(rows, -1);  // p[..., k, i] = prod_{j <= i, j != k} x_j
  Tensor upper = kiln::triu(kiln::ones({n, n}, TensorOptions(DType::Bool).device(x.device())));
  Tensor terms = kiln::where(upper, gl.unsqueeze(-2) * conj_if(p), kiln::zeros_like(p));
  return terms.sum({-1}).movedim({-1}, {d});
}

// quantile: in = (x, q float64 [nq]), out = keepdim shape + [nq]; i1 = interpolation (0 linear,
// 1 lower, 2 higher, 3 midpoint, 4 nearest), flag = ignore NaN. Each output is a weighted sum of
// at most two sorted elements; the gradient goes back to their positions with those weights.
void quantile_vjp(VjpContext& c) {
  Tensor x = c.in(0), g = c.grad();
  if (x.dim() == 0) {
    c.set(0, g.sum());
    return;
  }
  const int64_t d = c.attrs().i0, mode = c.attrs().i1, n = x.size(d);
  Tensor sorted_idx;
  {
    NoGradGuard ng;
    sorted_idx = std::get<1>(kiln::sort(x.detach(), d)).movedim({d}, {-1});  // [R..., n]
  }
  Tensor q = c.in(1).to(x.dtype());
  Tensor valid = c.attrs().flag
                     ? kiln::logical_not(kiln::isnan(x)).sum({d}).unsqueeze(-1).to(x.dtype())
                     : kiln::full({1}, Scalar(static_cast<double>(n)),
                                  TensorOptions(x.dtype()).device(x.device()));
  Tensor rank = kiln::clamp_min(q * (valid - 1), 0);
  if (mode == 1) rank = kiln::floor(rank);
  if (mode == 2) rank = kiln::ceil(rank);
  if (mode == 4) rank = kiln::round(rank);  // ties to even, as the kernel
  Tensor lo = kiln::floor(rank);
  Tensor w_hi = mode == 3 ? kiln::full_like(rank, 0.5) : rank - lo;
  Tensor gl = g.squeeze(d);  // [R..., nq]
  DimVector shape(gl.sizes());
  rank = rank.expand(shape);
  w_hi = w_hi.expand(shape);
  Tensor i_lo = sorted_idx.gather(-1, kiln::floor(rank).to(DType::Int64));
  Tensor i_hi = sorted_idx.gather(-1, kiln::ceil(rank).to(DType::Int64));
  DimVector zs(sorted_idx.sizes());
  Tensor z = kiln::zeros(zs, TensorOptions(g.dtype()).device(g.device()));
  const int64_t last = static_cast<int64_t>(zs.size()) - 1;
  Tensor r = z.scatter_add(last, i_lo, gl * (1 - w_hi)).scatter_add(last, i_hi, gl * w_hi);
  c.set(0, r.movedim({-1}, {d}));
}

}  // namespace

void register_scan_vjps() {
  set_vjp(OpId::Quantile, quantile_vjp, kIn0 | kIn1);
  set_vjp(
      OpId::CumProd,
      [](VjpContext& c) {
        Tensor g = c.grad();
        if (g.dim() == 0) {
          c.set(0, g);
          return;
        }
        c.set(0, cumprod_grad(c.in(0), c.out(0), g, c.attrs().i0));
      },
      kIn0 | kOut0);
  set_vjp(
      OpId::CumSum,
      [](VjpContext& c) {
        Tensor g = c.grad();
        c.set(0, g.dim() == 0 ? g : reverse_cumsum(g, c.attrs().i0));
      },
      0);
  // d y_i / d x_k = exp(x_k - y_i) for i >= k.
  set_vjp(
      OpId::LogCumSumExp,
      [](VjpContext& c) {
        Tensor g = c.grad(), x = c.in(0), y = c.out(0);
        if (g.dim() == 0) {
          c.set(0, g);
          return;
        }
        Tensor acc = reverse_cumsum(g * conj_if(kiln::exp(-y)), c.attrs().i0);
        c.set(0, conj_if(kiln::exp(x)) * acc);
      },
      kIn0 | kOut0);
  for (OpId id : {OpId::CumMax, OpId::CumMin, OpId::Sort, OpId::TopK, OpId::KthValue, OpId::Median,
                  OpId::Mode})
    set_vjp(id, at_indices, kOut1);
}

}  // namespace kiln::detail
