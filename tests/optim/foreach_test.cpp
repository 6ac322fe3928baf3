// The CPU multi-tensor path: clip_grad_norm_ over many gradients of mixed dtypes against a
// float64 reference, the unscale/inf check entry, and per-tensor norms of odd-sized tensors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kiln/nn/utils.h"
#include "kiln/ops.h"
#include "optim/multi_tensor.h"

using namespace kiln;

namespace {

std::vector<double> host(const Tensor& t) {
  Tensor d = t.detach().to(kFloat64).contiguous();
  return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

const std::vector<std::vector<int64_t>> kShapes = {{1}, {3}, {65537}, {7, 13}, {0}, {2, 3, 5}};

double ref_norm(const std::vector<std::vector<double>>& gs, double p) {
  double acc = 0;
  for (auto& v : gs)
    for (double x : v)
      acc = std::isinf(p) ? std::max(acc, std::fabs(x)) : acc + std::pow(std::fabs(x), p);
  return std::isinf(p) ? acc : std::pow(acc, 1 / p);
}

TEST(ForeachCpu, ClipGradNormMatchesFloat64Reference) {
  for (DType dt : {kFloat32, kFloat64}) {
    for (double p : {2.0, 1.0, 3.0, 0.5, std::numeric_limits<double>::infinity()}) {
      manual_seed(3);
      std::vector<Tensor> ps;
      std::vector<std::vector<double>> g64;
      for (int rep = 0; rep < 8; ++rep)
        for (auto& s : kShapes) {
          Tensor q = zeros(s, TensorOptions(dt)).requires_grad_(true);
          q.mutable_grad() = randn(s, TensorOptions(dt));
          g64.push_back(host(q.grad()));
          ps.push_back(q);
        }
      const double total = ref_norm(g64, p), max_norm = total / 4;
      const double tol = dt == kFloat64 ? 1e-12 : 1e-5;
      Tensor got = nn::utils::clip_grad_norm_(ps, max_norm, p);
      EXPECT_EQ(got.dtype(), dt);
      EXPECT_NEAR(got.item<double>(), total, tol * total) << p;
      const double coef = std::min(1.0, max_norm / (total + 1e-6));
      for (size_t i = 0; i < ps.size(); ++i) {
        auto h = host(ps[i].grad());
        for (size_t j = 0; j < h.size(); ++j)
          ASSERT_NEAR(h[j], g64[i][j] * coef, tol * (std::fabs(g64[i][j]) + 1e-3)) << p;
      }
    }
  }
}

TEST(ForeachCpu, ClipGradNormMixedDtypesAndNonContiguous) {
  // A float32, a bfloat16 and a transposed float32 gradient: the total is in the first one's dtype.
  Tensor a = zeros({4}).requires_grad_(true),
         b = zeros({3}, TensorOptions(kBFloat16)).requires_grad_(true);
  Tensor c = zeros({3, 2}).requires_grad_(true);
  a.mutable_grad() = tensor({3.0f, 0.0f, 0.0f, 4.0f});
  b.mutable_grad() = tensor({1.0f, 2.0f, 2.0f}).to(kBFloat16);
  c.mutable_grad() = tensor({1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f}).view({2, 3}).t();
  ASSERT_FALSE(c.grad().is_contiguous());
  // sqrt(25 + 9 + 6) = sqrt(40).
  Tensor total = nn::utils::clip_grad_norm_({a, b, c}, 1.0);
  EXPECT_NEAR(total.item<double>(), std::sqrt(40.0), 1e-5);
  const double coef = 1.0 / (std::sqrt(40.0) + 1e-6);
  EXPECT_NEAR(host(a.grad())[3], 4 * coef, 1e-6);
  EXPECT_NEAR(host(b.grad())[1], 2 * coef, 2 * coef / 128);
  for (double v : host(c.grad())) EXPECT_NEAR(v, coef, 1e-6);
}

TEST(ForeachCpu, UnscaleCheckFindsInfAndNanAndUnscales) {
  for (double bad : {std::numeric_limits<double>::infinity(), std::nan("")}) {
    std::vector<Tensor> ts;
    for (int i = 0; i < 50; ++i) ts.push_back(full({1 + 13 * i}, 8.0));
    ts[36].narrow(0, 5, 1).fill_(bad);
    Tensor found = zeros({1});
    detail::foreach_unscale_check(ts, 0.125, found);
    EXPECT_EQ(found.item<float>(), 1.0f);
    EXPECT_EQ(host(ts[0])[0], 1.0);
    EXPECT_EQ(host(ts[49]).back(), 1.0);
  }
  std::vector<Tensor> ok = {full({3}, 2.0), full({2}, 4.0, TensorOptions(kFloat16))};
  Tensor found = zeros({1});
  detail::foreach_unscale_check(ok, 1.0, found);  // check only
  EXPECT_EQ(found.item<float>(), 0.0f);
  EXPECT_EQ(host(ok[1])[0], 4.0);
}

TEST(ForeachCpu, NormsOfOddSizes) {
  std::vector<Tensor> ts;
  for (auto& s : kShapes) ts.push_back(randn(s, TensorOptions(kFloat64)));
  Tensor n = detail::foreach_norms(ts, 2.0);
  ASSERT_EQ(n.numel(), static_cast<int64_t>(ts.size()));
  for (size_t i = 0; i < ts.size(); ++i) {
    double acc = 0;
    for (double x : host(ts[i])) acc += x * x;
    EXPECT_NEAR(host(n)[i], std::sqrt(acc), 1e-12 * (1 + std::sqrt(acc)));
  }
}

}  // namespace
