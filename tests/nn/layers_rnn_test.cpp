// RNN, LSTM, GRU against a double-precision implementation of the cell equations written here
// (multi-layer, bidirectional, batch_first, initial states).
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/nn/modules/rnn.h"
#include "kiln/ops.h"

using namespace kiln;
using namespace kiln::nn;

namespace {

using Vec = std::vector<double>;

Vec vals(const Tensor& t) {
  Tensor d = t.detach().to(kFloat64).contiguous();
  return Vec(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

double sig(double x) { return 1 / (1 + std::exp(-x)); }

// y = W x + b for W [rows, cols] row-major.
Vec affine(const Vec& W, const Vec& b, const Vec& x, int64_t rows) {
  const int64_t cols = static_cast<int64_t>(x.size());
  Vec y(rows);
  for (int64_t r = 0; r < rows; ++r) {
    double s = b.empty() ? 0 : b[r];
    for (int64_t c = 0; c < cols; ++c) s += W[r * cols + c] * x[c];
    y[r] = s;
  }
  return y;
}

// Reference for inputs [L, N, in] (seq-first); returns output [L][N][D*H] flattened, h_n, c_n.
struct RefOut {
  Vec out, hn, cn;
};

RefOut reference(RNNBase& m, int mode /*0 tanh, 1 lstm, 2 gru*/, const Vec& x, int64_t L, int64_t N,
                 const Vec& h0, const Vec& c0) {
  const auto& o = m.options;
  const int64_t H = o.hidden_size, D = o.bidirectional ? 2 : 1;
  const int64_t G = mode == 1 ? 4 : mode == 2 ? 3 : 1;
  std::vector<Vec> layer_in(L * N);  // per (t, n)
  for (int64_t t = 0; t < L; ++t)
    for (int64_t n = 0; n < N; ++n)
      layer_in[t * N + n] =
          Vec(x.begin() + (t * N + n) * o.input_size, x.begin() + (t * N + n + 1) * o.input_size);
  RefOut r;
  r.hn.assign(o.num_layers * D * N * H, 0);
  r.cn.assign(o.num_layers * D * N * H, 0);
  for (int64_t layer = 0; layer < o.num_layers; ++layer) {
    std::vector<Vec> next(L * N, Vec(D * H));
    for (int64_t d = 0; d < D; ++d) {
      const auto& w = m.all_weights[layer * D + d];
      Vec wih = vals(w[0]), whh = vals(w[1]), bih = vals(w[2]), bhh = vals(w[3]);
      for (int64_t n = 0; n < N; ++n) {
        const int64_t idx = ((layer * D + d) * N + n) * H;
        Vec h(h0.begin() + idx, h0.begin() + idx + H), c(c0.begin() + idx, c0.begin() + idx + H);
        for (int64_t s = 0; s < L; ++s) {
          const int64_t t = d ? L - 1 - s : s;
          Vec gi = affine(wih, bih, layer_in[t * N + n], G * H);
          Vec gh = affine(whh, bhh, h, G * H);
          Vec hn(H);
          for (int64_t k = 0; k < H; ++k) {
            if (mode == 0) {
              hn[k] = std::tanh(gi[k] + gh[k]);
            } else if (mode == 1) {
              double i = sig(gi[k] + gh[k]), f = sig(gi[H + k] + gh[H + k]);
              double g = std::tanh(gi[2 * H + k] + gh[2 * H + k]);
              double og = sig(gi[3 * H + k] + gh[3 * H + k]);
              c[k] = f * c[k] + i * g;
              hn[k] = og * std::tanh(c[k]);
            } else {
              double rr = sig(gi[k] + gh[k]), z = sig(gi[H + k] + gh[H + k]);
              double nn = std::tanh(gi[2 * H + k] + rr * gh[2 * H + k]);
              hn[k] = (1 - z) * nn + z * h[k];
            }
          }
          h = hn;
          for (int64_t k = 0; k < H; ++k) next[t * N + n][d * H + k] = h[k];
        }
        for (int64_t k = 0; k < H; ++k) {
          r.hn[idx + k] = h[k];
          r.cn[idx + k] = c[k];
        }
      }
    }
    layer_in = next;
  }
  for (auto& v : layer_in) r.out.insert(r.out.end(), v.begin(), v.end());
  return r;
}

void expect_near(const Vec& a, const Vec& b, double tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], tol) << i;
}

}  // namespace

TEST(LayersRNN, AllKindsMatchReference) {
  for (int mode = 0; mode < 3; ++mode) {
    RNNOptions o;
    o.input_size = 3;
    o.hidden_size = 4;
    o.num_layers = 2;
    o.bidirectional = true;
    std::shared_ptr<RNNBase> m;
    if (mode == 0) m = std::make_shared<RNNImpl>(o);
    if (mode == 1) m = std::make_shared<LSTMImpl>(o);
    if (mode == 2) m = std::make_shared<GRUImpl>(o);
    m->to(kFloat64);
    const int64_t L = 5, N = 2;
    Tensor x = kiln::randn({L, N, 3}, TensorOptions(kFloat64));
    Tensor h0 = kiln::randn({4, N, 4}, TensorOptions(kFloat64));
    Tensor c0 = kiln::randn({4, N, 4}, TensorOptions(kFloat64));
    Tensor out, hn, cn;
    if (mode == 0) std::tie(out, hn) = std::static_pointer_cast<RNNImpl>(m)->forward(x, h0);
    if (mode == 2) std::tie(out, hn) = std::static_pointer_cast<GRUImpl>(m)->forward(x, h0);
    if (mode == 1) {
      auto r = std::static_pointer_cast<LSTMImpl>(m)->forward(x, h0, c0);
      out = std::get<0>(r);
      std::tie(hn, cn) = std::get<1>(r);
    }
    ASSERT_EQ(out.sizes(), (std::vector<int64_t>{L, N, 8}));
    auto ref = reference(*m, mode, vals(x), L, N, vals(h0), mode == 1 ? vals(c0) : Vec(4 * N * 4));
    expect_near(vals(out), ref.out, 1e-12);
    expect_near(vals(hn), ref.hn, 1e-12);
    if (mode == 1) expect_near(vals(cn), ref.cn, 1e-12);
  }
}

TEST(LayersRNN, BatchFirstUnbatchedAndNames) {
  RNNOptions o;
  o.input_size = 2;
  o.hidden_size = 3;
  o.batch_first = true;
  LSTM lstm(o);
  lstm->to(kFloat64);
  Tensor x = kiln::randn({2, 4, 2}, TensorOptions(kFloat64));  // [N, L, in]
  Tensor y = std::get<0>(lstm(x));
  ASSERT_EQ(y.sizes(), (std::vector<int64_t>{2, 4, 3}));
  // Each batch row equals the unbatched run of that sequence.
  for (int64_t n = 0; n < 2; ++n) {
    Tensor yn = std::get<0>(lstm(x.select(0, n)));
    expect_near(vals(yn), vals(y.select(0, n)), 1e-12);
  }
  EXPECT_EQ(lstm->named_parameters().keys(),
            (std::vector<std::string>{"weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"}));
  EXPECT_EQ(lstm->all_weights.size(), 1u);
  const double k = 1 / std::sqrt(3.0);
  for (auto& p : lstm->parameters())
    for (double v : vals(p)) EXPECT_LE(std::abs(v), k);
  EXPECT_THROW(lstm(kiln::randn({2, 4, 5})), Error);
}
