// kiln::nn::functional linear layers, embeddings, distances and attention (torch.nn.functional
// names and argument order).
#pragma once

#include <optional>
#include <string_view>
#include <tuple>

#include "kiln/tensor.h"

namespace kiln::nn::functional {

// input @ weight^T + bias (kiln::linear).
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = {});
// out[.., o] = sum_ij x1[.., i] weight[o, i, j] x2[.., j] + bias[o].
Tensor bilinear(const Tensor& input1, const Tensor& input2, const Tensor& weight,
                const Tensor& bias = {});

// Rows of weight [num_embeddings, dim] picked by integer indices (any shape). padding_idx
// (negative counts from the end) gets no gradient; max_norm renormalizes the referenced rows of
// weight IN PLACE to norm <= max_norm (p-norm norm_type) first, as PyTorch.
Tensor embedding(const Tensor& input, const Tensor& weight,
                 std::optional<int64_t> padding_idx = std::nullopt,
                 std::optional<double> max_norm = std::nullopt, double norm_type = 2.0);
// Sums/means/maxes of bags of embeddings: input 2-D [B, L] (offsets undefined) or 1-D with
// offsets (bag starts). mode "sum" | "mean" | "max"; per_sample_weights only with "sum";
// include_last_offset treats the last offset as the end of the last bag; an empty bag gives 0.
Tensor embedding_bag(const Tensor& input, const Tensor& weight, const Tensor& offsets = {},
                     std::optional<double> max_norm = std::nullopt, double norm_type = 2.0,
                     std::string_view mode = "mean", const Tensor& per_sample_weights = {},
                     bool include_last_offset = false,
                     std::optional<int64_t> padding_idx = std::nullopt);
// int64 one-hot rows for non-negative int64 classes; num_classes = -1: max + 1.
Tensor one_hot(const Tensor& tensor, int64_t num_classes = -1);

Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim = 1, double eps = 1e-8);
// ||x1 - x2 + eps||_p over the last dim.
Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p = 2.0, double eps = 1e-6,
                         bool keepdim = false);
// p-norm distances between the rows of x1 [*, P, M] and x2 [*, R, M]: [*, P, R].
Tensor cdist(const Tensor& x1, const Tensor& x2, double p = 2.0);
// Distances between all pairs i < j of the rows of [N, M], in row-major order: [N (N - 1) / 2].
Tensor pdist(const Tensor& input, double p = 2.0);

// softmax(q k^T * scale + mask) v over [..., L, E] x [..., S, E] x [..., S, Ev]. attn_mask: bool
// (true = take part) or float (added), broadcast to [..., L, S]; is_causal masks j > i (top-left
// aligned) and excludes attn_mask; scale defaults to 1/sqrt(E); enable_gqa lets key/value have
// fewer heads (dim -3) than query, repeated to match. dropout_p > 0 drops attention weights.
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask = {}, double dropout_p = 0.0,
                                    bool is_causal = false,
                                    std::optional<double> scale = std::nullopt,
                                    bool enable_gqa = false);

// Differs from PyTorch: on a CUDA device, float16/bfloat16 inputs [B, H, T, D] with D in {64, 128,
// 256} and Dv == D run the fused flash-attention kernels (dropout then draws kiln's own mask);
// other cases run the composite math path (a case one might expect fused warns once on stderr).
// kiln::nn::attention_backend() (kiln/nn/attention.h) tells which kernel ran.

// Attention over packed variable-length sequences (flash_attn_varlen_func): query [total_q, Hq,
// D], key/value [total_k, Hk, D] (Hq % Hk == 0), sequence b taking rows cu_seqlens_q[b] ..
// cu_seqlens_q[b + 1] (int32 [B + 1], non-decreasing from 0) of query and likewise of key/value;
// max_seqlen_* bound the lengths. is_causal masks j > i inside each sequence (top-left aligned).
// Runs the fused op on every device (the CPU kernel computes it exactly); differentiable in
// query, key and value.
Tensor varlen_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                        const Tensor& cu_seqlens_q, const Tensor& cu_seqlens_k,
                        int64_t max_seqlen_q, int64_t max_seqlen_k, double dropout_p = 0.0,
                        bool is_causal = false, std::optional<double> scale = std::nullopt);

// torch.nn.functional.multi_head_attention_forward for [L, N, E] (or unbatched [L, E]) inputs,
// packed in_proj weights, no bias_k/bias_v/add_zero_attn. Returns (output, averaged or per-head
// attention weights; undefined when need_weights = false).
struct MultiHeadAttentionOptions {
  int64_t num_heads = 1;
  Tensor in_proj_weight, in_proj_bias;    // [3E, E], [3E]
  Tensor out_proj_weight, out_proj_bias;  // [E, E], [E]
  double dropout_p = 0.0;
  bool training = true;
  Tensor key_padding_mask;  // [N, S] bool (true = ignore) or float (added)
  bool need_weights = true;
  Tensor attn_mask;  // [L, S] or [N * num_heads, L, S]: bool (true = masked) or float (added)
  bool average_attn_weights = true;
  bool is_causal = false;
};
std::tuple<Tensor, Tensor> multi_head_attention_forward(const Tensor& query, const Tensor& key,
                                                        const Tensor& value,
                                                        const MultiHeadAttentionOptions& options);

}  // namespace kiln::nn::functional
