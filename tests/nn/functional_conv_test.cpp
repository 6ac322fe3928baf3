// Tests of the kiln::nn::functional convolution/pooling wrappers that the op table does not
// cover directly: transposed convolution as the adjoint of convolution (<conv(x), y> =
// <x, conv_transpose(y)>, 1-D to 3-D), unbatched inputs, 1-D pools against their 2-D forms.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/kiln.h"

namespace kiln {
namespace {

namespace F = kiln::nn::functional;

double inner_sum(const Tensor& a, const Tensor& b) {
  Tensor p = (a.to(kFloat64) * b.to(kFloat64)).sum();
  return p.item<double>();
}
std::vector<double> vals(const Tensor& t) {
  Tensor c = t.to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

TEST(NnFunctionalConv, TransposeIsTheAdjoint) {
  manual_seed(12);
  const TensorOptions o(kFloat64);
  // 3-D: stride 2, padding 1, dilation (1, 2, 1), groups 2.
  {
    Tensor x = randn({2, 4, 5, 7, 6}, o), w = randn({6, 2, 3, 2, 3}, o);
    Tensor y = F::conv3d(x, w, {}, 2, 1, {1, 2, 1}, 2);
    Tensor g = randn(y.sizes(), o);
    // Output size of the transpose must give back x's size: output_padding fills the remainder.
    std::vector<int64_t> opad;
    for (int i = 0; i < 3; ++i) {
      const int64_t k = w.size(2 + i), d = i == 1 ? 2 : 1;
      opad.push_back(x.size(2 + i) - ((y.size(2 + i) - 1) * 2 - 2 + d * (k - 1) + 1));
    }
    Tensor xt = F::conv_transpose3d(g, w, {}, 2, 1, opad, 2, {1, 2, 1});
    ASSERT_EQ(xt.sizes(), x.sizes());
    EXPECT_NEAR(inner_sum(y, g), inner_sum(x, xt), 1e-9 * std::max(1.0, std::abs(inner_sum(y, g))));
  }
  // 1-D and 2-D, stride 1 (the shifted-GEMM kernels) and stride 3.
  for (int64_t s : {1, 3}) {
    Tensor x = randn({3, 2, 11}, o), w = randn({5, 2, 4}, o);
    Tensor y = F::conv1d(x, w, {}, s, 2);
    Tensor g = randn(y.sizes(), o);
    const int64_t op = x.size(2) - ((y.size(2) - 1) * s - 4 + 3 + 1);
    Tensor xt = F::conv_transpose1d(g, w, {}, s, 2, op);
    ASSERT_EQ(xt.sizes(), x.sizes());
    EXPECT_NEAR(inner_sum(y, g), inner_sum(x, xt), 1e-9 * std::max(1.0, std::abs(inner_sum(y, g))));
    Tensor x2 = randn({2, 3, 8, 9}, o), w2 = randn({4, 3, 3, 3}, o);
    Tensor y2 = F::conv2d(x2, w2, {}, s, 1, 2);
    Tensor g2 = randn(y2.sizes(), o);
    std::vector<int64_t> op2;
    for (int i = 0; i < 2; ++i)
      op2.push_back(x2.size(2 + i) - ((y2.size(2 + i) - 1) * s - 2 + 4 + 1));
    Tensor xt2 = F::conv_transpose2d(g2, w2, {}, s, 1, op2, 1, 2);
    EXPECT_NEAR(inner_sum(y2, g2), inner_sum(x2, xt2),
                1e-9 * std::max(1.0, std::abs(inner_sum(y2, g2))));
  }
}

TEST(NnFunctionalConv, UnbatchedAndDtypes) {
  manual_seed(13);
  Tensor x = randn({3, 6, 7}), w = randn({2, 3, 3, 3}), b = randn({2});
  EXPECT_EQ(vals(F::conv2d(x, w, b, 1, 1)), vals(F::conv2d(x.unsqueeze(0), w, b, 1, 1).squeeze(0)));
  // float16 / bfloat16 run through float32 and round once.
  for (DType dt : {kFloat16, kBFloat16}) {
    Tensor xr = x.to(dt), wr = w.to(dt), br = b.to(dt);
    Tensor y = F::conv2d(xr, wr, br, 1, 1);
    EXPECT_EQ(y.dtype(), dt);
    std::vector<double>
        got = vals(y),
        ref = vals(F::conv2d(xr.to(kFloat32), wr.to(kFloat32), br.to(kFloat32), 1, 1).to(dt));
    EXPECT_EQ(got, ref);
  }
}

TEST(NnFunctionalPool, OneDWrappersMatchTwoD) {
  manual_seed(14);
  Tensor x = randn({2, 3, 13});
  Tensor x4 = x.unsqueeze(2);
  EXPECT_EQ(vals(F::avg_pool1d(x, {4}, {3}, {1}, true, false)),
            vals(F::avg_pool2d(x4, {1, 4}, {1, 3}, {0, 1}, true, false).squeeze(2)));
  EXPECT_EQ(vals(F::adaptive_avg_pool1d(x, {5})),
            vals(F::adaptive_avg_pool2d(x4, {1, 5}).squeeze(2)));
  EXPECT_EQ(vals(F::adaptive_max_pool1d(x, {4})),
            vals(F::adaptive_max_pool2d(x4, {1, 4}).squeeze(2)));
  auto [v1, i1] = F::max_pool1d_with_indices(x, {3}, {2}, {1}, {2}, true);
  auto [v2, i2] = F::max_pool2d_with_indices(x4, {1, 3}, {1, 2}, {0, 1}, {1, 2}, true);
  EXPECT_EQ(vals(v1), vals(v2.squeeze(2)));
  EXPECT_EQ(vals(i1), vals(i2.squeeze(2)));
  // lp_pool1d with p = 1 on non-negative input is the window sum.
  Tensor a = kiln::abs(x);
  std::vector<double> lp = vals(F::lp_pool1d(a, 1.0, {3})), av = vals(F::avg_pool1d(a, {3}));
  for (size_t i = 0; i < lp.size(); ++i) EXPECT_NEAR(lp[i], 3 * av[i], 1e-5);
  EXPECT_THROW(F::max_pool1d(x, {3, 3}), Error);
}

}  // namespace
}  // namespace kiln
