// Fused scaled-dot-product attention: which kernel ran last (attention_backend), and the fused
// entry points that also return the log-sum-exp (for tests and custom backward passes).
#pragma once

#include <optional>
#include <tuple>

#include "kiln/tensor.h"

namespace kiln {
namespace detail {
// Called by the attention kernels and the front end (thread-local; name must be a literal).
void set_attention_backend(const char* name);
}  // namespace detail

namespace nn {

// The kernel that the calling thread's last scaled_dot_product_attention / varlen_attention ran:
// "flash_mma" (GPU tensor-core kernel), "flash" (portable GPU kernel), "flash_cpu" (the fused op
// on the CPU), "math" (the composite path), or "" before any call.
const char* attention_backend();

namespace functional {

// The fused attention op on any device: (out [B, Hq, Tq, D], lse [B, Hq, Tq]) for q [B, Hq, Tq, D]
// and k, v [B, Hk, Tk, D]; lse[b, h, i] = log sum_j exp(scale q_i . k_j + mask_ij) (float32;
// float64 for float64 inputs; -inf for a row with every key masked, whose output is 0).
// attn_mask: bool (true = take part) or floating (added), broadcastable to [B, Hq, Tq, Tk], and it
// gets no gradient; is_causal masks j > i (top-left aligned); enable_gqa: Hq % Hk == 0, query head
// h reads key/value head h / (Hq / Hk). Dropout draws from the default generator of the device.
std::tuple<Tensor, Tensor> _scaled_dot_product_flash_attention(
    const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& attn_mask = {},
    double dropout_p = 0.0, bool is_causal = false, std::optional<double> scale = std::nullopt,
    bool enable_gqa = false);

// varlen_attention with the log-sum-exp ([Hq, total_q], float32 or float64) also returned.
std::tuple<Tensor, Tensor> _varlen_flash_attention(const Tensor& query, const Tensor& key,
                                                   const Tensor& value, const Tensor& cu_seqlens_q,
                                                   const Tensor& cu_seqlens_k, int64_t max_seqlen_q,
                                                   int64_t max_seqlen_k, double dropout_p = 0.0,
                                                   bool is_causal = false,
                                                   std::optional<double> scale = std::nullopt);

}  // namespace functional
}  // namespace nn
}  // namespace kiln
