// MultiheadAttention and the transformer layers/stacks.
#include "kiln/nn/modules/transformer.h"

#include <cmath>

#include "kiln/nn/functional.h"
#include "kiln/nn/init.h"
#include "kiln/ops/factories.h"

namespace kiln::nn {

namespace F = functional;

namespace {
// PyTorch's out_proj prints under this name.
class OutProjImpl : public LinearImpl {
 public:
  OutProjImpl(int64_t e, bool bias) : LinearImpl(e, e, bias) {
    set_name("NonDynamicallyQuantizableLinear");
  }
};

Tensor activation(const std::string& name, const Tensor& x) {
  if (name == "relu") return F::relu(x);
  if (name == "gelu") return F::gelu(x);
  KILN_ERROR("[Transformer] activation should be relu/gelu, not ", name);
}
}  // namespace

MultiheadAttentionImpl::MultiheadAttentionImpl(int64_t e, int64_t h, double p, bool bias, bool bf)
    : Module("MultiheadAttention"), embed_dim(e), num_heads(h), dropout(p), batch_first(bf) {
  KILN_CHECK(h > 0 && e % h == 0, "[MultiheadAttention] embed_dim must be divisible by num_heads (",
             e, ", ", h, ")");
  head_dim = e / h;
  in_proj_weight = register_parameter("in_proj_weight", kiln::empty({3 * e, e}));
  in_proj_bias = register_parameter("in_proj_bias", bias ? kiln::empty({3 * e}) : Tensor());
  out_proj = register_module("out_proj", std::make_shared<OutProjImpl>(e, bias));
  reset_parameters();
}

void MultiheadAttentionImpl::reset_parameters() {
  init::xavier_uniform_(in_proj_weight);
  if (in_proj_bias.defined()) {
    init::zeros_(in_proj_bias);
    init::zeros_(out_proj->bias);
  }
}

std::tuple<Tensor, Tensor> MultiheadAttentionImpl::forward(
    const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& key_padding_mask,
    bool need_weights, const Tensor& attn_mask, bool average_attn_weights, bool is_causal) {
  const bool batched = query.dim() == 3;
  const bool swap = batch_first && batched;
  F::MultiHeadAttentionOptions o;
  o.num_heads = num_heads;
  o.in_proj_weight = in_proj_weight;
  o.in_proj_bias = in_proj_bias;
  o.out_proj_weight = out_proj->weight;
  o.out_proj_bias = out_proj->bias;
  o.dropout_p = dropout;
  o.training = is_training();
  o.key_padding_mask = key_padding_mask;
  o.need_weights = need_weights;
  o.attn_mask = attn_mask;
  o.average_attn_weights = average_attn_weights;
  o.is_causal = is_causal;
  auto t = [&](const Tensor& x) { return swap ? x.transpose(0, 1) : x; };
  auto [out, weights] = F::multi_head_attention_forward(t(query), t(key), t(value), o);
  return {t(out), weights};
}

// ---- encoder / decoder layers ----

TransformerEncoderLayerImpl::TransformerEncoderLayerImpl(TransformerLayerOptions o)
    : Module("TransformerEncoderLayer"), options(o) {
  self_attn =
      register_module("self_attn", std::make_shared<MultiheadAttentionImpl>(
                                       o.d_model, o.nhead, o.dropout, o.bias, o.batch_first));
  linear1 = register_module("linear1",
                            std::make_shared<LinearImpl>(o.d_model, o.dim_feedforward, o.bias));
  dropout = register_module("dropout", std::make_shared<DropoutImpl>(o.dropout));
  linear2 = register_module("linear2",
                            std::make_shared<LinearImpl>(o.dim_feedforward, o.d_model, o.bias));
  norm1 = register_module("norm1", std::make_shared<LayerNormImpl>(std::vector<int64_t>{o.d_model},
                                                                   o.layer_norm_eps, true, o.bias));
  norm2 = register_module("norm2", std::make_shared<LayerNormImpl>(std::vector<int64_t>{o.d_model},
                                                                   o.layer_norm_eps, true, o.bias));
  dropout1 = register_module("dropout1", std::make_shared<DropoutImpl>(o.dropout));
  dropout2 = register_module("dropout2", std::make_shared<DropoutImpl>(o.dropout));
  KILN_CHECK(o.activation == "relu" || o.activation == "gelu",
             "[TransformerEncoderLayer] activation should be relu/gelu, not ", o.activation);
}

TransformerEncoderLayerImpl::TransformerEncoderLayerImpl(int64_t d, int64_t h, int64_t ff, double p)
    : TransformerEncoderLayerImpl(TransformerLayerOptions{d, h, ff, p}) {}

Tensor TransformerEncoderLayerImpl::sa_block(const Tensor& x, const Tensor& mask, const Tensor& kpm,
                                             bool is_causal) {
  Tensor y = std::get<0>(self_attn->forward(x, x, x, kpm, false, mask, true, is_causal));
  return dropout1->forward(y);
}

Tensor TransformerEncoderLayerImpl::ff_block(const Tensor& x) {
  Tensor y =
      linear2->forward(dropout->forward(activation(options.activation, linear1->forward(x))));
  return dropout2->forward(y);
}

Tensor TransformerEncoderLayerImpl::forward(const Tensor& src, const Tensor& src_mask,
                                            const Tensor& kpm, bool is_causal) {
  Tensor x = src;
  if (options.norm_first) {
    x = x.add(sa_block(norm1->forward(x), src_mask, kpm, is_causal));
    x = x.add(ff_block(norm2->forward(x)));
  } else {
    x = norm1->forward(x.add(sa_block(x, src_mask, kpm, is_causal)));
    x = norm2->forward(x.add(ff_block(x)));
  }
  return x;
}

TransformerDecoderLayerImpl::TransformerDecoderLayerImpl(TransformerLayerOptions o)
    : Module("TransformerDecoderLayer"), options(o) {
  KILN_CHECK(o.activation == "relu" || o.activation == "gelu",
             "[TransformerDecoderLayer] activation should be relu/gelu, not ", o.activation);
  auto mha = [&] {
    return std::make_shared<MultiheadAttentionImpl>(o.d_model, o.nhead, o.dropout, o.bias,
                                                    o.batch_first);
  };
  auto ln = [&] {
    return std::make_shared<LayerNormImpl>(std::vector<int64_t>{o.d_model}, o.layer_norm_eps, true,
                                           o.bias);
  };
  self_attn = register_module("self_attn", mha());
  multihead_attn = register_module("multihead_attn", mha());
  linear1 = register_module("linear1",
                            std::make_shared<LinearImpl>(o.d_model, o.dim_feedforward, o.bias));
  dropout = register_module("dropout", std::make_shared<DropoutImpl>(o.dropout));
  linear2 = register_module("linear2",
                            std::make_shared<LinearImpl>(o.dim_feedforward, o.d_model, o.bias));
  norm1 = register_module("norm1", ln());
  norm2 = register_module("norm2", ln());
  norm3 = register_module("norm3", ln());
  dropout1 = register_module("dropout1", std::make_shared<DropoutImpl>(o.dropout));
  dropout2 = register_module("dropout2", std::make_shared<DropoutImpl>(o.dropout));
  dropout3 = register_module("dropout3", std::make_shared<DropoutImpl>(o.dropout));
}

TransformerDecoderLayerImpl::TransformerDecoderLayerImpl(int64_t d, int64_t h, int64_t ff, double p)
    : TransformerDecoderLayerImpl(TransformerLayerOptions{d, h, ff, p}) {}

Tensor TransformerDecoderLayerImpl::ff_block(const Tensor& x) {
  Tensor y =
      linear2->forward(dropout->forward(activation(options.activation, linear1->forward(x))));
  return dropout3->forward(y);
}

Tensor TransformerDecoderLayerImpl::forward(const Tensor& tgt, const Tensor& memory,
                                            const Tensor& tgt_mask, const Tensor& memory_mask,
                                            const Tensor& tgt_kpm, const Tensor& mem_kpm,
                                            bool tgt_is_causal, bool memory_is_causal) {
  auto sa = [&](const Tensor& x) {
    return dropout1->forward(
        std::get<0>(self_attn->forward(x, x, x, tgt_kpm, false, tgt_mask, true, tgt_is_causal)));
  };
  auto mha = [&](const Tensor& x) {
    return dropout2->forward(std::get<0>(multihead_attn->forward(
        x, memory, memory, mem_kpm, false, memory_mask, true, memory_is_causal)));
  };
  Tensor x = tgt;
  if (options.norm_first) {
    x = x.add(sa(norm1->forward(x)));
    x = x.add(mha(norm2->forward(x)));
    x = x.add(ff_block(norm3->forward(x)));
  } else {
    x = norm1->forward(x.add(sa(x)));
    x = norm2->forward(x.add(mha(x)));
    x = norm3->forward(x.add(ff_block(x)));
  }
  return x;
}

// ---- stacks ----

TransformerEncoderImpl::TransformerEncoderImpl(TransformerLayerOptions o, int64_t n,
                                               bool final_norm)
    : Module("TransformerEncoder") {
  layers = ModuleList();
  for (int64_t i = 0; i < n; ++i) layers->push_back(TransformerEncoderLayer(o));
  register_module("layers", layers);
  if (final_norm)
    norm = register_module("norm", std::make_shared<LayerNormImpl>(std::vector<int64_t>{o.d_model},
                                                                   o.layer_norm_eps, true, o.bias));
}

Tensor TransformerEncoderImpl::forward(const Tensor& src, const Tensor& mask, const Tensor& kpm,
                                       bool is_causal) {
  Tensor x = src;
  for (auto& m : *layers)
    x = std::static_pointer_cast<TransformerEncoderLayerImpl>(m)->forward(x, mask, kpm, is_causal);
  return norm ? norm->forward(x) : x;
}

TransformerDecoderImpl::TransformerDecoderImpl(TransformerLayerOptions o, int64_t n,
                                               bool final_norm)
    : Module("TransformerDecoder") {
  layers = ModuleList();
  for (int64_t i = 0; i < n; ++i) layers->push_back(TransformerDecoderLayer(o));
  register_module("layers", layers);
  if (final_norm)
    norm = register_module("norm", std::make_shared<LayerNormImpl>(std::vector<int64_t>{o.d_model},
                                                                   o.layer_norm_eps, true, o.bias));
}

Tensor TransformerDecoderImpl::forward(const Tensor& tgt, const Tensor& memory,
                                       const Tensor& tgt_mask, const Tensor& memory_mask,
                                       const Tensor& tgt_kpm, const Tensor& mem_kpm,
                                       bool tgt_is_causal, bool memory_is_causal) {
  Tensor x = tgt;
  for (auto& m : *layers)
    x = std::static_pointer_cast<TransformerDecoderLayerImpl>(m)->forward(
        x, memory, tgt_mask, memory_mask, tgt_kpm, mem_kpm, tgt_is_causal, memory_is_causal);
  return norm ? norm->forward(x) : x;
}

TransformerImpl::TransformerImpl(TransformerLayerOptions o, int64_t ne, int64_t nd)
    : Module("Transformer"), options(o) {
  encoder = register_module("encoder", std::make_shared<TransformerEncoderImpl>(o, ne, true));
  decoder = register_module("decoder", std::make_shared<TransformerDecoderImpl>(o, nd, true));
  for (auto& p : parameters())
    if (p.dim() > 1) init::xavier_uniform_(p);
}

Tensor TransformerImpl::forward(const Tensor& src, const Tensor& tgt, const Tensor& src_mask,
                                const Tensor& tgt_mask, const Tensor& memory_mask,
                                const Tensor& src_kpm, const Tensor& tgt_kpm,
                                const Tensor& mem_kpm) {
  Tensor memory = encoder->forward(src, src_mask, src_kpm);
  return decoder->forward(tgt, memory, tgt_mask, memory_mask, tgt_kpm, mem_kpm);
}

Tensor TransformerImpl::generate_square_subsequent_mask(int64_t sz, DType dtype) {
  Tensor i = kiln::arange(sz);
  Tensor above = i.unsqueeze(0).gt(i.unsqueeze(1));  // [r, c] = c > r
  TensorOptions o(dtype);
  return kiln::full({sz, sz}, -INFINITY, o).where(above, kiln::zeros({sz, sz}, o));
}

}  // namespace kiln::nn
