// nn::init: gains and fans against their definitions, the distributions' ranges and moments on
// large samples, orthogonality, reproducibility with a generator.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/nn/init.h"
#include "kiln/ops.h"

using namespace kiln;
namespace init = kiln::nn::init;

namespace {

std::vector<double> vals(const Tensor& t) {
  Tensor d = t.detach().to(kFloat64).contiguous();
  return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

struct Moments {
  double mean = 0, var = 0, min = INFINITY, max = -INFINITY;
};

Moments moments(const Tensor& t) {
  auto v = vals(t);
  Moments m;
  for (double x : v) {
    m.mean += x;
    m.min = std::min(m.min, x);
    m.max = std::max(m.max, x);
  }
  m.mean /= static_cast<double>(v.size());
  for (double x : v) m.var += (x - m.mean) * (x - m.mean);
  m.var /= static_cast<double>(v.size() - 1);
  return m;
}

}  // namespace

TEST(NNInit, CalculateGain) {
  EXPECT_DOUBLE_EQ(init::calculate_gain("linear"), 1.0);
  EXPECT_DOUBLE_EQ(init::calculate_gain("conv2d"), 1.0);
  EXPECT_DOUBLE_EQ(init::calculate_gain("sigmoid"), 1.0);
  EXPECT_DOUBLE_EQ(init::calculate_gain("tanh"), 5.0 / 3.0);
  EXPECT_DOUBLE_EQ(init::calculate_gain("relu"), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(init::calculate_gain("leaky_relu"), std::sqrt(2.0 / (1 + 0.01 * 0.01)));
  EXPECT_DOUBLE_EQ(init::calculate_gain("leaky_relu", 0.2), std::sqrt(2.0 / 1.04));
  EXPECT_DOUBLE_EQ(init::calculate_gain("selu"), 0.75);
  EXPECT_THROW(init::calculate_gain("swish"), Error);
}

TEST(NNInit, FanInFanOut) {
  auto f = init::calculate_fan_in_and_fan_out(kiln::empty({8, 3, 5, 2}));
  EXPECT_EQ(f.first, 3 * 10);
  EXPECT_EQ(f.second, 8 * 10);
  EXPECT_THROW(init::calculate_fan_in_and_fan_out(kiln::empty({4})), Error);
}

TEST(NNInit, ConstantsAndEye) {
  Tensor t = kiln::empty({3, 4});
  init::constant_(t, 2.5);
  for (double v : vals(t)) EXPECT_EQ(v, 2.5);
  init::zeros_(t);
  for (double v : vals(t)) EXPECT_EQ(v, 0.0);
  init::ones_(t);
  for (double v : vals(t)) EXPECT_EQ(v, 1.0);
  init::eye_(t);
  auto v = vals(t);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(v[i * 4 + j], i == j ? 1.0 : 0.0);
  EXPECT_THROW(init::eye_(kiln::empty({2, 2, 2})), Error);
}

TEST(NNInit, UniformFamilies) {
  // xavier_uniform_: U(-a, a), a = gain sqrt(6 / (fan_in + fan_out)); variance a^2 / 3.
  Tensor w = kiln::empty({300, 200});
  init::xavier_uniform_(w, 2.0);
  double a = 2.0 * std::sqrt(6.0 / 500);
  Moments m = moments(w);
  EXPECT_GE(m.min, -a);
  EXPECT_LE(m.max, a);
  EXPECT_GT(m.max, 0.99 * a);
  EXPECT_NEAR(m.var, a * a / 3, 0.02 * a * a / 3);
  EXPECT_NEAR(m.mean, 0, 0.01 * a);
  // kaiming_uniform_ with a = sqrt(5) (Linear's default): bound 1 / sqrt(fan_in).
  init::kaiming_uniform_(w, std::sqrt(5.0));
  m = moments(w);
  double b = 1 / std::sqrt(200.0);
  EXPECT_GE(m.min, -b);
  EXPECT_LE(m.max, b);
  EXPECT_GT(m.max, 0.99 * b);
  // fan_out mode, relu.
  init::kaiming_uniform_(w, 0, init::FanMode::FanOut, "relu");
  b = std::sqrt(2.0) * std::sqrt(3.0 / 300);
  m = moments(w);
  EXPECT_LE(m.max, b);
  EXPECT_GT(m.max, 0.99 * b);
  init::uniform_(w, -3, 5);
  m = moments(w);
  EXPECT_GE(m.min, -3);
  EXPECT_LT(m.max, 5);
  EXPECT_NEAR(m.mean, 1, 0.05);
}

TEST(NNInit, NormalFamilies) {
  Tensor w = kiln::empty({400, 250});
  init::xavier_normal_(w);
  double sd = std::sqrt(2.0 / 650);
  Moments m = moments(w);
  EXPECT_NEAR(std::sqrt(m.var), sd, 0.01 * sd);
  init::kaiming_normal_(w, 0, init::FanMode::FanIn, "relu");
  sd = std::sqrt(2.0) / std::sqrt(250.0);
  m = moments(w);
  EXPECT_NEAR(std::sqrt(m.var), sd, 0.01 * sd);
  EXPECT_NEAR(m.mean, 0, 0.01 * sd);
  init::normal_(w, 3, 0.5);
  m = moments(w);
  EXPECT_NEAR(m.mean, 3, 0.005);
  EXPECT_NEAR(std::sqrt(m.var), 0.5, 0.005);
}

TEST(NNInit, TruncNormalMoments) {
  // N(mu, s^2) truncated to [a, b]: mean mu + s (phi(al) - phi(be)) / Z,
  // var s^2 (1 + (al phi(al) - be phi(be)) / Z - ((phi(al) - phi(be)) / Z)^2).
  const double mu = 0.5, s = 2.0, a = -1.0, b = 4.0;
  auto phi = [](double x) { return std::exp(-x * x / 2) / std::sqrt(2 * M_PI); };
  auto Phi = [](double x) { return 0.5 * (1 + std::erf(x / std::sqrt(2.0))); };
  const double al = (a - mu) / s, be = (b - mu) / s, Z = Phi(be) - Phi(al);
  const double mean = mu + s * (phi(al) - phi(be)) / Z;
  const double var =
      s * s * (1 + (al * phi(al) - be * phi(be)) / Z - std::pow((phi(al) - phi(be)) / Z, 2));
  Tensor w = kiln::empty({200000}, TensorOptions(kFloat64));
  init::trunc_normal_(w, mu, s, a, b);
  Moments m = moments(w);
  EXPECT_GE(m.min, a);
  EXPECT_LE(m.max, b);
  EXPECT_NEAR(m.mean, mean, 0.01);
  EXPECT_NEAR(m.var, var, 0.02 * var);
  EXPECT_THROW(init::trunc_normal_(w, 0, 1, 2, 1), Error);
}

TEST(NNInit, OrthogonalTallAndWide) {
  for (auto shape :
       {std::vector<int64_t>{7, 4}, std::vector<int64_t>{3, 8}, std::vector<int64_t>{4, 2, 3}}) {
    Tensor w = kiln::empty(shape);
    init::orthogonal_(w, 1.5);
    const int64_t rows = shape[0], cols = w.numel() / rows;
    auto v = vals(w);
    // Columns orthonormal (tall) or rows orthonormal (wide), times gain^2.
    const bool tall = rows >= cols;
    const int64_t k = tall ? cols : rows, n = tall ? rows : cols;
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = 0; j < k; ++j) {
        double dot = 0;
        for (int64_t r = 0; r < n; ++r) {
          double x = tall ? v[r * cols + i] : v[i * cols + r];
          double y = tall ? v[r * cols + j] : v[j * cols + r];
          dot += x * y;
        }
        EXPECT_NEAR(dot, i == j ? 2.25 : 0.0, 1e-5) << i << "," << j;
      }
  }
  EXPECT_THROW(init::orthogonal_(kiln::empty({3})), Error);
}

TEST(NNInit, GeneratorMakesItReproducible) {
  Generator g1, g2;
  g1.manual_seed(5);
  g2.manual_seed(5);
  Tensor a = kiln::empty({10, 10}), b = kiln::empty({10, 10});
  init::kaiming_normal_(a, 0, init::FanMode::FanIn, "relu", g1);
  init::kaiming_normal_(b, 0, init::FanMode::FanIn, "relu", g2);
  EXPECT_TRUE(a.equal(b));
  init::orthogonal_(a, 1, g1);
  init::orthogonal_(b, 1, g2);
  EXPECT_TRUE(a.equal(b));
}

TEST(NNInit, WorksOnParametersRequiringGrad) {
  Tensor w = kiln::empty({4, 4}).requires_grad_();
  init::xavier_uniform_(w);
  init::orthogonal_(w);
  init::zeros_(w);
  EXPECT_TRUE(w.requires_grad());
  EXPECT_TRUE(w.is_leaf());
}
