// Upsample, RReLU, Softmax2d, CTCLoss, MultiMarginLoss, MultiLabelMarginLoss and
// TripletMarginWithDistanceLoss against double-precision loops, brute-force enumeration and
// PyTorch's documented example values.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "kiln/autograd.h"
#include "kiln/nn/nn.h"
#include "kiln/ops.h"

using namespace kiln;
using namespace kiln::nn;

namespace {

std::vector<double> vals(const Tensor& t) {
  Tensor d = t.detach().to(kFloat64).contiguous();
  return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

const TensorOptions f64(kFloat64);

TEST(LayersExtra, UpsampleNearestAndBilinearAlignCorners) {
  Tensor x = arange(6, f64).reshape({1, 1, 2, 3}).mul(1.5).sub(2);
  auto xv = vals(x);
  Upsample up(std::nullopt, std::vector<double>{2.0});
  Tensor y = up(x);
  ASSERT_EQ(y.sizes(), IntArrayRef({1, 1, 4, 6}));
  auto yv = vals(y);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 6; ++j) EXPECT_EQ(yv[i * 6 + j], xv[(i / 2) * 3 + j / 2]) << i << "," << j;
  // align_corners: output (i, j) samples input at (i * (H-1)/(Ho-1), j * (W-1)/(Wo-1)).
  UpsamplingBilinear2d bil(std::vector<int64_t>{3, 5});
  auto bv = vals(bil(x));
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 5; ++j) {
      double si = i * 1.0 / 2, sj = j * 2.0 / 4;
      int i0 = static_cast<int>(std::floor(si)), j0 = static_cast<int>(std::floor(sj));
      int i1 = std::min(i0 + 1, 1), j1 = std::min(j0 + 1, 2);
      double di = si - i0, dj = sj - j0;
      double want = (1 - di) * ((1 - dj) * xv[i0 * 3 + j0] + dj * xv[i0 * 3 + j1]) +
                    di * ((1 - dj) * xv[i1 * 3 + j0] + dj * xv[i1 * 3 + j1]);
      EXPECT_NEAR(bv[i * 5 + j], want, 1e-12) << i << "," << j;
    }
  EXPECT_THROW(Upsample(std::vector<int64_t>{2}, std::vector<double>{2.0}), Error);
  std::ostringstream os;
  os << up;
  EXPECT_EQ(os.str(), "Upsample(scale_factor=2.0, mode='nearest')");
}

TEST(LayersExtra, RReLUTrainAndEval) {
  manual_seed(5);
  Tensor x = randn({1000}, f64);
  RReLU r(0.1, 0.3);
  auto xv = vals(x);
  auto yv = vals(r(x));
  double lo = 1, hi = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    if (xv[i] >= 0) {
      EXPECT_EQ(yv[i], xv[i]);
    } else {
      const double s = yv[i] / xv[i];
      EXPECT_GE(s, 0.1 - 1e-12);
      EXPECT_LE(s, 0.3 + 1e-12);
      lo = std::min(lo, s);
      hi = std::max(hi, s);
    }
  }
  EXPECT_LT(lo, 0.12);  // the slopes are spread over [lower, upper]
  EXPECT_GT(hi, 0.28);
  r->eval();
  auto ev = vals(r(x));
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_DOUBLE_EQ(ev[i], xv[i] >= 0 ? xv[i] : xv[i] * 0.2);
  // Training mode has gradients: d/dx = slope (or 1).
  r->train();
  Tensor xg = x.clone().requires_grad_(true);
  Tensor y = r(xg);
  y.sum().backward();
  auto g = vals(xg.grad()), y2 = vals(y);
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_NEAR(g[i], xv[i] >= 0 ? 1.0 : y2[i] / xv[i], 1e-12);
}

TEST(LayersExtra, Softmax2dOverChannels) {
  Tensor x = randn({2, 3, 2, 2}, f64);
  auto xv = vals(x), yv = vals(Softmax2d()(x));
  for (int n = 0; n < 2; ++n)
    for (int p = 0; p < 4; ++p) {
      double z = 0;
      for (int c = 0; c < 3; ++c) z += std::exp(xv[n * 12 + c * 4 + p]);
      for (int c = 0; c < 3; ++c)
        EXPECT_NEAR(yv[n * 12 + c * 4 + p], std::exp(xv[n * 12 + c * 4 + p]) / z, 1e-14);
    }
  EXPECT_THROW(Softmax2d()(randn({3, 4})), Error);
}

// -log of the summed probability of every path over T steps that collapses to `target`.
double ctc_brute(const std::vector<double>& logp, int T, int C, const std::vector<int>& target,
                 int blank) {
  double total = 0;
  std::vector<int> path(T, 0);
  for (;;) {
    std::vector<int> col;
    int prev = -1;
    for (int t = 0; t < T; ++t) {
      if (path[t] != prev && path[t] != blank) col.push_back(path[t]);
      prev = path[t];
    }
    if (col == target) {
      double lp = 0;
      for (int t = 0; t < T; ++t) lp += logp[t * C + path[t]];
      total += std::exp(lp);
    }
    int k = 0;
    while (k < T && ++path[k] == C) path[k++] = 0;
    if (k == T) break;
  }
  return -std::log(total);
}

TEST(LayersExtra, CTCLossMatchesBruteForceEnumeration) {
  manual_seed(11);
  const int T = 5, N = 2, C = 3;
  Tensor lp = nn::functional::log_softmax(randn({T, N, C}, f64), 2);
  Tensor targets = tensor({1, 2, 2, 0}, TensorOptions(kInt64)).reshape({2, 2});  // n=1: {2}
  Tensor in_len = tensor({5, 4}, TensorOptions(kInt64));
  Tensor tg_len = tensor({2, 1}, TensorOptions(kInt64));
  CTCLoss loss(0, Reduction::None);
  auto got = vals(loss(lp, targets, in_len, tg_len));
  auto l = vals(lp);
  std::vector<double> l0, l1;
  for (int t = 0; t < T; ++t)
    for (int c = 0; c < C; ++c) {
      l0.push_back(l[(t * N + 0) * C + c]);
      if (t < 4) l1.push_back(l[(t * N + 1) * C + c]);
    }
  ASSERT_EQ(got.size(), 2u);
  EXPECT_NEAR(got[0], ctc_brute(l0, 5, C, {1, 2}, 0), 1e-10);
  EXPECT_NEAR(got[1], ctc_brute(l1, 4, C, {2}, 0), 1e-10);
  // Mean divides each loss by its target length, then averages.
  CTCLoss mean_loss;
  EXPECT_NEAR(mean_loss(lp, targets, in_len, tg_len).item<double>(), (got[0] / 2 + got[1] / 1) / 2,
              1e-10);
}

double multi_margin_ref(const std::vector<double>& x, const std::vector<int64_t>& y, int N, int C,
                        int p, double margin, const std::vector<double>& w, int n) {
  double s = 0;
  for (int i = 0; i < C; ++i) {
    if (i == y[n]) continue;
    double m = std::max(0.0, margin - x[n * C + y[n]] + x[n * C + i]);
    s += (p == 2 ? m * m : m) * (w.empty() ? 1.0 : w[y[n]]);
  }
  return s / C;
}

TEST(LayersExtra, MultiMarginLossMatchesLoops) {
  manual_seed(2);
  const int N = 5, C = 4;
  Tensor x = randn({N, C}, f64);
  std::vector<int64_t> yv = {0, 3, 1, 1, 2};
  Tensor y = from_vector(yv, {N});
  Tensor w = tensor({0.5, 1.0, 2.0, 1.5}, f64);
  auto xv = vals(x), wv = vals(w);
  for (int p : {1, 2})
    for (bool weighted : {false, true}) {
      MultiMarginLoss none(p, 0.7, weighted ? w : Tensor(), Reduction::None);
      auto got = vals(none(x, y));
      double sum = 0;
      for (int n = 0; n < N; ++n) {
        double want =
            multi_margin_ref(xv, yv, N, C, p, 0.7, weighted ? wv : std::vector<double>{}, n);
        EXPECT_NEAR(got[n], want, 1e-14) << p << weighted << n;
        sum += want;
      }
      MultiMarginLoss mean(p, 0.7, weighted ? w : Tensor());
      EXPECT_NEAR(mean(x, y).item<double>(), sum / N, 1e-14);
    }
  // Gradients through autograd agree with finite differences.
  MultiMarginLoss m2(2, 1.0, w);
  EXPECT_TRUE(autograd::gradcheck(
      autograd::Func([&](const std::vector<Tensor>& in) { return m2(in[0], y); }),
      {x.clone().requires_grad_(true)}));
  EXPECT_THROW(MultiMarginLoss(3), Error);
}

TEST(LayersExtra, MultiLabelMarginLossPublishedExampleAndLoops) {
  // torch.nn.MultiLabelMarginLoss documentation: 0.25 * ((1-(0.1-0.2)) + (1-(0.1-0.4)) +
  // (1-(0.8-0.2)) + (1-(0.8-0.4))) = 0.85.
  Tensor x = tensor({{0.1, 0.2, 0.4, 0.8}}, f64);
  Tensor y = tensor({{3, 0, -1, 1}}, TensorOptions(kInt64));
  MultiLabelMarginLoss loss;
  EXPECT_NEAR(loss(x, y).item<double>(), 0.85, 1e-14);
  // 1-D input, a repeated target counted twice, and a row with no target.
  manual_seed(4);
  const int N = 3, C = 5;
  Tensor xs = randn({N, C}, f64);
  std::vector<int64_t> yl = {2, 2, 4, -1, 0, /**/ -1, 1, 1, 1, 1, /**/ 0, 1, 2, 3, 4};
  Tensor ys = from_vector(yl, {N, C});
  auto xv = vals(xs);
  auto got = vals(MultiLabelMarginLoss(Reduction::None)(xs, ys));
  for (int n = 0; n < N; ++n) {
    std::vector<int> tg;
    std::vector<bool> is_t(C, false);
    for (int k = 0; k < C && yl[n * C + k] >= 0; ++k) {
      tg.push_back(static_cast<int>(yl[n * C + k]));
      is_t[yl[n * C + k]] = true;
    }
    double s = 0;
    for (int j : tg)
      for (int i = 0; i < C; ++i)
        if (!is_t[i]) s += std::max(0.0, 1 - (xv[n * C + j] - xv[n * C + i]));
    EXPECT_NEAR(got[n], s / C, 1e-14) << n;
  }
  EXPECT_NEAR(vals(loss(x.squeeze(0), y.squeeze(0)))[0], 0.85, 1e-14);
}

TEST(LayersExtra, TripletMarginWithDistanceLoss) {
  manual_seed(9);
  Tensor a = randn({4, 3}, f64), p = randn({4, 3}, f64), n = randn({4, 3}, f64);
  auto av = vals(a), pv = vals(p), nv = vals(n);
  auto l2 = [](const std::vector<double>& u, const std::vector<double>& v, int r) {
    double s = 0;
    for (int k = 0; k < 3; ++k) s += std::pow(u[r * 3 + k] - v[r * 3 + k] + 1e-6, 2);
    return std::sqrt(s);
  };
  auto l1 = [](const std::vector<double>& u, const std::vector<double>& v, int r) {
    double s = 0;
    for (int k = 0; k < 3; ++k) s += std::abs(u[r * 3 + k] - v[r * 3 + k]);
    return s;
  };
  TripletMarginWithDistanceLoss def(TripletMarginWithDistanceLossImpl::Distance{}, 1.0, false,
                                    Reduction::None);
  TripletMarginWithDistanceLoss custom(
      [](const Tensor& u, const Tensor& v) { return (u - v).abs().sum(1); }, 0.5, true,
      Reduction::None);
  auto g1 = vals(def(a, p, n)), g2 = vals(custom(a, p, n));
  for (int r = 0; r < 4; ++r) {
    EXPECT_NEAR(g1[r], std::max(0.0, 1.0 + l2(av, pv, r) - l2(av, nv, r)), 1e-12) << r;
    double dn = std::min(l1(av, nv, r), l1(pv, nv, r));
    EXPECT_NEAR(g2[r], std::max(0.0, 0.5 + l1(av, pv, r) - dn), 1e-12) << r;
  }
  EXPECT_THROW(TripletMarginWithDistanceLoss(TripletMarginWithDistanceLossImpl::Distance{}, 0.0),
               Error);
}

}  // namespace
