// kiln::nn::functional::grid_sample (2-D): coordinates computed with elementwise ops, input
// values fetched with the Embedding primitive (rows of a [N*H*W, C] table), so gradients flow to
// both the input and the grid through existing primitives.
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

struct Sampler {
  Tensor table;       // [N*H*W, C]
  Tensor plane_base;  // [N, 1, 1] int64: n * H * W
  int64_t h, w;
  std::string_view padding;
  bool align_corners;

  // input values at integer coordinates (iy, ix) (floating tensors holding integers), zero
  // outside the input: [N, Ho, Wo, C].
  Tensor fetch(const Tensor& iy, const Tensor& ix) const {
    Tensor y = iy, x = ix;
    if (padding != "zeros") {  // per-tap padding (bicubic taps may leave the input)
      y = pad_coord(y, h, padding, align_corners);
      x = pad_coord(x, w, padding, align_corners);
    }
    Tensor inside = kiln::logical_and(kiln::logical_and(y >= 0, y <= h - 1),
                                      kiln::logical_and(x >= 0, x <= w - 1));
    Tensor yc = kiln::clamp(kiln::nan_to_num(y), Scalar(0.0), Scalar(double(h - 1)));
    Tensor xc = kiln::clamp(kiln::nan_to_num(x), Scalar(0.0), Scalar(double(w - 1)));
    Tensor idx = plane_base + yc.to(kInt64) * w + xc.to(kInt64);
    Tensor v = detail::embedding_op(table, idx);
    return v * inside.unsqueeze(-1).to(v.dtype());
  }
};

}  // namespace

Tensor grid_sample(const Tensor& input, const Tensor& grid, std::string_view mode,
                   std::string_view padding_mode, bool align_corners) {
  const char* op = "grid_sample";
  KILN_CHECK(input.defined() && grid.defined(), "[", op, "] input and grid must be defined");
  KILN_CHECK(input.dim() == 4, "[", op,
             "] expected 4-D input [N, C, H, W] (5-D is not supported), but got ", input.dim(),
             "-D");
  KILN_CHECK(grid.dim() == 4 && grid.size(0) == input.size(0) && grid.size(3) == 2, "[", op,
             "] expected grid of shape [", input.size(0), ", H_out, W_out, 2], but got ",
             grid.sizes());
  KILN_CHECK(input.is_floating_point() && grid.dtype() == input.dtype(), "[", op,
             "] expected floating point input and grid of the same dtype");
  KILN_CHECK(mode == "bilinear" || mode == "nearest" || mode == "bicubic", "[", op,
             "] nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or "
             "'bicubic', but got: '",
             mode, "'");
  KILN_CHECK(padding_mode == "zeros" || padding_mode == "border" || padding_mode == "reflection",
             "[", op,
             "] nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
             "'reflection', but got: '",
             padding_mode, "'");
  const int64_t n = input.size(0), c = input.size(1), h = input.size(2), w = input.size(3);
  KILN_CHECK(h > 0 && w > 0, "[", op, "] input of shape ", input.sizes(),
             " has an empty spatial dim");
  Sampler s;
  s.table = input.permute({0, 2, 3, 1}).reshape({n * h * w, c});
  s.plane_base =
      (kiln::arange(n, TensorOptions(kInt64).device(input.device())) * (h * w)).reshape({n, 1, 1});
  s.h = h, s.w = w, s.padding = padding_mode, s.align_corners = align_corners;
  Tensor gx = source_coord(grid.select(3, 0), w, align_corners);
  Tensor gy = source_coord(grid.select(3, 1), h, align_corners);
  Tensor out;
  if (mode == "bicubic") {
    // 4x4 taps with cubic weights; padding applied per tap (in fetch).
    Tensor fx = kiln::floor(gx), fy = kiln::floor(gy);
    Tensor tx = gx - fx, ty = gy - fy;
    const double a = -0.75;
    auto weights = [a](const Tensor& t) {
      auto near = [a](const Tensor& x) { return ((x * (a + 2) - (a + 3)) * x) * x + 1; };
      auto far = [a](const Tensor& x) { return ((x * a - 5 * a) * x + 8 * a) * x - 4 * a; };
      return std::vector<Tensor>{far(t + 1), near(t), near(1 - t), far(2 - t)};
    };
    std::vector<Tensor> wx = weights(tx), wy = weights(ty);
    for (int u = 0; u < 4; ++u)
      for (int v = 0; v < 4; ++v) {
        Tensor term = s.fetch(fy + (u - 1), fx + (v - 1)) * (wy[u] * wx[v]).unsqueeze(-1);
        out = out.defined() ? out + term : term;
      }
  } else {
    gx = pad_coord(gx, w, padding_mode, align_corners);
    gy = pad_coord(gy, h, padding_mode, align_corners);
    Sampler plain = s;
    plain.padding = "zeros";  // coordinates are already padded
    if (mode == "nearest") {
      out = plain.fetch(kiln::round(gy), kiln::round(gx));
    } else {
      Tensor x0 = kiln::floor(gx), y0 = kiln::floor(gy);
      Tensor lx = gx - x0, ly = gy - y0;
      out = plain.fetch(y0, x0) * ((1 - ly) * (1 - lx)).unsqueeze(-1) +
            plain.fetch(y0, x0 + 1) * ((1 - ly) * lx).unsqueeze(-1) +
            plain.fetch(y0 + 1, x0) * (ly * (1 - lx)).unsqueeze(-1) +
            plain.fetch(y0 + 1, x0 + 1) * (ly * lx).unsqueeze(-1);
    }
  }
  return out.permute({0, 3, 1, 2}).contiguous();
}

}  // namespace kiln::nn::functional
