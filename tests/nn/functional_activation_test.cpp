// Tests of kiln::nn::functional activations (against double formulas), softmax dtype handling
// and dropout (statistics, determinism under manual_seed, channel masks, errors).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "kiln/kiln.h"

namespace kiln {
namespace {

namespace F = kiln::nn::functional;

std::vector<double> vals(const Tensor& t) {
  Tensor c = t.to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

// x: 121 points on [-6, 6] plus a few specials, in float64 and float32.
void check(const std::string& name, const std::function<Tensor(const Tensor&)>& fn,
           const std::function<double(double)>& ref, double tol32 = 2e-6) {
  std::vector<double> xs;
  for (int i = 0; i <= 120; ++i) xs.push_back(-6.0 + 0.1 * i);
  xs.push_back(-30), xs.push_back(30), xs.push_back(0.5), xs.push_back(-0.5);
  for (DType dt : {kFloat64, kFloat32}) {
    Tensor x = from_vector(xs).to(dt);
    std::vector<double> got = vals(fn(x)), xin = vals(x);
    ASSERT_EQ(got.size(), xin.size()) << name;
    const double tol = dt == kFloat64 ? 1e-12 : tol32;
    for (size_t i = 0; i < got.size(); ++i) {
      const double r = ref(xin[i]);
      EXPECT_NEAR(got[i], r, tol * std::max(1.0, std::abs(r)))
          << name << " " << dtype_name(dt) << " at x=" << xin[i];
    }
  }
}

TEST(NnFunctionalActivation, MatchDoubleFormulas) {
  const double sa = 1.6732632423543772848170429916717, ss = 1.0507009873554804934193349852946;
  check(
      "relu", [](const Tensor& x) { return F::relu(x); }, [](double x) { return x > 0 ? x : 0; });
  check(
      "relu6", [](const Tensor& x) { return F::relu6(x); },
      [](double x) { return std::min(std::max(x, 0.0), 6.0); });
  check(
      "leaky_relu", [](const Tensor& x) { return F::leaky_relu(x, 0.2); },
      [](double x) { return x > 0 ? x : 0.2 * x; });
  check(
      "elu", [](const Tensor& x) { return F::elu(x, 1.5); },
      [](double x) { return x > 0 ? x : 1.5 * (std::exp(x) - 1); });
  check(
      "selu", [](const Tensor& x) { return F::selu(x); },
      [&](double x) { return ss * (x > 0 ? x : sa * (std::exp(x) - 1)); });
  check(
      "celu", [](const Tensor& x) { return F::celu(x, 2.0); },
      [](double x) { return x > 0 ? x : 2.0 * (std::exp(x / 2.0) - 1); });
  check(
      "gelu", [](const Tensor& x) { return F::gelu(x); },
      [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); });
  check(
      "gelu_tanh", [](const Tensor& x) { return F::gelu(x, "tanh"); },
      [](double x) {
        return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
      });
  check(
      "silu", [](const Tensor& x) { return F::silu(x); },
      [](double x) { return x / (1 + std::exp(-x)); });
  check(
      "mish", [](const Tensor& x) { return F::mish(x); },
      [](double x) { return x * std::tanh(std::log1p(std::exp(x))); });
  check(
      "hardtanh", [](const Tensor& x) { return F::hardtanh(x, -2, 3); },
      [](double x) { return std::min(std::max(x, -2.0), 3.0); });
  check(
      "hardsigmoid", [](const Tensor& x) { return F::hardsigmoid(x); },
      [](double x) { return x <= -3  ? 0
                            : x >= 3 ? 1
                                     : x / 6 + 0.5; });
  check(
      "hardswish", [](const Tensor& x) { return F::hardswish(x); },
      [](double x) { return x <= -3  ? 0
                            : x >= 3 ? x
                                     : x * (x + 3) / 6; });
  check(
      "softplus", [](const Tensor& x) { return F::softplus(x, 2.0, 10.0); },
      [](double x) { return 2 * x > 10 ? x : std::log1p(std::exp(2 * x)) / 2; });
  check(
      "softsign", [](const Tensor& x) { return F::softsign(x); },
      [](double x) { return x / (1 + std::abs(x)); });
  check(
      "logsigmoid", [](const Tensor& x) { return F::logsigmoid(x); },
      [](double x) { return -std::log1p(std::exp(-x)); });
  check(
      "tanhshrink", [](const Tensor& x) { return F::tanhshrink(x); },
      [](double x) { return x - std::tanh(x); }, 1e-5);
  check(
      "softshrink", [](const Tensor& x) { return F::softshrink(x, 0.5); },
      [](double x) { return x > 0.5    ? x - 0.5
                            : x < -0.5 ? x + 0.5
                                       : 0; });
  check(
      "hardshrink", [](const Tensor& x) { return F::hardshrink(x, 0.5); },
      [](double x) { return std::abs(x) > 0.5 ? x : 0; });
  check(
      "threshold", [](const Tensor& x) { return F::threshold(x, 1.0, -7.0); },
      [](double x) { return x > 1.0 ? x : -7.0; });
}

TEST(NnFunctionalActivation, InplaceWritesInput) {
  Tensor x = from_vector<float>({-1, 2, -3});
  Tensor y = F::relu(x, true);
  EXPECT_EQ(vals(x), (std::vector<double>{0, 2, 0}));
  EXPECT_EQ(y.data_ptr(), x.data_ptr());
}

TEST(NnFunctionalActivation, Glu) {
  Tensor x = from_vector<double>({1, -2, 3, 0.5, 4, -1}, {2, 3}).t().contiguous();  // [3, 2]
  std::vector<double> in = vals(x), got = vals(F::glu(x, 1));
  for (int i = 0; i < 3; ++i)
    EXPECT_NEAR(got[i], in[2 * i] / (1 + std::exp(-in[2 * i + 1])), 1e-12);
  EXPECT_THROW(F::glu(ones({3, 3}), 1), Error);
}

TEST(NnFunctionalActivation, SoftmaxDtypeAndErrors) {
  Tensor x = from_vector<int64_t>({1, 2, 3});
  Tensor y = F::softmax(x, 0, kFloat64);
  EXPECT_EQ(y.dtype(), kFloat64);
  std::vector<double> v = vals(y);
  const double s = std::exp(1) + std::exp(2) + std::exp(3);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(v[i], std::exp(i + 1) / s, 1e-15);
  EXPECT_THROW(F::softmax(x, 0), Error);  // integer input without dtype
  EXPECT_THROW(F::log_softmax(ones({2}), 0, kInt32), Error);
}

TEST(NnFunctionalDropout, Statistics) {
  manual_seed(7);
  const int64_t n = 200000;
  Tensor x = ones({n});
  Tensor y = F::dropout(x, 0.3, true);
  std::vector<double> v = vals(y);
  int64_t zeros = 0;
  for (double e : v) {
    if (e == 0)
      ++zeros;
    else
      EXPECT_NEAR(e, 1 / 0.7, 1e-6);
  }
  // 0.3 +- 5 standard deviations of a binomial proportion.
  EXPECT_NEAR(static_cast<double>(zeros) / n, 0.3, 5 * std::sqrt(0.3 * 0.7 / n));
  // Same seed, same mask.
  manual_seed(7);
  EXPECT_EQ(vals(F::dropout(x, 0.3, true)), v);
  // eval, p = 0: identity; p = 1: zeros.
  EXPECT_TRUE(F::dropout(x, 0.3, false).is_same(x));
  EXPECT_EQ(vals(F::dropout(x.narrow(0, 0, 10), 1.0, true)), std::vector<double>(10, 0.0));
  EXPECT_THROW(F::dropout(x, 1.5, true), Error);
  EXPECT_THROW(F::dropout(x, -0.1, true), Error);
}

TEST(NnFunctionalDropout, ChannelMasks) {
  manual_seed(3);
  Tensor x = ones({4, 16, 3, 5});
  std::vector<double> v = vals(F::dropout2d(x, 0.5, true));
  int dropped = 0;
  for (int p = 0; p < 64; ++p) {
    const double first = v[p * 15];
    EXPECT_TRUE(first == 0 || std::abs(first - 2.0) < 1e-6);
    for (int i = 1; i < 15; ++i) EXPECT_EQ(v[p * 15 + i], first) << "plane " << p;
    dropped += first == 0;
  }
  EXPECT_GT(dropped, 10);
  EXPECT_LT(dropped, 54);
  EXPECT_THROW(F::dropout2d(ones({2, 3}), 0.5, true), Error);
  // dropout1d on [C, L]: rows.
  std::vector<double> r = vals(F::dropout1d(ones({8, 6}), 0.5, true));
  for (int c = 0; c < 8; ++c)
    for (int i = 1; i < 6; ++i) EXPECT_EQ(r[c * 6 + i], r[c * 6]);
}

TEST(NnFunctionalDropout, AlphaDropoutKeepsMeanAndVariance) {
  manual_seed(11);
  Tensor x = randn({200000}, TensorOptions(kFloat64));
  Tensor y = F::alpha_dropout(x, 0.2, true);
  std::vector<double> v = vals(y);
  double m = 0, q = 0;
  for (double e : v) m += e;
  m /= v.size();
  for (double e : v) q += (e - m) * (e - m);
  q /= v.size();
  EXPECT_NEAR(m, 0.0, 0.02);
  EXPECT_NEAR(q, 1.0, 0.03);
  EXPECT_TRUE(F::alpha_dropout(x, 0.2, false).is_same(x));
}

}  // namespace
}  // namespace kiln
