// Attention and transformer layers: MultiheadAttention, TransformerEncoderLayer,
// TransformerDecoderLayer, TransformerEncoder, TransformerDecoder, Transformer (torch.nn).
#pragma once

#include <functional>
#include <string>
#include <tuple>

#include "kiln/nn/modules/container.h"
#include "kiln/nn/modules/dropout.h"
#include "kiln/nn/modules/linear.h"
#include "kiln/nn/modules/normalization.h"

namespace kiln::nn {

// Multi-head attention with packed in_proj_weight [3E, E] (xavier_uniform_), in_proj_bias and
// out_proj.bias zero. Inputs [L, N, E] ([N, L, E] with batch_first) or unbatched [L, E].
// key/value must have the embedding size of the query (kdim/vdim and bias_k/bias_v/
// add_zero_attn are not supported). Returns (output, attention weights or undefined).
class MultiheadAttentionImpl : public Module {
 public:
  MultiheadAttentionImpl(int64_t embed_dim, int64_t num_heads, double dropout = 0.0,
                         bool bias = true, bool batch_first = false);
  std::tuple<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                     const Tensor& key_padding_mask = {}, bool need_weights = true,
                                     const Tensor& attn_mask = {}, bool average_attn_weights = true,
                                     bool is_causal = false);
  void reset_parameters() override;

  int64_t embed_dim, num_heads, head_dim;
  double dropout;
  bool batch_first;
  Tensor in_proj_weight, in_proj_bias;
  std::shared_ptr<LinearImpl> out_proj;
};
KILN_MODULE(MultiheadAttention);

struct TransformerLayerOptions {
  int64_t d_model = 512, nhead = 8, dim_feedforward = 2048;
  double dropout = 0.1;
  std::string activation = "relu";  // "relu" or "gelu"
  double layer_norm_eps = 1e-5;
  bool batch_first = false, norm_first = false, bias = true;
};

class TransformerEncoderLayerImpl : public Module {
 public:
  explicit TransformerEncoderLayerImpl(TransformerLayerOptions options);
  TransformerEncoderLayerImpl(int64_t d_model, int64_t nhead, int64_t dim_feedforward = 2048,
                              double dropout = 0.1);
  Tensor forward(const Tensor& src, const Tensor& src_mask = {},
                 const Tensor& src_key_padding_mask = {}, bool is_causal = false);

  TransformerLayerOptions options;
  std::shared_ptr<MultiheadAttentionImpl> self_attn;
  std::shared_ptr<LinearImpl> linear1, linear2;
  std::shared_ptr<DropoutImpl> dropout, dropout1, dropout2;
  std::shared_ptr<LayerNormImpl> norm1, norm2;

 private:
  Tensor sa_block(const Tensor& x, const Tensor& mask, const Tensor& kpm, bool is_causal);
  Tensor ff_block(const Tensor& x);
};
KILN_MODULE(TransformerEncoderLayer);

class TransformerDecoderLayerImpl : public Module {
 public:
  explicit TransformerDecoderLayerImpl(TransformerLayerOptions options);
  TransformerDecoderLayerImpl(int64_t d_model, int64_t nhead, int64_t dim_feedforward = 2048,
                              double dropout = 0.1);
  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = {},
                 const Tensor& memory_mask = {}, const Tensor& tgt_key_padding_mask = {},
                 const Tensor& memory_key_padding_mask = {}, bool tgt_is_causal = false,
                 bool memory_is_causal = false);

  TransformerLayerOptions options;
  std::shared_ptr<MultiheadAttentionImpl> self_attn, multihead_attn;
  std::shared_ptr<LinearImpl> linear1, linear2;
  std::shared_ptr<DropoutImpl> dropout, dropout1, dropout2, dropout3;
  std::shared_ptr<LayerNormImpl> norm1, norm2, norm3;

 private:
  Tensor ff_block(const Tensor& x);
};
KILN_MODULE(TransformerDecoderLayer);

// num_layers independent layers built from `options` (PyTorch deep-copies one layer; the
// result is the same: separately initialized layers), then an optional final LayerNorm.
class TransformerEncoderImpl : public Module {
 public:
  TransformerEncoderImpl(TransformerLayerOptions options, int64_t num_layers,
                         bool final_norm = false);
  Tensor forward(const Tensor& src, const Tensor& mask = {},
                 const Tensor& src_key_padding_mask = {}, bool is_causal = false);
  ModuleList layers;
  std::shared_ptr<LayerNormImpl> norm;  // null without final_norm
};
KILN_MODULE(TransformerEncoder);

class TransformerDecoderImpl : public Module {
 public:
  TransformerDecoderImpl(TransformerLayerOptions options, int64_t num_layers,
                         bool final_norm = false);
  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = {},
                 const Tensor& memory_mask = {}, const Tensor& tgt_key_padding_mask = {},
                 const Tensor& memory_key_padding_mask = {}, bool tgt_is_causal = false,
                 bool memory_is_causal = false);
  ModuleList layers;
  std::shared_ptr<LayerNormImpl> norm;
};
KILN_MODULE(TransformerDecoder);

// Encoder-decoder transformer with final LayerNorms; every parameter of more than one dim is
// re-initialized with xavier_uniform_ (as PyTorch).
class TransformerImpl : public Module {
 public:
  TransformerImpl(TransformerLayerOptions options = {}, int64_t num_encoder_layers = 6,
                  int64_t num_decoder_layers = 6);
  Tensor forward(const Tensor& src, const Tensor& tgt, const Tensor& src_mask = {},
                 const Tensor& tgt_mask = {}, const Tensor& memory_mask = {},
                 const Tensor& src_key_padding_mask = {}, const Tensor& tgt_key_padding_mask = {},
                 const Tensor& memory_key_padding_mask = {});
  // A float [sz, sz] mask with -inf above the diagonal and 0 elsewhere.
  static Tensor generate_square_subsequent_mask(int64_t sz, DType dtype = kFloat32);
  TransformerLayerOptions options;
  std::shared_ptr<TransformerEncoderImpl> encoder;
  std::shared_ptr<TransformerDecoderImpl> decoder;
};
KILN_MODULE(Transformer);

}  // namespace kiln::nn
