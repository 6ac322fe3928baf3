// RNN, LSTM, GRU: a time loop per layer and direction over kiln ops (autograd flows through).
#include "kiln/nn/modules/rnn.h"

#include <cmath>

#include "kiln/nn/functional.h"
#include "kiln/nn/init.h"
#include "kiln/ops/factories.h"
#include "kiln/ops/shape.h"
#include "nn/modules/repr.h"

namespace kiln::nn {

namespace F = functional;

namespace {
int64_t gates(RNNBase::Mode m) {
  return m == RNNBase::Mode::LSTM ? 4 : m == RNNBase::Mode::GRU ? 3 : 1;
}
}  // namespace

RNNBase::RNNBase(std::string name, Mode mode, RNNOptions o)
    : Module(std::move(name)), options(std::move(o)), mode_(mode) {
  const auto& op = options;
  KILN_CHECK(op.input_size > 0 && op.hidden_size > 0 && op.num_layers > 0, "[", this->name(),
             "] input_size, hidden_size and num_layers must be positive");
  KILN_CHECK(op.dropout >= 0 && op.dropout <= 1, "[", this->name(),
             "] dropout should be a number in range [0, 1]");
  const int64_t D = op.bidirectional ? 2 : 1, G = gates(mode) * op.hidden_size;
  for (int64_t layer = 0; layer < op.num_layers; ++layer) {
    for (int64_t d = 0; d < D; ++d) {
      const std::string sfx = "_l" + std::to_string(layer) + (d ? "_reverse" : "");
      const int64_t in = layer == 0 ? op.input_size : op.hidden_size * D;
      std::vector<Tensor> w;
      w.push_back(register_parameter("weight_ih" + sfx, kiln::empty({G, in})));
      w.push_back(register_parameter("weight_hh" + sfx, kiln::empty({G, op.hidden_size})));
      w.push_back(register_parameter("bias_ih" + sfx, op.bias ? kiln::empty({G}) : Tensor()));
      w.push_back(register_parameter("bias_hh" + sfx, op.bias ? kiln::empty({G}) : Tensor()));
      all_weights.push_back(std::move(w));
    }
  }
  reset_parameters();
}

void RNNBase::reset_parameters() {
  const double k = 1 / std::sqrt(static_cast<double>(options.hidden_size));
  for (auto& w : all_weights)
    for (auto& t : w)
      if (t.defined()) init::uniform_(t, -k, k);
}

std::string RNNBase::extra_repr() const {
  std::string s = std::to_string(options.input_size) + ", " + std::to_string(options.hidden_size);
  if (options.num_layers != 1) s += ", num_layers=" + std::to_string(options.num_layers);
  if (!options.bias) s += ", bias=False";
  if (options.batch_first) s += ", batch_first=True";
  if (options.dropout != 0) s += ", dropout=" + repr::py_float(options.dropout);
  if (options.bidirectional) s += ", bidirectional=True";
  return s;
}

std::tuple<Tensor, Tensor, Tensor> RNNBase::run(const Tensor& input_in, const Tensor& h0_in,
                                                const Tensor& c0_in) {
  const auto& op = options;
  KILN_CHECK(input_in.dim() == 2 || input_in.dim() == 3, "[", name(),
             "] expected a 2-D (unbatched) or 3-D input, got ", input_in.dim(), "-D");
  const bool batched = input_in.dim() == 3;
  Tensor x = batched ? (op.batch_first ? input_in.transpose(0, 1) : input_in)
                     : input_in.unsqueeze(1);  // [L, N, in]
  KILN_CHECK(x.size(2) == op.input_size, "[", name(),
             "] input.size(-1) must be equal to "
             "input_size. Expected ",
             op.input_size, ", got ", x.size(2));
  const int64_t L = x.size(0), N = x.size(1), H = op.hidden_size;
  const int64_t D = op.bidirectional ? 2 : 1;
  auto initial = [&](const Tensor& t, const char* what) {
    if (!t.defined()) return kiln::zeros({op.num_layers * D, N, H}, x.options());
    Tensor s = batched ? t : t.unsqueeze(1);
    KILN_CHECK(s.dim() == 3 && s.size(0) == op.num_layers * D && s.size(1) == N && s.size(2) == H,
               "[", name(), "] expected ", what, " of size [", op.num_layers * D, ", ", N, ", ", H,
               "]");
    return s;
  };
  Tensor h0 = initial(h0_in, "hidden state");
  Tensor c0 = mode_ == Mode::LSTM ? initial(c0_in, "cell state") : Tensor();
  std::vector<Tensor> hn, cn;
  Tensor layer_in = x;
  for (int64_t layer = 0; layer < op.num_layers; ++layer) {
    std::vector<Tensor> dir_out;
    for (int64_t d = 0; d < D; ++d) {
      const auto& w = all_weights[static_cast<size_t>(layer * D + d)];
      Tensor xw = F::linear(layer_in, w[0], w[2]);  // [L, N, G*H]
      Tensor h = h0.select(0, layer * D + d);
      Tensor c = c0.defined() ? c0.select(0, layer * D + d) : Tensor();
      std::vector<Tensor> outs(static_cast<size_t>(L));
      for (int64_t s = 0; s < L; ++s) {
        const int64_t t = d ? L - 1 - s : s;
        Tensor gi = xw.select(0, t);
        Tensor gh = F::linear(h, w[1], w[3]);
        switch (mode_) {
          case Mode::RNN_TANH:
            h = gi.add(gh).tanh();
            break;
          case Mode::RNN_RELU:
            h = gi.add(gh).relu();
            break;
          case Mode::LSTM: {
            auto g = kiln::chunk(gi.add(gh), 4, 1);
            Tensor i = g[0].sigmoid(), f = g[1].sigmoid(), gg = g[2].tanh(), o = g[3].sigmoid();
            c = f.mul(c).add(i.mul(gg));
            h = o.mul(c.tanh());
            break;
          }
          case Mode::GRU: {
            auto a = kiln::chunk(gi, 3, 1), b = kiln::chunk(gh, 3, 1);
            Tensor r = a[0].add(b[0]).sigmoid(), z = a[1].add(b[1]).sigmoid();
            Tensor n = a[2].add(r.mul(b[2])).tanh();
            h = n.sub(n.mul(z)).add(z.mul(h));  // (1 - z) n + z h
            break;
          }
        }
        outs[static_cast<size_t>(t)] = h;
      }
      dir_out.push_back(kiln::stack(outs, 0));
      hn.push_back(h);
      if (c.defined()) cn.push_back(c);
    }
    layer_in = D == 1 ? dir_out[0] : kiln::cat(dir_out, 2);
    if (op.dropout > 0 && is_training() && layer + 1 < op.num_layers)
      layer_in = F::dropout(layer_in, op.dropout, true);
  }
  Tensor out = layer_in, h_n = kiln::stack(hn, 0), c_n = cn.empty() ? Tensor() : kiln::stack(cn, 0);
  if (!batched) {
    out = out.squeeze(1);
    h_n = h_n.squeeze(1);
    if (c_n.defined()) c_n = c_n.squeeze(1);
  } else if (op.batch_first) {
    out = out.transpose(0, 1);
  }
  return {out, h_n, c_n};
}

RNNImpl::RNNImpl(RNNOptions o)
    : RNNBase("RNN", o.nonlinearity == "relu" ? Mode::RNN_RELU : Mode::RNN_TANH, o) {
  KILN_CHECK(o.nonlinearity == "tanh" || o.nonlinearity == "relu", "[RNN] unknown nonlinearity '",
             o.nonlinearity, "'");
}
std::tuple<Tensor, Tensor> RNNImpl::forward(const Tensor& input, const Tensor& h0) {
  auto [o, h, c] = run(input, h0, Tensor());
  return {o, h};
}

LSTMImpl::LSTMImpl(RNNOptions o) : RNNBase("LSTM", Mode::LSTM, o) {}
std::tuple<Tensor, std::tuple<Tensor, Tensor>> LSTMImpl::forward(const Tensor& input,
                                                                 const Tensor& h0,
                                                                 const Tensor& c0) {
  auto [o, h, c] = run(input, h0, c0);
  return {o, {h, c}};
}

GRUImpl::GRUImpl(RNNOptions o) : RNNBase("GRU", Mode::GRU, o) {}
std::tuple<Tensor, Tensor> GRUImpl::forward(const Tensor& input, const Tensor& h0) {
  auto [o, h, c] = run(input, h0, Tensor());
  return {o, h};
}

}  // namespace kiln::nn
