// nn::utils: clip_grad_norm_ / clip_grad_value_ against norms computed here in double,
// parameters_to_vector / vector_to_parameters round trips.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kiln/nn/utils.h"
#include "kiln/ops.h"

using namespace kiln;
namespace utils = kiln::nn::utils;

namespace {

std::vector<double> vals(const Tensor& t) {
  Tensor d = t.detach().to(kFloat64).contiguous();
  return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

std::vector<Tensor> params_with_grads(std::vector<std::vector<double>> grads) {
  std::vector<Tensor> ps;
  for (auto& g : grads) {
    Tensor p =
        kiln::zeros({static_cast<int64_t>(g.size())}, TensorOptions(kFloat64)).requires_grad_();
    p.mutable_grad() = kiln::from_vector(g);
    ps.push_back(p);
  }
  return ps;
}

}  // namespace

TEST(ClipGradNorm, ScalesWhenAboveMaxNorm) {
  std::vector<std::vector<double>> g = {{3, -4}, {12}, {0, 0, 1}};
  for (double p : {2.0, 1.0, 3.0, std::numeric_limits<double>::infinity()}) {
    auto ps = params_with_grads(g);
    double total = 0;
    for (auto& v : g)
      for (double x : v)
        total = std::isinf(p) ? std::max(total, std::abs(x)) : total + std::pow(std::abs(x), p);
    if (!std::isinf(p)) total = std::pow(total, 1 / p);
    Tensor n = utils::clip_grad_norm_(ps, 1.0, p);
    EXPECT_NEAR(n.item<double>(), total, 1e-12 * total) << p;
    double coef = 1.0 / (total + 1e-6);
    for (size_t i = 0; i < g.size(); ++i) {
      auto got = vals(ps[i].grad());
      for (size_t j = 0; j < g[i].size(); ++j) EXPECT_NEAR(got[j], g[i][j] * coef, 1e-12);
    }
  }
}

TEST(ClipGradNorm, LeavesSmallGradientsAlone) {
  auto ps = params_with_grads({{0.1, 0.2}});
  Tensor n = utils::clip_grad_norm_(ps, 10.0);
  EXPECT_NEAR(n.item<double>(), std::sqrt(0.05), 1e-15);
  EXPECT_EQ(vals(ps[0].grad()), (std::vector<double>{0.1, 0.2}));
  // Parameters without gradients are skipped; none at all gives 0.
  Tensor bare = kiln::zeros({2}).requires_grad_();
  EXPECT_EQ(utils::clip_grad_norm_({bare}, 1.0).item<double>(), 0.0);
}

TEST(ClipGradNorm, NonFinite) {
  auto ps = params_with_grads({{1.0, NAN}});
  EXPECT_THROW(utils::clip_grad_norm_(ps, 1.0, 2.0, /*error_if_nonfinite=*/true), Error);
  EXPECT_EQ(vals(ps[0].grad())[0], 1.0);  // unchanged on error
  Tensor n = utils::clip_grad_norm_(ps, 1.0);
  EXPECT_TRUE(std::isnan(n.item<double>()));
}

TEST(ClipGradValue, Clamps) {
  auto ps = params_with_grads({{-3, 0.5, 2}});
  utils::clip_grad_value_(ps, 1.0);
  EXPECT_EQ(vals(ps[0].grad()), (std::vector<double>{-1, 0.5, 1}));
}

TEST(ParametersToVector, RoundTrip) {
  Tensor a = kiln::arange(6, TensorOptions(kFloat32)).reshape({2, 3});
  Tensor b = kiln::full({4}, 7.0f);
  Tensor v = utils::parameters_to_vector({a, b});
  EXPECT_EQ(v.dim(), 1);
  EXPECT_EQ(vals(v), (std::vector<double>{0, 1, 2, 3, 4, 5, 7, 7, 7, 7}));
  Tensor w = kiln::arange(10, TensorOptions(kFloat32)).neg();
  utils::vector_to_parameters(w, {a, b});
  EXPECT_EQ(vals(a), (std::vector<double>{0, -1, -2, -3, -4, -5}));
  EXPECT_EQ(vals(b), (std::vector<double>{-6, -7, -8, -9}));
  EXPECT_THROW(utils::vector_to_parameters(kiln::zeros({3}), {a, b}), Error);
}
