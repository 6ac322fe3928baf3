// Recurrent layers: RNN (tanh/relu), LSTM, GRU — multi-layer, bidirectional, batch_first,
// dropout between layers (torch.nn semantics and parameter names; proj_size is not supported).
#pragma once

#include <string>
#include <tuple>
#include <vector>

#include "kiln/nn/module.h"

namespace kiln::nn {

struct RNNOptions {
  int64_t input_size = 0, hidden_size = 0, num_layers = 1;
  std::string nonlinearity = "tanh";  // RNN only: "tanh" or "relu"
  bool bias = true, batch_first = false;
  double dropout = 0.0;
  bool bidirectional = false;
};

// Parameters weight_ih_l{k}[_reverse] [G*H, in], weight_hh_l{k}[_reverse] [G*H, H], bias_ih_*,
// bias_hh_* (G = 1, 4, 3 for RNN, LSTM, GRU; gate order i,f,g,o for LSTM and r,z,n for GRU),
// all U(-1/sqrt(H), 1/sqrt(H)). Inputs [L, N, in] ([N, L, in] with batch_first) or [L, in].
class RNNBase : public Module {
 public:
  enum class Mode { RNN_TANH, RNN_RELU, LSTM, GRU };
  RNNBase(std::string name, Mode mode, RNNOptions options);
  void reset_parameters() override;
  std::string extra_repr() const override;

  RNNOptions options;
  // flat_weights[layer * D + direction] = {w_ih, w_hh, b_ih, b_hh} (biases may be undefined).
  std::vector<std::vector<Tensor>> all_weights;

 protected:
  // Runs the stack; h0 (and c0 for LSTM) [num_layers * D, N, H] or undefined (zeros).
  // Returns output, h_n, c_n (undefined unless LSTM).
  std::tuple<Tensor, Tensor, Tensor> run(const Tensor& input, const Tensor& h0, const Tensor& c0);
  Mode mode_;
};

class RNNImpl : public RNNBase {
 public:
  explicit RNNImpl(RNNOptions options);
  RNNImpl(int64_t input_size, int64_t hidden_size, int64_t num_layers = 1)
      : RNNImpl(RNNOptions{input_size, hidden_size, num_layers}) {}
  // (output, h_n)
  std::tuple<Tensor, Tensor> forward(const Tensor& input, const Tensor& h0 = {});
};
KILN_MODULE(RNN);

class LSTMImpl : public RNNBase {
 public:
  explicit LSTMImpl(RNNOptions options);
  LSTMImpl(int64_t input_size, int64_t hidden_size, int64_t num_layers = 1)
      : LSTMImpl(RNNOptions{input_size, hidden_size, num_layers}) {}
  // (output, (h_n, c_n))
  std::tuple<Tensor, std::tuple<Tensor, Tensor>> forward(const Tensor& input, const Tensor& h0 = {},
                                                         const Tensor& c0 = {});
};
KILN_MODULE(LSTM);

class GRUImpl : public RNNBase {
 public:
  explicit GRUImpl(RNNOptions options);
  GRUImpl(int64_t input_size, int64_t hidden_size, int64_t num_layers = 1)
      : GRUImpl(RNNOptions{input_size, hidden_size, num_layers}) {}
  std::tuple<Tensor, Tensor> forward(const Tensor& input, const Tensor& h0 = {});
};
KILN_MODULE(GRU);

}  // namespace kiln::nn
