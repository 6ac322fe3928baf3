// Tests of kiln::nn::functional::interpolate against per-pixel double references written from
// PyTorch's upsampling formulas (nearest, nearest-exact, bilinear, bicubic, align_corners,
// scale_factor), plus linear/trilinear consistency and errors; grid_sample per-pixel references.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/kiln.h"

namespace kiln {
namespace {

namespace F = kiln::nn::functional;

std::vector<double> vals(const Tensor& t) {
  Tensor c = t.to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

// Source coordinate of output index o (PyTorch's area_pixel_compute_source_index).
double src_coord(int64_t o, int64_t in, int64_t out, bool ac, double sf, bool cubic) {
  double scale =
      ac ? (out > 1 ? double(in - 1) / (out - 1) : 0) : (sf > 0 ? 1 / sf : double(in) / out);
  if (ac) return o * scale;
  double s = scale * (o + 0.5) - 0.5;
  return (!cubic && s < 0) ? 0 : s;
}
double cubic(double x) {  // a = -0.75
  const double a = -0.75;
  x = std::abs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

// Reference for one [H, W] plane.
double ref_pixel(const std::vector<double>& x, int64_t h, int64_t w, int64_t oh, int64_t ow,
                 int64_t i, int64_t j, const std::string& mode, bool ac, double sf) {
  auto at = [&](int64_t r, int64_t c) {
    r = std::clamp<int64_t>(r, 0, h - 1), c = std::clamp<int64_t>(c, 0, w - 1);
    return x[r * w + c];
  };
  if (mode == "nearest" || mode == "nearest-exact") {
    const double sh = sf > 0 ? 1 / sf : double(h) / oh, sw = sf > 0 ? 1 / sf : double(w) / ow;
    const double off = mode == "nearest" ? 0 : 0.5;
    return at(std::min<int64_t>(int64_t(std::floor((i + off) * sh)), h - 1),
              std::min<int64_t>(int64_t(std::floor((j + off) * sw)), w - 1));
  }
  const bool cub = mode == "bicubic";
  const double sy = src_coord(i, h, oh, ac, sf, cub), sx = src_coord(j, w, ow, ac, sf, cub);
  if (!cub) {
    const int64_t y0 = int64_t(sy), x0 = int64_t(sx);
    const double ly = sy - y0, lx = sx - x0;
    return (1 - ly) * ((1 - lx) * at(y0, x0) + lx * at(y0, std::min(x0 + 1, w - 1))) +
           ly * ((1 - lx) * at(std::min(y0 + 1, h - 1), x0) +
                 lx * at(std::min(y0 + 1, h - 1), std::min(x0 + 1, w - 1)));
  }
  const double fy = std::floor(sy), fx = std::floor(sx);
  double s = 0;
  for (int u = -1; u <= 2; ++u)
    for (int v = -1; v <= 2; ++v)
      s += cubic(sy - (fy + u)) * cubic(sx - (fx + v)) * at(int64_t(fy) + u, int64_t(fx) + v);
  return s;
}

TEST(NnFunctionalInterpolate, TwoDModesMatchPixelReference) {
  manual_seed(4);
  const int64_t h = 5, w = 7;
  Tensor x = randn({2, 3, h, w}, TensorOptions(kFloat64));
  std::vector<double> xv = vals(x);
  struct Case {
    std::string mode;
    int64_t oh, ow;
    bool ac;
    double sf;
  };
  for (const Case& c : std::vector<Case>{{"nearest", 9, 4, false, 0},
                                         {"nearest", 10, 14, false, 2.0},
                                         {"nearest-exact", 8, 3, false, 0},
                                         {"bilinear", 12, 5, false, 0},
                                         {"bilinear", 12, 5, true, 0},
                                         {"bilinear", 7, 10, false, 1.5},
                                         {"bicubic", 11, 9, false, 0},
                                         {"bicubic", 3, 13, true, 0},
                                         {"bilinear", 1, 1, true, 0}}) {
    Tensor y = c.sf > 0 ? F::interpolate(x, std::nullopt, std::vector<double>{c.sf}, c.mode)
                        : F::interpolate(x, std::vector<int64_t>{c.oh, c.ow}, std::nullopt, c.mode,
                                         c.ac ? std::optional<bool>(true) : std::nullopt);
    ASSERT_EQ(y.sizes(), IntArrayRef({2, 3, c.oh, c.ow})) << c.mode;
    std::vector<double> yv = vals(y);
    for (int64_t p = 0; p < 6; ++p) {
      std::vector<double> plane(xv.begin() + p * h * w, xv.begin() + (p + 1) * h * w);
      for (int64_t i = 0; i < c.oh; ++i)
        for (int64_t j = 0; j < c.ow; ++j)
          EXPECT_NEAR(yv[(p * c.oh + i) * c.ow + j],
                      ref_pixel(plane, h, w, c.oh, c.ow, i, j, c.mode, c.ac, c.sf), 1e-12)
              << c.mode << " ac " << c.ac << " sf " << c.sf << " at " << i << "," << j;
    }
  }
}

TEST(NnFunctionalInterpolate, LinearTrilinearAreaAndErrors) {
  manual_seed(5);
  Tensor x = randn({1, 2, 6}, TensorOptions(kFloat64));
  // linear on [N, C, L] equals bilinear on [N, C, 1, L] (the unit dim resized to 1).
  EXPECT_EQ(
      vals(F::interpolate(x, std::vector<int64_t>{11}, std::nullopt, "linear")),
      vals(F::interpolate(x.unsqueeze(2), std::vector<int64_t>{1, 11}, std::nullopt, "bilinear")));
  // trilinear with a unit depth kept equals bilinear.
  Tensor v = randn({1, 2, 1, 4, 5}, TensorOptions(kFloat64));
  std::vector<double> a =
      vals(F::interpolate(v, std::vector<int64_t>{1, 7, 3}, std::nullopt, "trilinear"));
  std::vector<double> b =
      vals(F::interpolate(v.squeeze(2), std::vector<int64_t>{7, 3}, std::nullopt, "bilinear"));
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-12);
  // area = adaptive average pooling.
  Tensor im = randn({1, 1, 6, 6}, TensorOptions(kFloat64));
  EXPECT_EQ(vals(F::interpolate(im, std::vector<int64_t>{3, 2}, std::nullopt, "area")),
            vals(F::adaptive_avg_pool2d(im, {3, 2})));
  EXPECT_THROW(F::interpolate(im, std::vector<int64_t>{3, 3}, std::nullopt, "nearest", true),
               Error);
  EXPECT_THROW(F::interpolate(im, std::vector<int64_t>{3}, std::vector<double>{2.0}), Error);
  EXPECT_THROW(F::interpolate(im, std::vector<int64_t>{3, 3}, std::nullopt, "linear"), Error);
  EXPECT_THROW(F::interpolate(im, std::vector<int64_t>{3, 3}, std::nullopt, "cubic"), Error);
  // float32 close to float64.
  std::vector<double> f32 =
      vals(F::interpolate(im.to(kFloat32), std::vector<int64_t>{9, 9}, std::nullopt, "bicubic"));
  std::vector<double> f64 =
      vals(F::interpolate(im, std::vector<int64_t>{9, 9}, std::nullopt, "bicubic"));
  for (size_t i = 0; i < f32.size(); ++i) EXPECT_NEAR(f32[i], f64[i], 1e-5);
}

// grid_sample reference: PyTorch's GridSampler formulas per output pixel, in double.
double reflect_ref(double x, int64_t tlo, int64_t thi) {
  if (tlo == thi) return 0;
  const double mn = tlo / 2.0, span = (thi - tlo) / 2.0;
  x = std::abs(x - mn);
  const double extra = std::fmod(x, span);
  const int64_t flips = int64_t(std::floor(x / span));
  return flips % 2 == 0 ? extra + mn : span - extra + mn;
}
double pad_ref(double x, int64_t size, const std::string& pad, bool ac) {
  if (pad == "zeros") return x;
  if (pad == "reflection")
    x = ac ? reflect_ref(x, 0, 2 * (size - 1)) : reflect_ref(x, -1, 2 * size - 1);
  return std::min(std::max(x, 0.0), double(size - 1));
}
double grid_ref(const std::vector<double>& plane, int64_t h, int64_t w, double gx, double gy,
                const std::string& mode, const std::string& pad, bool ac) {
  double x = ac ? (gx + 1) / 2 * (w - 1) : ((gx + 1) * w - 1) / 2;
  double y = ac ? (gy + 1) / 2 * (h - 1) : ((gy + 1) * h - 1) / 2;
  auto at = [&](int64_t r, int64_t c) {
    return (r < 0 || r >= h || c < 0 || c >= w) ? 0.0 : plane[r * w + c];
  };
  if (mode == "bicubic") {
    const double fx = std::floor(x), fy = std::floor(y);
    double s = 0;
    for (int u = -1; u <= 2; ++u)
      for (int v = -1; v <= 2; ++v) {
        const double ty = pad_ref(fy + u, h, pad, ac), tx = pad_ref(fx + v, w, pad, ac);
        s += cubic(y - (fy + u)) * cubic(x - (fx + v)) * at(int64_t(ty), int64_t(tx));
      }
    return s;
  }
  x = pad_ref(x, w, pad, ac), y = pad_ref(y, h, pad, ac);
  if (mode == "nearest") return at(int64_t(std::nearbyint(y)), int64_t(std::nearbyint(x)));
  const int64_t x0 = int64_t(std::floor(x)), y0 = int64_t(std::floor(y));
  const double lx = x - x0, ly = y - y0;
  return (1 - ly) * (1 - lx) * at(y0, x0) + (1 - ly) * lx * at(y0, x0 + 1) +
         ly * (1 - lx) * at(y0 + 1, x0) + ly * lx * at(y0 + 1, x0 + 1);
}

TEST(NnFunctionalGridSample, ModesAndPaddingMatchPixelReference) {
  manual_seed(6);
  const int64_t n = 2, c = 3, h = 4, w = 5, oh = 3, ow = 6;
  Tensor x = randn({n, c, h, w}, TensorOptions(kFloat64));
  Tensor grid = rand({n, oh, ow, 2}, TensorOptions(kFloat64)) * 2.6 - 1.3;  // some outside
  const std::vector<double> xv = vals(x), gv = vals(grid);
  for (std::string mode : {"bilinear", "nearest", "bicubic"})
    for (std::string pad : {"zeros", "border", "reflection"})
      for (bool ac : {false, true}) {
        std::vector<double> y = vals(F::grid_sample(x, grid, mode, pad, ac));
        ASSERT_EQ(y.size(), size_t(n * c * oh * ow));
        for (int64_t b = 0; b < n; ++b)
          for (int64_t ch = 0; ch < c; ++ch) {
            std::vector<double> plane(xv.begin() + (b * c + ch) * h * w,
                                      xv.begin() + (b * c + ch + 1) * h * w);
            for (int64_t i = 0; i < oh; ++i)
              for (int64_t j = 0; j < ow; ++j) {
                const double* g = gv.data() + ((b * oh + i) * ow + j) * 2;
                EXPECT_NEAR(y[((b * c + ch) * oh + i) * ow + j],
                            grid_ref(plane, h, w, g[0], g[1], mode, pad, ac), 1e-12)
                    << mode << " " << pad << " ac " << ac;
              }
          }
      }
  EXPECT_THROW(F::grid_sample(x, grid, "area"), Error);
  EXPECT_THROW(F::grid_sample(x, grid.narrow(3, 0, 1)), Error);
}

}  // namespace
}  // namespace kiln
