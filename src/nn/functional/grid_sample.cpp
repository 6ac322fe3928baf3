// kiln::nn::functional::grid_sample (4-D and volumetric 5-D): coordinates computed with
// elementwise ops, input values fetched with the Embedding primitive (rows of a [N*D*H*W, C]
// table), so gradients flow to both the input and the grid through existing primitives.
#include <vector>

#include "kiln/nn/functional/conv.h"
#include "kiln/ops.h"
#include "nn/functional/nn_ops.h"

namespace kiln::nn::functional {
namespace {

// PyTorch's reflect_coordinates over [twice_low / 2, twice_high / 2].
Tensor reflect(const Tensor& x, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return x * 0;
  const double lo = twice_low / 2.0, span = (twice_high - twice_low) / 2.0;
  Tensor a = kiln::abs(x - lo);
  Tensor extra = kiln::fmod(a, Scalar(span));
  Tensor flips = kiln::floor(a / span);
  Tensor even = kiln::remainder(flips, Scalar(2.0)) == 0;
  return kiln::where(even, extra + lo, (extra * -1.0) + (span + lo));
}

// Source coordinate along a dim of `size` for normalized grid values g.
Tensor source_coord(const Tensor& g, int64_t size, bool align_corners) {
  return align_corners ? (g + 1) * (0.5 * (size - 1)) : ((g + 1) * size - 1) * 0.5;
}

// Applies border/reflection padding to coordinates (zeros: unchanged).
Tensor pad_coord(const Tensor& c, int64_t size, std::string_view padding, bool align_corners) {
  if (padding == "zeros") return c;
  Tensor x = c;
  if (padding == "reflection")
    x = align_corners ? reflect(x, 0, 2 * (size - 1)) : reflect(x, -1, 2 * size - 1);
  return kiln::clamp(x, Scalar(0.0), Scalar(static_cast<double>(size - 1)));
}

// Fetches input values at integer coordinates through the Embedding primitive (rows of a
// [N * prod(spatial), C] table), zero outside the input.
struct Sampler {
  Tensor table;               // [N * prod(spatial), C]
  Tensor plane_base;          // [N, 1, ...] int64: n * prod(spatial)
  std::vector<int64_t> size;  // spatial sizes, (H, W) or (D, H, W)
  std::string_view padding;
  bool align_corners;

  // Values at integer coordinates c[k] along spatial dim k (floating tensors holding integers):
  // [N, *out_spatial, C].
  Tensor fetch(const std::vector<Tensor>& c) const {
    Tensor inside, idx;
    int64_t stride = 1;
    for (int64_t k = static_cast<int64_t>(size.size()) - 1; k >= 0; --k) {
      const int64_t n = size[k];
      Tensor x = c[k];
      if (padding != "zeros") x = pad_coord(x, n, padding, align_corners);  // per tap (bicubic)
      Tensor in_k = kiln::logical_and(x >= 0, x <= n - 1);
      inside = inside.defined() ? kiln::logical_and(inside, in_k) : in_k;
      Tensor xc = kiln::clamp(kiln::nan_to_num(x), Scalar(0.0), Scalar(double(n - 1)));
      Tensor term = xc.to(kInt64) * stride;
      idx = idx.defined() ? idx + term : term;
      stride *= n;
    }
    Tensor v = detail::embedding_op(table, plane_base + idx);
    return v * inside.unsqueeze(-1).to(v.dtype());
  }
};

}  // namespace

Tensor grid_sample(const Tensor& input, const Tensor& grid, std::string_view mode,
                   std::string_view padding_mode, bool align_corners) {
  const char* op = "grid_sample";
  KILN_CHECK(input.defined() && grid.defined(), "[", op, "] input and grid must be defined");
  KILN_CHECK(input.dim() == 4 || input.dim() == 5, "[", op,
             "] expected 4-D input [N, C, H, W] or 5-D input [N, C, D, H, W], but got ",
             input.dim(), "-D");
  const int64_t nd = input.dim() - 2;  // spatial dims
  KILN_CHECK(grid.dim() == input.dim() && grid.size(0) == input.size(0) && grid.size(-1) == nd, "[",
             op, "] expected grid of shape [", input.size(0),
             nd == 2 ? ", H_out, W_out, 2]" : ", D_out, H_out, W_out, 3]", " for input of shape ",
             input.sizes(), ", but got ", grid.sizes());
  KILN_CHECK(input.is_floating_point() && grid.dtype() == input.dtype(), "[", op,
             "] expected floating point input and grid of the same dtype");
  KILN_CHECK(mode == "bilinear" || mode == "nearest" || mode == "bicubic", "[", op,
             "] nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or "
             "'bicubic', but got: '",
             mode, "'");
  KILN_CHECK(mode != "bicubic" || nd == 2, "[", op,
             "] bicubic interpolation only supports 4D input");
  KILN_CHECK(padding_mode == "zeros" || padding_mode == "border" || padding_mode == "reflection",
             "[", op,
             "] nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
             "'reflection', but got: '",
             padding_mode, "'");
  const int64_t n = input.size(0), c = input.size(1);
  Sampler s;
  int64_t points = 1;
  for (int64_t k = 0; k < nd; ++k) {
    s.size.push_back(input.size(2 + k));
    points *= input.size(2 + k);
  }
  KILN_CHECK(points > 0, "[", op, "] input of shape ", input.sizes(), " has an empty spatial dim");
  // [N, C, *S] -> [N, *S, C] -> [N * prod(S), C].
  std::vector<int64_t> to_last{0};
  for (int64_t k = 0; k < nd; ++k) to_last.push_back(2 + k);
  to_last.push_back(1);
  s.table = input.permute(to_last).reshape({n * points, c});
  DimVector base_shape(static_cast<size_t>(nd + 1), 1);
  base_shape[0] = n;
  s.plane_base =
      (kiln::arange(n, TensorOptions(kInt64).device(input.device())) * points).reshape(base_shape);
  s.padding = padding_mode, s.align_corners = align_corners;
  // Source coordinate per spatial dim k: grid component nd - 1 - k (x walks the last dim).
  std::vector<Tensor> g(static_cast<size_t>(nd));
  for (int64_t k = 0; k < nd; ++k)
    g[k] = source_coord(grid.select(-1, nd - 1 - k), s.size[k], align_corners);
  Tensor out;
  if (mode == "bicubic") {
    // 4x4 taps with cubic weights; padding applied per tap (in fetch).
    Tensor fy = kiln::floor(g[0]), fx = kiln::floor(g[1]);
    Tensor ty = g[0] - fy, tx = g[1] - fx;
    const double a = -0.75;
    auto weights = [a](const Tensor& t) {
      auto near = [a](const Tensor& x) { return ((x * (a + 2) - (a + 3)) * x) * x + 1; };
      auto far = [a](const Tensor& x) { return ((x * a - 5 * a) * x + 8 * a) * x - 4 * a; };
      return std::vector<Tensor>{far(t + 1), near(t), near(1 - t), far(2 - t)};
    };
    std::vector<Tensor> wx = weights(tx), wy = weights(ty);
    for (int u = 0; u < 4; ++u)
      for (int v = 0; v < 4; ++v) {
        Tensor term = s.fetch({fy + (u - 1), fx + (v - 1)}) * (wy[u] * wx[v]).unsqueeze(-1);
        out = out.defined() ? out + term : term;
      }
  } else {
    for (int64_t k = 0; k < nd; ++k) g[k] = pad_coord(g[k], s.size[k], padding_mode, align_corners);
    Sampler plain = s;
    plain.padding = "zeros";  // coordinates are already padded
    if (mode == "nearest") {
      std::vector<Tensor> r;
      for (const Tensor& t : g) r.push_back(kiln::round(t));
      out = plain.fetch(r);
    } else {
      // (bi|tri)linear: the 2^nd corners, weights (1 - l) or l per dim, summed in corner order.
      std::vector<Tensor> lo, frac;
      for (const Tensor& t : g) {
        lo.push_back(kiln::floor(t));
        frac.push_back(t - lo.back());
      }
      for (int64_t corner = 0; corner < (int64_t{1} << nd); ++corner) {
        std::vector<Tensor> at;
        Tensor wgt;
        for (int64_t k = 0; k < nd; ++k) {
          const bool hi = (corner >> (nd - 1 - k)) & 1;
          at.push_back(hi ? lo[k] + 1 : lo[k]);
          Tensor wk = hi ? frac[k] : 1 - frac[k];
          wgt = wgt.defined() ? wgt * wk : wk;
        }
        Tensor term = plain.fetch(at) * wgt.unsqueeze(-1);
        out = out.defined() ? out + term : term;
      }
    }
  }
  // [N, *So, C] -> [N, C, *So].
  std::vector<int64_t> to_front{0, nd + 1};
  for (int64_t k = 0; k < nd; ++k) to_front.push_back(1 + k);
  return out.permute(to_front).contiguous();
}

}  // namespace kiln::nn::functional
