// Layers: forwards against double-precision loops written here, default initializations,
// train/eval behaviour, running statistics, and PyTorch's printed form.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

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

std::string str(const Module& m) {
  std::ostringstream os;
  os << m;
  return os.str();
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::abs(want[i]))) << "element " << i;
}

}  // namespace

TEST(Layers, LinearForwardInitAndPrint) {
  Linear lin(5, 3);
  auto w = vals(lin->weight), b = vals(lin->bias);
  const double bound = 1 / std::sqrt(5.0);
  for (double v : w) EXPECT_LE(std::abs(v), bound);
  for (double v : b) EXPECT_LE(std::abs(v), bound);
  Tensor x = kiln::randn({4, 5});
  auto xv = vals(x);
  std::vector<double> want(12);
  for (int n = 0; n < 4; ++n)
    for (int o = 0; o < 3; ++o) {
      double s = b[o];
      for (int i = 0; i < 5; ++i) s += xv[n * 5 + i] * w[o * 5 + i];
      want[n * 3 + o] = s;
    }
  expect_near(vals(lin(x)), want, 1e-5);
  EXPECT_EQ(str(*lin), "Linear(in_features=5, out_features=3, bias=True)");
  Linear nob(2, 2, false);
  EXPECT_FALSE(nob->bias.defined());
  EXPECT_EQ(nob->parameters().size(), 1u);
  EXPECT_EQ(str(*nob), "Linear(in_features=2, out_features=2, bias=False)");
}

TEST(Layers, SequentialPrintsLikePyTorch) {
  Sequential net(Linear(2, 8), ReLU(), Dropout(0.1), Linear(8, 1), GELU(), LayerNorm({1}));
  EXPECT_EQ(str(*net),
            "Sequential(\n"
            "  (0): Linear(in_features=2, out_features=8, bias=True)\n"
            "  (1): ReLU()\n"
            "  (2): Dropout(p=0.1, inplace=False)\n"
            "  (3): Linear(in_features=8, out_features=1, bias=True)\n"
            "  (4): GELU(approximate='none')\n"
            "  (5): LayerNorm((1,), eps=1e-05, elementwise_affine=True)\n"
            ")");
  EXPECT_EQ(net(kiln::randn({3, 2})).size(1), 1);
}

TEST(Layers, EmbeddingLookupAndPadding) {
  Embedding emb(10, 4, /*padding_idx=*/-1);
  EXPECT_EQ(*emb->padding_idx, 9);
  for (double v : vals(emb->weight.select(0, 9))) EXPECT_EQ(v, 0.0);
  Tensor idx = kiln::tensor({{1, 9}, {3, 1}});
  Tensor out = emb(idx);
  ASSERT_EQ(out.sizes(), (std::vector<int64_t>{2, 2, 4}));
  EXPECT_EQ(vals(out.select(0, 0).select(0, 0)), vals(emb->weight.select(0, 1)));
  EXPECT_EQ(vals(out.select(0, 1).select(0, 0)), vals(emb->weight.select(0, 3)));
  EXPECT_EQ(str(*emb), "Embedding(10, 4, padding_idx=9)");
  // Default init N(0, 1).
  Embedding big(1000, 100);
  auto v = vals(big->weight);
  double mean = 0, var = 0;
  for (double x : v) mean += x;
  mean /= v.size();
  for (double x : v) var += (x - mean) * (x - mean);
  var /= v.size() - 1;
  EXPECT_NEAR(mean, 0, 0.01);
  EXPECT_NEAR(var, 1, 0.02);
}

TEST(Layers, LayerNormMatchesReference) {
  LayerNorm ln(std::vector<int64_t>{6});
  {
    NoGradGuard ng;
    ln->weight.copy_(kiln::arange(6, TensorOptions(kFloat32)).mul(0.5).add(0.25));
    ln->bias.copy_(kiln::arange(6, TensorOptions(kFloat32)).mul(-0.1));
  }
  Tensor x = kiln::randn({3, 6});
  auto xv = vals(x), w = vals(ln->weight), b = vals(ln->bias);
  std::vector<double> want(18);
  for (int r = 0; r < 3; ++r) {
    double m = 0, var = 0;
    for (int i = 0; i < 6; ++i) m += xv[r * 6 + i] / 6;
    for (int i = 0; i < 6; ++i) var += (xv[r * 6 + i] - m) * (xv[r * 6 + i] - m) / 6;
    for (int i = 0; i < 6; ++i)
      want[r * 6 + i] = (xv[r * 6 + i] - m) / std::sqrt(var + 1e-5) * w[i] + b[i];
  }
  expect_near(vals(ln(x)), want, 1e-5);
}

TEST(Layers, DropoutTrainAndEval) {
  Dropout drop(0.25);
  Tensor x = kiln::ones({100000});
  drop->eval();
  EXPECT_TRUE(drop(x).equal(x));
  drop->train();
  auto v = vals(drop(x));
  int64_t zeros = 0;
  for (double e : v) {
    if (e == 0) {
      ++zeros;
    } else {
      EXPECT_NEAR(e, 1 / 0.75, 1e-6);
    }
  }
  EXPECT_NEAR(static_cast<double>(zeros) / v.size(), 0.25, 0.01);
  EXPECT_THROW(Dropout(1.5), Error);
}

TEST(Layers, Activations) {
  Tensor x = kiln::linspace(-4, 4, 41, TensorOptions(kFloat64));
  auto xv = vals(x);
  auto check = [&](auto module, auto f) {
    auto got = vals(module(x));
    std::vector<double> want;
    for (double v : xv) want.push_back(f(v));
    expect_near(got, want, 1e-10);
  };
  check(ReLU(), [](double v) { return std::max(v, 0.0); });
  check(LeakyReLU(0.2), [](double v) { return v > 0 ? v : 0.2 * v; });
  check(GELU(), [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); });
  check(Sigmoid(), [](double v) { return 1 / (1 + std::exp(-v)); });
  check(Tanh(), [](double v) { return std::tanh(v); });
  check(SiLU(), [](double v) { return v / (1 + std::exp(-v)); });
  check(ELU(0.5), [](double v) { return v > 0 ? v : 0.5 * (std::exp(v) - 1); });
  check(Softplus(), [](double v) { return std::log1p(std::exp(v)); });
  check(Hardtanh(-2, 2), [](double v) { return std::min(2.0, std::max(-2.0, v)); });
  PReLU pr;
  check(pr, [](double v) { return v > 0 ? v : 0.25 * v; });
  EXPECT_EQ(str(*LeakyReLU(0.2)), "LeakyReLU(negative_slope=0.2)");
  EXPECT_EQ(str(*ReLU(true)), "ReLU(inplace=True)");
}

TEST(Layers, SoftmaxModules) {
  Tensor x = kiln::randn({3, 5}, TensorOptions(kFloat64));
  auto xv = vals(x);
  Softmax sm(1);
  LogSoftmax lsm(1);
  auto p = vals(sm(x)), lp = vals(lsm(x));
  for (int r = 0; r < 3; ++r) {
    double z = 0;
    for (int c = 0; c < 5; ++c) z += std::exp(xv[r * 5 + c]);
    for (int c = 0; c < 5; ++c) {
      EXPECT_NEAR(p[r * 5 + c], std::exp(xv[r * 5 + c]) / z, 1e-12);
      EXPECT_NEAR(lp[r * 5 + c], xv[r * 5 + c] - std::log(z), 1e-12);
    }
  }
  EXPECT_THROW(Softmax()(x), Error);
  EXPECT_EQ(str(*sm), "Softmax(dim=1)");
}

namespace {

// Multi-head attention on unbatched [L, E] inputs in double.
std::vector<double> mha_reference(const std::vector<double>& q_in, const std::vector<double>& kv_in,
                                  int64_t L, int64_t S, int64_t E, int64_t H,
                                  const std::vector<double>& W, const std::vector<double>& B,
                                  const std::vector<double>& Wo, const std::vector<double>& Bo,
                                  bool causal) {
  auto proj = [&](const std::vector<double>& x, int64_t n, int64_t part) {
    std::vector<double> y(n * E);
    for (int64_t t = 0; t < n; ++t)
      for (int64_t o = 0; o < E; ++o) {
        double s = B[part * E + o];
        for (int64_t i = 0; i < E; ++i) s += x[t * E + i] * W[(part * E + o) * E + i];
        y[t * E + o] = s;
      }
    return y;
  };
  auto q = proj(q_in, L, 0), k = proj(kv_in, S, 1), v = proj(kv_in, S, 2);
  const int64_t D = E / H;
  std::vector<double> ctx(L * E, 0);
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < L; ++i) {
      std::vector<double> sc(S);
      double mx = -INFINITY;
      for (int64_t j = 0; j < S; ++j) {
        double s = 0;
        for (int64_t d = 0; d < D; ++d) s += q[i * E + h * D + d] * k[j * E + h * D + d];
        sc[j] = (causal && j > i) ? -INFINITY : s / std::sqrt(static_cast<double>(D));
        mx = std::max(mx, sc[j]);
      }
      double z = 0;
      for (auto& s : sc) z += (s = std::exp(s - mx));
      for (int64_t j = 0; j < S; ++j)
        for (int64_t d = 0; d < D; ++d) ctx[i * E + h * D + d] += sc[j] / z * v[j * E + h * D + d];
    }
  std::vector<double> out(L * E);
  for (int64_t t = 0; t < L; ++t)
    for (int64_t o = 0; o < E; ++o) {
      double s = Bo[o];
      for (int64_t i = 0; i < E; ++i) s += ctx[t * E + i] * Wo[o * E + i];
      out[t * E + o] = s;
    }
  return out;
}

}  // namespace

TEST(Layers, MultiheadAttentionMatchesReference) {
  const int64_t L = 5, S = 4, E = 8, H = 2;
  MultiheadAttention mha(E, H);
  {
    NoGradGuard ng;
    mha->in_proj_bias.normal_(0, 0.1);
    mha->out_proj->bias.normal_(0, 0.1);
  }
  mha->to(kFloat64);
  Tensor q = kiln::randn({L, E}, TensorOptions(kFloat64));
  Tensor kv = kiln::randn({S, E}, TensorOptions(kFloat64));
  auto [out, w] = mha(q, kv, kv);
  auto want = mha_reference(vals(q), vals(kv), L, S, E, H, vals(mha->in_proj_weight),
                            vals(mha->in_proj_bias), vals(mha->out_proj->weight),
                            vals(mha->out_proj->bias), false);
  expect_near(vals(out), want, 1e-10);
  EXPECT_EQ(w.sizes(), (std::vector<int64_t>{L, S}));
  // Batched, batch_first, causal self-attention: each batch row equals the unbatched result.
  MultiheadAttention bf(E, H, 0.0, true, /*batch_first=*/true);
  bf->to(kFloat64);
  Tensor x = kiln::randn({2, L, E}, TensorOptions(kFloat64));
  Tensor mask = kiln::nn::TransformerImpl::generate_square_subsequent_mask(L, kFloat64);
  Tensor y = std::get<0>(bf(x, x, x, Tensor(), false, mask));
  ASSERT_EQ(y.sizes(), (std::vector<int64_t>{2, L, E}));
  for (int64_t n = 0; n < 2; ++n) {
    auto xn = vals(x.select(0, n));
    auto ref = mha_reference(xn, xn, L, L, E, H, vals(bf->in_proj_weight), vals(bf->in_proj_bias),
                             vals(bf->out_proj->weight), vals(bf->out_proj->bias), true);
    expect_near(vals(y.select(0, n)), ref, 1e-10);
  }
  EXPECT_EQ(str(*mha),
            "MultiheadAttention(\n  (out_proj): NonDynamicallyQuantizableLinear(in_features=8, "
            "out_features=8, bias=True)\n)");
  EXPECT_THROW(MultiheadAttention(10, 3), Error);
}

TEST(Layers, TransformerEncoderLayerWiring) {
  TransformerLayerOptions o;
  o.d_model = 8;
  o.nhead = 2;
  o.dim_feedforward = 16;
  o.dropout = 0.0;
  for (bool norm_first : {false, true}) {
    o.norm_first = norm_first;
    TransformerEncoderLayer layer(o);
    layer->to(kFloat64);
    Tensor x = kiln::randn({5, 2, 8}, TensorOptions(kFloat64));
    Tensor y = layer(x);
    // The same computation spelled out with the submodules.
    auto sa = [&](const Tensor& t) { return std::get<0>(layer->self_attn->forward(t, t, t)); };
    auto ff = [&](const Tensor& t) {
      return layer->linear2->forward(layer->linear1->forward(t).relu());
    };
    Tensor want;
    if (norm_first) {
      Tensor h = x.add(sa(layer->norm1->forward(x)));
      want = h.add(ff(layer->norm2->forward(h)));
    } else {
      Tensor h = layer->norm1->forward(x.add(sa(x)));
      want = layer->norm2->forward(h.add(ff(h)));
    }
    expect_near(vals(y), vals(want), 1e-12);
  }
  EXPECT_EQ(TransformerEncoderLayer(o)->named_children().keys(),
            (std::vector<std::string>{"self_attn", "linear1", "dropout", "linear2", "norm1",
                                      "norm2", "dropout1", "dropout2"}));
  TransformerEncoder enc(o, 3, true);
  EXPECT_EQ(enc->layers->size(), 3u);
  EXPECT_EQ(enc(kiln::randn({4, 1, 8})).sizes(), (std::vector<int64_t>{4, 1, 8}));
}

TEST(Layers, Conv2dMatchesReference) {
  Conv2d conv(2, 3, {3, 2}, /*stride=*/{2, 1}, /*padding=*/1);
  conv->to(kFloat64);
  Tensor x = kiln::randn({1, 2, 5, 4}, TensorOptions(kFloat64));
  Tensor y = conv(x);
  const int64_t Ho = (5 + 2 - 3) / 2 + 1, Wo = (4 + 2 - 2) / 1 + 1;
  ASSERT_EQ(y.sizes(), (std::vector<int64_t>{1, 3, Ho, Wo}));
  auto xv = vals(x), w = vals(conv->weight), b = vals(conv->bias), got = vals(y);
  for (int64_t o = 0; o < 3; ++o)
    for (int64_t i = 0; i < Ho; ++i)
      for (int64_t j = 0; j < Wo; ++j) {
        double s = b[o];
        for (int64_t c = 0; c < 2; ++c)
          for (int64_t ki = 0; ki < 3; ++ki)
            for (int64_t kj = 0; kj < 2; ++kj) {
              int64_t r = i * 2 - 1 + ki, q = j - 1 + kj;
              if (r < 0 || r >= 5 || q < 0 || q >= 4) continue;
              s += xv[(c * 5 + r) * 4 + q] * w[((o * 2 + c) * 3 + ki) * 2 + kj];
            }
        EXPECT_NEAR(got[(o * Ho + i) * Wo + j], s, 1e-10);
      }
  EXPECT_EQ(str(*conv), "Conv2d(2, 3, kernel_size=(3, 2), stride=(2, 1), padding=(1, 1))");
  // Default init bound 1 / sqrt(fan_in), fan_in = 2 * 3 * 2.
  Conv2d c2(2, 3, {3, 2});
  for (double v : vals(c2->weight)) EXPECT_LE(std::abs(v), 1 / std::sqrt(12.0));
  EXPECT_THROW(Conv2d(3, 4, 3, 1, 0, 1, /*groups=*/2), Error);
}

TEST(Layers, BatchNormRunningStatistics) {
  BatchNorm1d bn(3);
  Tensor x = kiln::randn({8, 3}, TensorOptions(kFloat32)).mul(2).add(1);
  auto xv = vals(x);
  Tensor y = bn(x);
  auto got = vals(y), rm = vals(bn->running_mean), rv = vals(bn->running_var);
  for (int c = 0; c < 3; ++c) {
    double m = 0, v = 0;
    for (int n = 0; n < 8; ++n) m += xv[n * 3 + c] / 8;
    for (int n = 0; n < 8; ++n) v += (xv[n * 3 + c] - m) * (xv[n * 3 + c] - m);
    for (int n = 0; n < 8; ++n)
      EXPECT_NEAR(got[n * 3 + c], (xv[n * 3 + c] - m) / std::sqrt(v / 8 + 1e-5), 1e-4);
    EXPECT_NEAR(rm[c], 0.1 * m, 1e-5);
    EXPECT_NEAR(rv[c], 0.9 + 0.1 * v / 7, 1e-5);
  }
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
  bn->eval();
  auto ev = vals(bn(x));
  for (int n = 0; n < 8; ++n)
    for (int c = 0; c < 3; ++c)
      EXPECT_NEAR(ev[n * 3 + c], (xv[n * 3 + c] - rm[c]) / std::sqrt(rv[c] + 1e-5), 1e-4);
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
  EXPECT_EQ(str(*bn),
            "BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, "
            "track_running_stats=True)");
  EXPECT_THROW(bn(kiln::randn({2, 3, 4, 5})), Error);
  EXPECT_EQ(bn->state_dict().keys(),
            (std::vector<std::string>{"weight", "bias", "running_mean", "running_var",
                                      "num_batches_tracked"}));
}

TEST(Layers, LossModules) {
  Tensor a = kiln::randn({4, 3}, TensorOptions(kFloat64));
  Tensor b = kiln::randn({4, 3}, TensorOptions(kFloat64));
  auto av = vals(a), bv = vals(b);
  double mse = 0;
  for (size_t i = 0; i < av.size(); ++i) mse += (av[i] - bv[i]) * (av[i] - bv[i]) / av.size();
  EXPECT_NEAR(MSELoss()(a, b).item<double>(), mse, 1e-12);
  Tensor target = kiln::tensor({0, 2, 1, 2});
  double ce = 0;
  const int64_t t[] = {0, 2, 1, 2};
  for (int r = 0; r < 4; ++r) {
    double z = 0;
    for (int c = 0; c < 3; ++c) z += std::exp(av[r * 3 + c]);
    ce += (std::log(z) - av[r * 3 + t[r]]) / 4;
  }
  EXPECT_NEAR(CrossEntropyLoss()(a, target).item<double>(), ce, 1e-12);
}

TEST(Layers, FlattenUnflattenIdentity) {
  Tensor x = kiln::randn({2, 3, 4});
  EXPECT_EQ(Flatten()(x).sizes(), (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(Unflatten(1, std::vector<int64_t>{6, 2})(Flatten()(x)).sizes(),
            (std::vector<int64_t>{2, 6, 2}));
  EXPECT_TRUE(Identity()(x).is_same(x));
}

TEST(Layers, BilinearMatchesReference) {
  Bilinear bl(2, 3, 2);
  bl->to(kFloat64);
  Tensor x1 = kiln::randn({4, 2}, TensorOptions(kFloat64));
  Tensor x2 = kiln::randn({4, 3}, TensorOptions(kFloat64));
  auto a = vals(x1), c = vals(x2), w = vals(bl->weight), b = vals(bl->bias);
  std::vector<double> want;
  for (int n = 0; n < 4; ++n)
    for (int o = 0; o < 2; ++o) {
      double s = b[o];
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j) s += a[n * 2 + i] * w[(o * 2 + i) * 3 + j] * c[n * 3 + j];
      want.push_back(s);
    }
  expect_near(vals(bl(x1, x2)), want, 1e-12);
  for (double v : w) EXPECT_LE(std::abs(v), 1 / std::sqrt(2.0));
}

TEST(Layers, PoolingModules) {
  Tensor x = kiln::randn({1, 2, 4, 6}, TensorOptions(kFloat64));
  auto xv = vals(x);
  MaxPool2d mp(2);
  AvgPool2d ap(IntList{2, 3});
  auto m = vals(mp(x)), a = vals(ap(x));
  ASSERT_EQ(m.size(), 2u * 2 * 3);
  ASSERT_EQ(a.size(), 2u * 2 * 2);
  for (int c = 0; c < 2; ++c)
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 3; ++j) {
        double mx = -INFINITY;
        for (int di = 0; di < 2; ++di)
          for (int dj = 0; dj < 2; ++dj)
            mx = std::max(mx, xv[(c * 4 + 2 * i + di) * 6 + 2 * j + dj]);
        EXPECT_EQ(m[(c * 2 + i) * 3 + j], mx);
      }
      for (int j = 0; j < 2; ++j) {
        double s = 0;
        for (int di = 0; di < 2; ++di)
          for (int dj = 0; dj < 3; ++dj) s += xv[(c * 4 + 2 * i + di) * 6 + 3 * j + dj];
        EXPECT_NEAR(a[(c * 2 + i) * 2 + j], s / 6, 1e-12);
      }
    }
  EXPECT_EQ(str(*mp), "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)");
  EXPECT_EQ(str(*ap), "AvgPool2d(kernel_size=(2, 3), stride=(2, 3), padding=0)");
  AdaptiveAvgPool2d gap(1);
  auto g = vals(gap(x));
  for (int c = 0; c < 2; ++c) {
    double s = 0;
    for (int k = 0; k < 24; ++k) s += xv[c * 24 + k];
    EXPECT_NEAR(g[c], s / 24, 1e-12);
  }
}

TEST(Layers, ConvTransposeShapeAndGroupNorm) {
  ConvTranspose1d ct(2, 4, 3, /*stride=*/2, /*padding=*/1, /*output_padding=*/1);
  EXPECT_EQ(ct->weight.sizes(), (std::vector<int64_t>{2, 4, 3}));
  // (L - 1) * stride - 2 * padding + (k - 1) + output_padding + 1
  EXPECT_EQ(ct(kiln::randn({1, 2, 5})).size(2), (5 - 1) * 2 - 2 + 2 + 1 + 1);
  GroupNorm gn(2, 4);
  Tensor x = kiln::randn({2, 4, 3}, TensorOptions(kFloat64));
  gn->to(kFloat64);
  auto xv = vals(x), y = vals(gn(x));
  for (int n = 0; n < 2; ++n)
    for (int g = 0; g < 2; ++g) {
      double m = 0, v = 0;
      for (int k = 0; k < 6; ++k) m += xv[n * 12 + g * 6 + k] / 6;
      for (int k = 0; k < 6; ++k) v += std::pow(xv[n * 12 + g * 6 + k] - m, 2) / 6;
      for (int k = 0; k < 6; ++k)
        EXPECT_NEAR(y[n * 12 + g * 6 + k], (xv[n * 12 + g * 6 + k] - m) / std::sqrt(v + 1e-5),
                    1e-10);
    }
  EXPECT_THROW(GroupNorm(3, 4), Error);
}
