// Tests of kiln::nn::functional::interpolate against per-pixel double references written from
// PyTorch's upsampling formulas (nearest, nearest-exact, bilinear, bicubic, align_corners,
// scale_factor), plus linear/trilinear consistency and errors; grid_sample per-pixel references;
// antialiased downsampling against values computed with PyTorch.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/kiln.h"

namespace kiln::nn::functional {
// Defined in src/nn/functional/interpolate.cpp; redeclared here until
// include/kiln/nn/functional/conv.h declares interpolate's antialias parameter.
Tensor interpolate(const Tensor& input, std::optional<std::vector<int64_t>> size,
                   std::optional<std::vector<double>> scale_factor, std::string_view mode,
                   std::optional<bool> align_corners, std::optional<bool> recompute_scale_factor,
                   bool antialias);
}  // namespace kiln::nn::functional

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

// interpolate(antialias = true) against values computed with PyTorch 1.13 (/usr/bin/python3) on
// this machine by these lines:
//   x = torch.tensor([math.sin(0.37 * i + 0.1) for i in range(63)],
//                    dtype=torch.float64).reshape(1, 1, 7, 9)
//   y = F.interpolate(x, size=size, scale_factor=sf, mode=mode, align_corners=ac, antialias=True)
//   print(", ".join(repr(v) for v in y.flatten().tolist()))
// for the (mode, size, sf, ac) of each case below.
struct AaCase {
  const char* mode;
  std::optional<std::vector<int64_t>> size;
  std::optional<std::vector<double>> sf;
  bool ac;
  std::vector<int64_t> shape;
  std::vector<double> want;
};

TEST(NnFunctionalInterpolate, AntialiasMatchesPyTorch) {
  const std::vector<AaCase> cases = {
      {"bilinear",
       std::vector<int64_t>{3, 4},
       std::nullopt,
       false,
       {1, 1, 3, 4},
       {0.05021145951583791, 0.11631979175229361, 0.11645479875631362, 0.05052101092163608,
        -0.04682823594887037, -0.05489975819900203, -0.030094162038363646, 0.010047384830333135,
        0.13041020796330938, 0.0954346266915839, -0.0003782987854016079, -0.08927488163846214}},
      {"bicubic",
       std::vector<int64_t>{3, 4},
       std::nullopt,
       false,
       {1, 1, 3, 4},
       {0.02383724412679914, 0.10690847788275336, 0.12435323846182154, 0.0633217766875361,
        -0.009636491531814687, -0.011933455351351437, -0.006485373941370984, 0.0026947151276811125,
        0.1284874534969566, 0.08172448796378189, -0.021838477634723817, -0.10591732773960609}},
      {"bilinear",
       std::nullopt,
       std::vector<double>{0.5, 0.4},
       false,
       {1, 1, 3, 3},
       {0.03668974945166509, 0.11881596711382672, 0.11888596663361717, -0.0004677663022389644,
        0.00015330190449046321, 0.0006998806802774767, -0.0001999286796904448,
        0.00042152217550717186, 0.0007719742754249623}},
      {"bicubic",
       std::vector<int64_t>{4, 5},
       std::nullopt,
       true,
       {1, 1, 4, 5},
       {0.013966804679910728,   0.10442715271812009,   0.14637487650161712,
        0.10373131576635797,    0.04495135381245063,   -0.0019451122257346572,
        -0.008478720727329666,  -0.011026826621286633, -0.007192646334408279,
        -0.002502449596882955,  -0.022769848290593756, -0.017347750481846173,
        -0.0026908961936466945, 0.01376785969005805,   0.021457467555157584,
        0.5953131080636767,     0.4672915978549012,    0.09155268656827273,
        -0.34352591705019153,   -0.5524885494809696}},
      {"bilinear",
       std::vector<int64_t>{10, 4},
       std::nullopt,
       false,
       {1, 1, 10, 4},
       {0.3801037296254516,   0.8630191155052865,   0.8558851977053894,    0.36374669467134724,
        -0.12549365439564364, -0.11700939431326701, -0.036521352714114705, 0.05905370748224878,
        -0.23458757823929247, -0.45359760000285076, -0.412422942168307,    -0.14018008206199695,
        0.6182270783922732,   0.8491116465597296,   0.5794748865028199,    -1.0758498131705514e-05,
        -0.2791048007946507,  -0.27612657576762917, -0.10451080701688856,  0.11438517299953217,
        -0.2077946302752425,  -0.2946969987559725,  -0.20839507290998371,  -0.009916878208948226,
        0.7917694698613728,   0.8039181546284141,   0.3266592809898238,    -0.30251564769009964,
        -0.4838585269791661,  -0.38868305943889336, -0.04928638913946537,  0.29432862839770946,
        -0.0834566914549493,  -0.1279565590342047,  -0.09776057011692266,  -0.014221684822150268,
        0.9627450743939349,   0.7112890587120195,   0.0070964773956369645, -0.6518659976847544}},
      {"bicubic",
       std::vector<int64_t>{2, 12},
       std::nullopt,
       false,
       {1, 1, 2, 12},
       {-0.015135787662949962, 0.0035560906016802903, 0.027884046603031773,  0.048154009983759495,
        0.06481770964024869,   0.07639967432607575,   0.08215571530530841,   0.08168451877652162,
        0.07489190794648062,   0.062379328002896625,  0.043193579898941264,  0.026694909248023025,
        0.08268733621377453,   0.08142160613213076,   0.07511014768972224,   0.06277098923163321,
        0.04550398599943767,   0.024838028173960178,  0.0023547195663155412, -0.02037839329655114,
        -0.04166822751204293,  -0.059629695202100326, -0.07340389068379585,  -0.0807049105258636}},
  };
  std::vector<double> xv;
  for (int i = 0; i < 63; ++i) xv.push_back(std::sin(0.37 * i + 0.1));
  Tensor x = from_vector(xv, {1, 1, 7, 9});
  for (const AaCase& c : cases) {
    for (DType dt : {kFloat64, kFloat32}) {
      Tensor y = F::interpolate(x.to(dt), c.size, c.sf, c.mode, c.ac, std::nullopt, true);
      ASSERT_EQ(y.sizes().vec(), c.shape) << c.mode;
      const std::vector<double> got = vals(y);
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_NEAR(got[i], c.want[i], dt == kFloat64 ? 1e-12 : 1e-5)
            << c.mode << " ac " << c.ac << " element " << i;
    }
  }
  // Only bilinear / bicubic on 4-D input.
  EXPECT_THROW(F::interpolate(x, std::vector<int64_t>{3, 4}, std::nullopt, "nearest", std::nullopt,
                              std::nullopt, true),
               Error);
  EXPECT_THROW(F::interpolate(x.reshape({1, 7, 9}), std::vector<int64_t>{4}, std::nullopt, "linear",
                              std::nullopt, std::nullopt, true),
               Error);
  // Without downsampling and away from the borders, antialiased bilinear is plain bilinear.
  Tensor up = F::interpolate(x, std::vector<int64_t>{14, 18}, std::nullopt, "bilinear",
                             std::nullopt, std::nullopt, true);
  Tensor plain = F::interpolate(x, std::vector<int64_t>{14, 18}, std::nullopt, "bilinear");
  const std::vector<double> a = vals(up.narrow(2, 1, 12).narrow(3, 1, 16)),
                            b = vals(plain.narrow(2, 1, 12).narrow(3, 1, 16));
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-12);
}

}  // namespace
}  // namespace kiln
