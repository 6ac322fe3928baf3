// Embedding and EmbeddingBag: lookup tables of learned vectors.
#pragma once

#include <optional>
#include <string>

#include "kiln/nn/module.h"

namespace kiln::nn {

// Rows of weight [num_embeddings, embedding_dim] (init N(0, 1), the padding_idx row zero).
class EmbeddingImpl : public Module {
 public:
  EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim,
                std::optional<int64_t> padding_idx = std::nullopt,
                std::optional<double> max_norm = std::nullopt, double norm_type = 2.0);
  Tensor forward(const Tensor& indices);
  void reset_parameters() override;
  std::string extra_repr() const override;
  // An embedding around existing weights (copied), as nn.Embedding.from_pretrained.
  static std::shared_ptr<EmbeddingImpl> from_pretrained(
      const Tensor& embeddings, bool freeze = true,
      std::optional<int64_t> padding_idx = std::nullopt);

  int64_t num_embeddings, embedding_dim;
  std::optional<int64_t> padding_idx;  // normalized to be non-negative
  std::optional<double> max_norm;
  double norm_type;
  Tensor weight;
};
KILN_MODULE(Embedding);

// Sums/means/maxes of bags of embeddings (see functional::embedding_bag); init N(0, 1).
class EmbeddingBagImpl : public Module {
 public:
  EmbeddingBagImpl(int64_t num_embeddings, int64_t embedding_dim, std::string mode = "mean",
                   std::optional<int64_t> padding_idx = std::nullopt);
  Tensor forward(const Tensor& input, const Tensor& offsets = {},
                 const Tensor& per_sample_weights = {});
  void reset_parameters() override;
  std::string extra_repr() const override;

  int64_t num_embeddings, embedding_dim;
  std::string mode;
  std::optional<int64_t> padding_idx;
  Tensor weight;
};
KILN_MODULE(EmbeddingBag);

}  // namespace kiln::nn
