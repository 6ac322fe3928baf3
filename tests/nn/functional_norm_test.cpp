// Tests of kiln::nn::functional batch_norm (training statistics, running-stat updates, eval),
// instance_norm, group_norm, local_response_norm and normalize against double loops.
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

void expect_near(const std::vector<double>& a, const std::vector<double>& b, double tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], tol) << "at " << i;
}

// x [N, C, L] as double; group statistics over (sample n, channels [c0, c1), all L).
struct Stats {
  double mean, var;
};
Stats stats(const std::vector<double>& x, int64_t c, int64_t l, std::vector<int64_t> ns, int64_t c0,
            int64_t c1) {
  double s = 0, q = 0;
  int64_t k = 0;
  for (int64_t n : ns)
    for (int64_t ch = c0; ch < c1; ++ch)
      for (int64_t i = 0; i < l; ++i) s += x[(n * c + ch) * l + i], ++k;
  const double m = s / k;
  for (int64_t n : ns)
    for (int64_t ch = c0; ch < c1; ++ch)
      for (int64_t i = 0; i < l; ++i) q += std::pow(x[(n * c + ch) * l + i] - m, 2);
  return {m, q / k};
}

TEST(NnFunctionalNorm, BatchNormTrainingAndEval) {
  manual_seed(1);
  const int64_t n = 4, c = 3, h = 2, w = 5, l = h * w;
  Tensor x = randn({n, c, h, w}, TensorOptions(kFloat64)) * 2 + 1;
  Tensor weight = from_vector<double>({0.5, 1.5, -1}), bias = from_vector<double>({0.1, 0, 2});
  Tensor rm = zeros({c}, TensorOptions(kFloat64)), rv = ones({c}, TensorOptions(kFloat64));
  Tensor y = F::batch_norm(x, rm, rv, weight, bias, true, 0.2, 1e-5);
  std::vector<double> xv = vals(x), yv = vals(y), ref(xv.size()), erm, erv;
  const std::vector<double> wv = vals(weight), bv = vals(bias);
  for (int64_t ch = 0; ch < c; ++ch) {
    Stats s = stats(xv, c, l, {0, 1, 2, 3}, ch, ch + 1);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < l; ++i) {
        const int64_t at = (b * c + ch) * l + i;
        ref[at] = (xv[at] - s.mean) / std::sqrt(s.var + 1e-5) * wv[ch] + bv[ch];
      }
    erm.push_back(0.8 * 0 + 0.2 * s.mean);
    erv.push_back(0.8 * 1 + 0.2 * s.var * (n * l) / (n * l - 1.0));
  }
  expect_near(yv, ref, 1e-10);
  expect_near(vals(rm), erm, 1e-12);
  expect_near(vals(rv), erv, 1e-12);
  // Eval uses the running statistics.
  std::vector<double> ye = vals(F::batch_norm(x, rm, rv, weight, bias, false, 0.2, 1e-5));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < l; ++i) {
        const int64_t at = (b * c + ch) * l + i;
        EXPECT_NEAR(ye[at], (xv[at] - erm[ch]) / std::sqrt(erv[ch] + 1e-5) * wv[ch] + bv[ch],
                    1e-10);
      }
  EXPECT_THROW(F::batch_norm(x, Tensor(), Tensor()), Error);  // eval without stats
  EXPECT_THROW(F::batch_norm(ones({1, 3}), Tensor(), Tensor(), {}, {}, true), Error);
  EXPECT_THROW(F::batch_norm(x, zeros({4}), ones({4})), Error);
}

TEST(NnFunctionalNorm, InstanceAndGroupNorm) {
  manual_seed(2);
  const int64_t n = 2, c = 6, l = 7;
  Tensor x = randn({n, c, l}, TensorOptions(kFloat64)) * 3 - 1;
  std::vector<double> xv = vals(x);
  Tensor weight = rand({c}, TensorOptions(kFloat64)) + 0.5,
         bias = rand({c}, TensorOptions(kFloat64));
  const std::vector<double> wv = vals(weight), bv = vals(bias);
  // instance norm: per (n, c).
  Tensor rm = zeros({c}, TensorOptions(kFloat64)), rv = ones({c}, TensorOptions(kFloat64));
  std::vector<double> yi = vals(F::instance_norm(x, rm, rv, weight, bias, true, 0.1, 1e-5));
  std::vector<double> erm(c, 0.0), erv(c, 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch) {
      Stats s = stats(xv, c, l, {b}, ch, ch + 1);
      erm[ch] += 0.1 * s.mean / n;
      erv[ch] += 0.1 * s.var * l / (l - 1.0) / n;
      for (int64_t i = 0; i < l; ++i) {
        const int64_t at = (b * c + ch) * l + i;
        EXPECT_NEAR(yi[at], (xv[at] - s.mean) / std::sqrt(s.var + 1e-5) * wv[ch] + bv[ch], 1e-10);
      }
    }
  for (int64_t ch = 0; ch < c; ++ch) erv[ch] += 0.9;
  expect_near(vals(rm), erm, 1e-12);
  expect_near(vals(rv), erv, 1e-12);
  // group norm with 3 groups of 2 channels.
  std::vector<double> yg = vals(F::group_norm(x, 3, weight, bias, 1e-5));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t g = 0; g < 3; ++g) {
      Stats s = stats(xv, c, l, {b}, 2 * g, 2 * g + 2);
      for (int64_t ch = 2 * g; ch < 2 * g + 2; ++ch)
        for (int64_t i = 0; i < l; ++i) {
          const int64_t at = (b * c + ch) * l + i;
          EXPECT_NEAR(yg[at], (xv[at] - s.mean) / std::sqrt(s.var + 1e-5) * wv[ch] + bv[ch], 1e-10);
        }
    }
  EXPECT_THROW(F::group_norm(x, 4), Error);
}

TEST(NnFunctionalNorm, LocalResponseNormAndNormalize) {
  manual_seed(3);
  const int64_t n = 2, c = 5, l = 4;
  Tensor x = randn({n, c, 2, 2}, TensorOptions(kFloat64));
  std::vector<double> xv = vals(x);
  for (int64_t size : {2, 3}) {
    std::vector<double> y = vals(F::local_response_norm(x, size, 1e-2, 0.75, 1.5));
    for (int64_t b = 0; b < n; ++b)
      for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t i = 0; i < l; ++i) {
          double s = 0;
          for (int64_t k = ch - size / 2; k <= ch + (size - 1) / 2; ++k)
            if (k >= 0 && k < c) s += std::pow(xv[(b * c + k) * l + i], 2);
          const int64_t at = (b * c + ch) * l + i;
          EXPECT_NEAR(y[at], xv[at] / std::pow(1.5 + 1e-2 * s / size, 0.75), 1e-12)
              << "size " << size;
        }
  }
  // normalize along dim 1 with p = 2 and p = 1.
  for (double p : {1.0, 2.0}) {
    std::vector<double> y = vals(F::normalize(x, p, 1));
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < l; ++i) {
        double s = 0;
        for (int64_t ch = 0; ch < c; ++ch) s += std::pow(std::abs(xv[(b * c + ch) * l + i]), p);
        s = std::pow(s, 1 / p);
        for (int64_t ch = 0; ch < c; ++ch) {
          const int64_t at = (b * c + ch) * l + i;
          EXPECT_NEAR(y[at], xv[at] / s, 1e-12);
        }
      }
  }
  EXPECT_EQ(vals(F::normalize(zeros({2, 3}))), std::vector<double>(6, 0.0));
}

}  // namespace
}  // namespace kiln
