// Tests of the composite kiln::nn::functional losses against plain double loops (mse, l1,
// smooth_l1, huber, bce, bce_with_logits with pos_weight, kl_div, poisson/gaussian nll, margin and
// embedding losses) with each reduction, plus their error cases.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "kiln/kiln.h"

namespace kiln {
namespace {

namespace F = kiln::nn::functional;
using F::Reduction;

std::vector<double> vals(const Tensor& t) {
  Tensor c = t.to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

// Checks loss(reduction) for None/Mean/Sum against per-element reference values.
void check_reductions(const std::string& name, const std::function<Tensor(Reduction)>& loss,
                      const std::vector<double>& per_elem, double tol = 1e-10) {
  std::vector<double> none = vals(loss(Reduction::None));
  ASSERT_EQ(none.size(), per_elem.size()) << name;
  double sum = 0;
  for (size_t i = 0; i < none.size(); ++i) {
    EXPECT_NEAR(none[i], per_elem[i], tol * std::max(1.0, std::abs(per_elem[i])))
        << name << " " << i;
    sum += per_elem[i];
  }
  EXPECT_NEAR(loss(Reduction::Sum).item<double>(), sum, tol * std::max(1.0, std::abs(sum))) << name;
  EXPECT_NEAR(loss(Reduction::Mean).item<double>(), sum / per_elem.size(),
              tol * std::max(1.0, std::abs(sum)))
      << name;
}

struct Data {
  Tensor x, y;
  std::vector<double> xv, yv;
};
Data make(double lo, double hi, double tlo, double thi, uint64_t seed) {
  manual_seed(seed);
  Data d;
  d.x = rand({3, 5}, TensorOptions(kFloat64)) * (hi - lo) + lo;
  d.y = rand({3, 5}, TensorOptions(kFloat64)) * (thi - tlo) + tlo;
  d.xv = vals(d.x), d.yv = vals(d.y);
  return d;
}

TEST(NnFunctionalLoss, Regression) {
  Data d = make(-3, 3, -3, 3, 1);
  std::vector<double> mse, l1, sl1, hub;
  for (size_t i = 0; i < d.xv.size(); ++i) {
    const double e = std::abs(d.xv[i] - d.yv[i]);
    mse.push_back(e * e);
    l1.push_back(e);
    sl1.push_back(e < 0.7 ? 0.5 * e * e / 0.7 : e - 0.35);
    hub.push_back(e < 1.3 ? 0.5 * e * e : 1.3 * (e - 0.65));
  }
  check_reductions(
      "mse", [&](Reduction r) { return F::mse_loss(d.x, d.y, r); }, mse);
  check_reductions(
      "l1", [&](Reduction r) { return F::l1_loss(d.x, d.y, r); }, l1);
  check_reductions(
      "smooth_l1", [&](Reduction r) { return F::smooth_l1_loss(d.x, d.y, r, 0.7); }, sl1);
  check_reductions(
      "huber", [&](Reduction r) { return F::huber_loss(d.x, d.y, r, 1.3); }, hub);
  check_reductions(
      "smooth_l1 beta 0", [&](Reduction r) { return F::smooth_l1_loss(d.x, d.y, r, 0); }, l1);
  EXPECT_THROW(F::huber_loss(d.x, d.y, Reduction::Mean, 0), Error);
  EXPECT_THROW(F::smooth_l1_loss(d.x, d.y, Reduction::Mean, -1), Error);
}

TEST(NnFunctionalLoss, BinaryCrossEntropy) {
  Data d = make(0.01, 0.99, 0, 1, 2);
  manual_seed(5);
  Tensor w = rand({5}, TensorOptions(kFloat64)) + 0.5, pw = rand({5}, TensorOptions(kFloat64)) * 3;
  std::vector<double> wv = vals(w), pwv = vals(pw), bce, bcel, bcelp;
  for (size_t i = 0; i < d.xv.size(); ++i) {
    const double p = d.xv[i], t = d.yv[i], ww = wv[i % 5];
    bce.push_back(-ww * (t * std::log(p) + (1 - t) * std::log(1 - p)));
    const double z = d.xv[i] * 6 - 3, s = 1 / (1 + std::exp(-z));
    bcel.push_back(-(t * std::log(s) + (1 - t) * std::log(1 - s)));
    bcelp.push_back(-(pwv[i % 5] * t * std::log(s) + (1 - t) * std::log(1 - s)));
  }
  check_reductions(
      "bce", [&](Reduction r) { return F::binary_cross_entropy(d.x, d.y, w, r); }, bce);
  Tensor z = d.x * 6 - 3;
  check_reductions(
      "bce_logits", [&](Reduction r) { return F::binary_cross_entropy_with_logits(z, d.y, {}, r); },
      bcel);
  check_reductions(
      "bce_logits pos_weight",
      [&](Reduction r) { return F::binary_cross_entropy_with_logits(z, d.y, {}, r, pw); }, bcelp);
  // Large logits stay finite; probabilities at 0/1 clamp the log at -100.
  Tensor big = from_vector<double>({-1000, 1000});
  std::vector<double> lb = vals(
      F::binary_cross_entropy_with_logits(big, from_vector<double>({1, 0}), {}, Reduction::None));
  EXPECT_NEAR(lb[0], 1000, 1e-9);
  EXPECT_NEAR(lb[1], 1000, 1e-9);
  EXPECT_NEAR(F::binary_cross_entropy(from_vector<double>({0.0}), from_vector<double>({1.0}))
                  .item<double>(),
              100, 1e-12);
  EXPECT_THROW(F::binary_cross_entropy(from_vector<double>({1.5}), from_vector<double>({1.0})),
               Error);
  EXPECT_THROW(F::binary_cross_entropy_with_logits(ones({2}), ones({3})), Error);
}

TEST(NnFunctionalLoss, KlDivAndPoissonGaussian) {
  Data d = make(-3, 0, 0, 1, 3);
  std::vector<double> kl, klt, pois, poisf, gau;
  for (size_t i = 0; i < d.xv.size(); ++i) {
    const double x = d.xv[i], t = d.yv[i];
    kl.push_back(t > 0 ? t * (std::log(t) - x) : 0);
    klt.push_back(std::exp(t) * (t - x));
    pois.push_back(std::exp(x) - t * x);
    const double tt = t * 4;  // targets up to 4 for the Stirling term
    poisf.push_back(std::exp(x) - tt * x +
                    (tt > 1 ? tt * std::log(tt) - tt + 0.5 * std::log(2 * M_PI * tt) : 0));
    const double var = std::max(t, 1e-6);
    gau.push_back(0.5 * (std::log(var) + (x - 2 * t) * (x - 2 * t) / var));
  }
  check_reductions(
      "kl_div", [&](Reduction r) { return F::kl_div(d.x, d.y, r); }, kl);
  check_reductions(
      "kl_div log_target", [&](Reduction r) { return F::kl_div(d.x, d.y, r, true); }, klt);
  check_reductions(
      "poisson", [&](Reduction r) { return F::poisson_nll_loss(d.x, d.y, true, false, 1e-8, r); },
      pois);
  check_reductions(
      "poisson full",
      [&](Reduction r) { return F::poisson_nll_loss(d.x, d.y * 4, true, true, 1e-8, r); }, poisf);
  check_reductions(
      "gaussian",
      [&](Reduction r) { return F::gaussian_nll_loss(d.x, d.y * 2, d.y, false, 1e-6, r); }, gau);
  EXPECT_THROW(F::gaussian_nll_loss(d.x, d.y, -d.y - 1), Error);
}

TEST(NnFunctionalLoss, MarginAndEmbeddingLosses) {
  Data d = make(-2, 2, -2, 2, 4);
  Tensor sign = from_vector<double>({1, -1, 1});
  std::vector<double> sv = {1, -1, 1};
  // cosine_embedding over rows of [3, 5].
  std::vector<double> cos_l, rank, hinge, soft;
  for (int r = 0; r < 3; ++r) {
    double dot = 0, n1 = 0, n2 = 0;
    for (int j = 0; j < 5; ++j) {
      const double a = d.xv[r * 5 + j], b = d.yv[r * 5 + j];
      dot += a * b, n1 += a * a, n2 += b * b;
    }
    const double c = dot / std::sqrt((n1 + 1e-12) * (n2 + 1e-12));
    cos_l.push_back(sv[r] == 1 ? 1 - c : std::max(0.0, c - 0.1));
  }
  check_reductions(
      "cosine_embedding",
      [&](Reduction r) { return F::cosine_embedding_loss(d.x, d.y, sign, 0.1, r); }, cos_l);
  Tensor x1 = d.x.select(1, 0), x2 = d.y.select(1, 0);
  for (int r = 0; r < 3; ++r) {
    const double a = d.xv[r * 5], b = d.yv[r * 5];
    rank.push_back(std::max(0.0, -sv[r] * (a - b) + 0.5));
    hinge.push_back(sv[r] == 1 ? a : std::max(0.0, 1.0 - a));
    soft.push_back(std::log1p(std::exp(-sv[r] * a)));
  }
  check_reductions(
      "margin_ranking", [&](Reduction r) { return F::margin_ranking_loss(x1, x2, sign, 0.5, r); },
      rank);
  check_reductions(
      "hinge_embedding", [&](Reduction r) { return F::hinge_embedding_loss(x1, sign, 1.0, r); },
      hinge);
  check_reductions(
      "soft_margin", [&](Reduction r) { return F::soft_margin_loss(x1, sign, r); }, soft);
  // triplet margin: L2 distances with eps added to the difference.
  Tensor neg = d.x * -0.5 + 0.3;
  std::vector<double> nv = vals(neg), trip;
  for (int r = 0; r < 3; ++r) {
    double dp = 0, dn = 0;
    for (int j = 0; j < 5; ++j) {
      const double a = d.xv[r * 5 + j];
      dp += std::pow(a - d.yv[r * 5 + j] + 1e-6, 2);
      dn += std::pow(a - nv[r * 5 + j] + 1e-6, 2);
    }
    trip.push_back(std::max(0.0, std::sqrt(dp) - std::sqrt(dn) + 1.0));
  }
  check_reductions(
      "triplet",
      [&](Reduction r) { return F::triplet_margin_loss(d.x, d.y, neg, 1.0, 2.0, 1e-6, false, r); },
      trip);
  // multilabel soft margin: mean over classes of the binary logistic losses.
  Tensor t01 = (d.y > 0).to(kFloat64);
  std::vector<double> tv = vals(t01), ml;
  for (int r = 0; r < 3; ++r) {
    double s = 0;
    for (int j = 0; j < 5; ++j) {
      const double x = d.xv[r * 5 + j], t = tv[r * 5 + j];
      s += -(t * std::log(1 / (1 + std::exp(-x))) + (1 - t) * std::log(1 / (1 + std::exp(x))));
    }
    ml.push_back(s / 5);
  }
  check_reductions(
      "multilabel_soft_margin",
      [&](Reduction r) { return F::multilabel_soft_margin_loss(d.x, t01, {}, r); }, ml);
  EXPECT_THROW(F::triplet_margin_loss(d.x, d.y, neg, 0.0), Error);
}

// CTC by brute force: sum over every path of length T whose collapse (merge repeats, drop
// blanks) equals the target.
double ctc_brute(const std::vector<double>& lp, int64_t t_len, int64_t c,
                 const std::vector<int64_t>& target, int64_t blank) {
  double total = 0;
  std::vector<int64_t> path(t_len, 0);
  while (true) {
    std::vector<int64_t> out;
    int64_t prev = -1;
    for (int64_t k : path) {
      if (k != prev && k != blank) out.push_back(k);
      prev = k;
    }
    if (out == target) {
      double lp_sum = 0;
      for (int64_t t = 0; t < t_len; ++t) lp_sum += lp[t * c + path[t]];
      total += std::exp(lp_sum);
    }
    int64_t i = t_len - 1;
    while (i >= 0 && ++path[i] == c) path[i--] = 0;
    if (i < 0) break;
  }
  return -std::log(total);
}

TEST(NnFunctionalLoss, CtcMatchesBruteForce) {
  manual_seed(8);
  const int64_t t_max = 5, n = 3, c = 4;
  Tensor lp = F::log_softmax(randn({t_max, n, c}, TensorOptions(kFloat64)), 2);
  std::vector<double> lpv = vals(lp);
  // Per sample: input length, target (blank = 0).
  std::vector<int64_t> il = {5, 4, 3};
  std::vector<std::vector<int64_t>> tg = {{1, 2, 2}, {3}, {2, 1}};
  Tensor padded = from_vector<int64_t>({1, 2, 2, 3, 0, 0, 2, 1, 0}, {3, 3});
  Tensor concat = from_vector<int64_t>({1, 2, 2, 3, 2, 1});
  Tensor ilt = from_vector<int64_t>(il), tlt = from_vector<int64_t>({3, 1, 2});
  std::vector<double> ref;
  for (int64_t b = 0; b < n; ++b) {
    std::vector<double> plp;
    for (int64_t t = 0; t < il[b]; ++t)
      for (int64_t k = 0; k < c; ++k) plp.push_back(lpv[(t * n + b) * c + k]);
    ref.push_back(ctc_brute(plp, il[b], c, tg[b], 0));
  }
  for (const Tensor& targets : {padded, concat}) {
    std::vector<double> got = vals(F::ctc_loss(lp, targets, ilt, tlt, 0, Reduction::None));
    ASSERT_EQ(got.size(), 3u);
    for (int b = 0; b < 3; ++b) EXPECT_NEAR(got[b], ref[b], 1e-10) << "sample " << b;
  }
  EXPECT_NEAR(F::ctc_loss(lp, padded, ilt, tlt, 0, Reduction::Sum).item<double>(),
              ref[0] + ref[1] + ref[2], 1e-10);
  EXPECT_NEAR(F::ctc_loss(lp, padded, ilt, tlt).item<double>(),
              (ref[0] / 3 + ref[1] / 1 + ref[2] / 2) / 3, 1e-10);
  // An impossible alignment (target longer than the input) is inf, or 0 with zero_infinity.
  Tensor one = from_vector<int64_t>({1}), three = from_vector<int64_t>({3});
  Tensor tgt = from_vector<int64_t>({1, 2, 3}, {1, 3});
  EXPECT_TRUE(std::isinf(
      F::ctc_loss(lp.narrow(1, 0, 1), tgt, from_vector<int64_t>({2}), three, 0, Reduction::Sum)
          .item<double>()));
  EXPECT_EQ(F::ctc_loss(lp.narrow(1, 0, 1), tgt, from_vector<int64_t>({2}), three, 0,
                        Reduction::Sum, true)
                .item<double>(),
            0.0);
  EXPECT_THROW(F::ctc_loss(lp, padded, ilt, tlt, 7), Error);
  EXPECT_THROW(F::ctc_loss(lp, padded, from_vector<int64_t>({9, 1, 1}), tlt), Error);
  (void)one;
}

}  // namespace
}  // namespace kiln
