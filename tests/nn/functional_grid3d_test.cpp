// Tests of volumetric (5-D) grid_sample and affine_grid against double-precision loops of
// PyTorch's formulas, and of max_unpool2d with repeated indices (the last writer wins).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace kiln {
namespace {

namespace F = kiln::nn::functional;

std::vector<double> vals(const Tensor& t) {
  Tensor c = t.to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

// PyTorch's GridSampler coordinate rules (unnormalize, reflect, clip), in double.
double reflect_ref(double x, int64_t tlo, int64_t thi) {
  if (tlo == thi) return 0;
  const double mn = tlo / 2.0, span = (thi - tlo) / 2.0;
  x = std::abs(x - mn);
  const double extra = std::fmod(x, span);
  const int64_t flips = static_cast<int64_t>(std::floor(x / span));
  return flips % 2 == 0 ? extra + mn : span - extra + mn;
}
double source_ref(double g, int64_t size, const std::string& pad, bool ac) {
  double x = ac ? (g + 1) / 2 * (size - 1) : ((g + 1) * size - 1) / 2;
  if (pad == "zeros") return x;
  if (pad == "reflection")
    x = ac ? reflect_ref(x, 0, 2 * (size - 1)) : reflect_ref(x, -1, 2 * size - 1);
  return std::min(std::max(x, 0.0), static_cast<double>(size - 1));
}

// One output value of 5-D grid_sample from the volume vol [d, h, w] at grid point (gx, gy, gz).
double grid3d_ref(const std::vector<double>& vol, int64_t d, int64_t h, int64_t w, double gx,
                  double gy, double gz, const std::string& mode, const std::string& pad, bool ac) {
  const double x = source_ref(gx, w, pad, ac), y = source_ref(gy, h, pad, ac),
               z = source_ref(gz, d, pad, ac);
  auto at = [&](int64_t k, int64_t r, int64_t c) {
    return (k < 0 || k >= d || r < 0 || r >= h || c < 0 || c >= w) ? 0.0 : vol[(k * h + r) * w + c];
  };
  if (mode == "nearest")
    return at(static_cast<int64_t>(std::nearbyint(z)), static_cast<int64_t>(std::nearbyint(y)),
              static_cast<int64_t>(std::nearbyint(x)));
  const int64_t x0 = static_cast<int64_t>(std::floor(x)), y0 = static_cast<int64_t>(std::floor(y)),
                z0 = static_cast<int64_t>(std::floor(z));
  const double lx = x - x0, ly = y - y0, lz = z - z0;
  double s = 0;
  for (int dz = 0; dz < 2; ++dz)
    for (int dy = 0; dy < 2; ++dy)
      for (int dx = 0; dx < 2; ++dx)
        s += (dz ? lz : 1 - lz) * (dy ? ly : 1 - ly) * (dx ? lx : 1 - lx) *
             at(z0 + dz, y0 + dy, x0 + dx);
  return s;
}

TEST(NnFunctionalGridSample3d, ModesAndPaddingMatchVoxelReference) {
  manual_seed(21);
  const int64_t n = 2, c = 3, d = 3, h = 4, w = 5, od = 2, oh = 3, ow = 4;
  Tensor x = randn({n, c, d, h, w}, TensorOptions(kFloat64));
  Tensor grid = rand({n, od, oh, ow, 3}, TensorOptions(kFloat64)) * 2.6 - 1.3;  // some outside
  const std::vector<double> xv = vals(x), gv = vals(grid);
  for (std::string mode : {"bilinear", "nearest"})
    for (std::string pad : {"zeros", "border", "reflection"})
      for (bool ac : {false, true}) {
        Tensor y = F::grid_sample(x, grid, mode, pad, ac);
        ASSERT_EQ(y.sizes().vec(), (std::vector<int64_t>{n, c, od, oh, ow}));
        const std::vector<double> yv = vals(y);
        for (int64_t b = 0; b < n; ++b)
          for (int64_t ch = 0; ch < c; ++ch) {
            const int64_t vol = d * h * w;
            std::vector<double> v(xv.begin() + (b * c + ch) * vol,
                                  xv.begin() + (b * c + ch + 1) * vol);
            for (int64_t p = 0; p < od * oh * ow; ++p) {
              const double* g = gv.data() + (b * od * oh * ow + p) * 3;
              EXPECT_NEAR(yv[(b * c + ch) * od * oh * ow + p],
                          grid3d_ref(v, d, h, w, g[0], g[1], g[2], mode, pad, ac), 1e-12)
                  << mode << " " << pad << " ac " << ac << " point " << p;
            }
          }
      }
  // float32 agrees with the float64 result.
  Tensor y32 = F::grid_sample(x.to(kFloat32), grid.to(kFloat32), "bilinear", "border", false);
  Tensor y64 = F::grid_sample(x, grid, "bilinear", "border", false);
  const std::vector<double> a = vals(y32), b = vals(y64);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5);
  EXPECT_THROW(F::grid_sample(x, grid, "bicubic"), Error);       // bicubic is 4-D only
  EXPECT_THROW(F::grid_sample(x, grid.narrow(4, 0, 2)), Error);  // grid's last dim must be 3
  EXPECT_THROW(F::grid_sample(x, grid.select(1, 0)), Error);     // 4-D grid for 5-D input
  EXPECT_THROW(F::grid_sample(x.select(2, 0), grid), Error);     // 5-D grid for 4-D input
}

TEST(NnFunctionalGridSample3d, GradientsFlowToInputAndGrid) {
  // d/d(input) of sum(grid_sample(x, grid) * g) is the adjoint of sampling: check it against
  // finite differences in float64 (the sampler is linear in x).
  manual_seed(22);
  Tensor x = randn({1, 2, 3, 3, 4}, TensorOptions(kFloat64)).requires_grad_();
  Tensor grid = (rand({1, 2, 2, 3, 3}, TensorOptions(kFloat64)) * 1.8 - 0.9).requires_grad_();
  Tensor g = randn({1, 2, 2, 2, 3}, TensorOptions(kFloat64));
  Tensor loss = (F::grid_sample(x, grid, "bilinear", "zeros", false) * g).sum();
  loss.backward();
  const std::vector<double> gx = vals(x.grad()), gg = vals(grid.grad());
  auto f = [&](const Tensor& xx, const Tensor& gr) {
    return (F::grid_sample(xx, gr, "bilinear", "zeros", false) * g).sum().item<double>();
  };
  const Tensor xd = x.detach(), gd = grid.detach();
  const double eps = 1e-6;
  for (int64_t i = 0; i < xd.numel(); i += 5) {
    Tensor xp = xd.clone(), xm = xd.clone();
    xp.view({-1}).select(0, i).add_(eps);
    xm.view({-1}).select(0, i).sub_(eps);
    EXPECT_NEAR(gx[i], (f(xp, gd) - f(xm, gd)) / (2 * eps), 1e-6) << "input " << i;
  }
  for (int64_t i = 0; i < gd.numel(); ++i) {
    Tensor gp = gd.clone(), gm = gd.clone();
    gp.view({-1}).select(0, i).add_(eps);
    gm.view({-1}).select(0, i).sub_(eps);
    EXPECT_NEAR(gg[i], (f(xd, gp) - f(xd, gm)) / (2 * eps), 1e-5) << "grid " << i;
  }
}

TEST(NnFunctionalAffineGrid, VolumetricMatchesLoop) {
  manual_seed(23);
  const int64_t n = 2, d = 3, h = 4, w = 5;
  Tensor theta = randn({n, 3, 4}, TensorOptions(kFloat64));
  const std::vector<double> tv = vals(theta);
  for (bool ac : {false, true}) {
    Tensor grid = F::affine_grid(theta, {n, 1, d, h, w}, ac);
    ASSERT_EQ(grid.sizes().vec(), (std::vector<int64_t>{n, d, h, w, 3}));
    const std::vector<double> gv = vals(grid);
    // Normalized coordinate i of a dim of `size` points: -1 .. 1 (scaled by (size-1)/size
    // without align_corners; 0 for a single point).
    auto lin = [ac](int64_t i, int64_t size) {
      if (size == 1) return 0.0;
      const double v = -1.0 + 2.0 * i / (size - 1);
      return ac ? v : v * (size - 1) / size;
    };
    for (int64_t b = 0; b < n; ++b)
      for (int64_t k = 0; k < d; ++k)
        for (int64_t r = 0; r < h; ++r)
          for (int64_t c = 0; c < w; ++c) {
            const double base[4] = {lin(c, w), lin(r, h), lin(k, d), 1.0};
            for (int64_t i = 0; i < 3; ++i) {
              double want = 0;
              for (int j = 0; j < 4; ++j) want += tv[(b * 3 + i) * 4 + j] * base[j];
              EXPECT_NEAR(gv[(((b * d + k) * h + r) * w + c) * 3 + i], want, 1e-12);
            }
          }
  }
  // affine_grid followed by grid_sample with the identity transform reproduces the input.
  Tensor eye = zeros({1, 3, 4}, TensorOptions(kFloat64));
  for (int i = 0; i < 3; ++i) eye.select(1, i).select(1, i).fill_(1.0);
  Tensor x = randn({1, 2, d, h, w}, TensorOptions(kFloat64));
  const std::vector<double> a = vals(x),
                            b = vals(F::grid_sample(x, F::affine_grid(eye, x.sizes(), false)));
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-12);
}

TEST(NnFunctionalMaxUnpool, RepeatedIndicesWriteLastValue) {
  // PyTorch 1.13 (torch.nn.functional.max_unpool2d on this machine): input [[1, 2], [3, 4]],
  // indices [[0, 0], [3, 3]], kernel 2 -> row 0 of the 4x4 output is [2, 0, 0, 4], the rest 0.
  // Gradient: kiln's is exact (only the element that was written gets grad[index]; the others
  // do not reach the output); PyTorch gives every repeat grad[index] ([1, 1, 4, 4] here).
  Tensor x = tensor({1.0, 2.0, 3.0, 4.0}).reshape({1, 1, 2, 2}).requires_grad_();
  Tensor idx = tensor({0, 0, 3, 3}, TensorOptions(kInt64)).reshape({1, 1, 2, 2});
  Tensor y = F::max_unpool2d(x, idx, {2, 2});
  std::vector<double> want(16, 0.0);
  want[0] = 2, want[3] = 4;
  EXPECT_EQ(vals(y), want);
  y.backward(arange(1.0, 17.0).reshape({1, 1, 4, 4}).to(y.dtype()));
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{0, 1, 0, 4}));

  // Many repeats: a loop in row-major order of the input, the last write kept.
  manual_seed(24);
  const int64_t n = 2, c = 3, h = 4, w = 5, oh = 8, ow = 10;
  Tensor xs = randn({n, c, h, w});
  Tensor is = randint(0, 12, {n, c, h, w});  // only 12 of 80 positions: many repeats
  const std::vector<double> xv = vals(xs), iv = vals(is);
  std::vector<double> ref(n * c * oh * ow, 0.0);
  for (int64_t p = 0; p < n * c; ++p)
    for (int64_t i = 0; i < h * w; ++i)
      ref[p * oh * ow + static_cast<int64_t>(iv[p * h * w + i])] = xv[p * h * w + i];
  EXPECT_EQ(vals(F::max_unpool2d(xs, is, {2, 2})), ref);
  // Unbatched input and an explicit output_size.
  EXPECT_EQ(vals(F::max_unpool2d(xs.select(0, 1), is.select(0, 1), {2, 2}, {}, 0, {oh, ow})),
            std::vector<double>(ref.begin() + c * oh * ow, ref.end()));
  // Errors as PyTorch: index outside the output plane, non-int64 indices, shape mismatch.
  EXPECT_THROW(F::max_unpool2d(xs, is + 80, {2, 2}), Error);
  EXPECT_THROW(F::max_unpool2d(xs, is - 13, {2, 2}), Error);
  EXPECT_THROW(F::max_unpool2d(xs, is.to(kInt32), {2, 2}), Error);
  EXPECT_THROW(F::max_unpool2d(xs, is.narrow(3, 0, 2), {2, 2}), Error);
}

}  // namespace
}  // namespace kiln
