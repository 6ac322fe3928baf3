// Embedding and EmbeddingBag.
#include "kiln/nn/modules/embedding.h"

#include "kiln/nn/functional.h"
#include "kiln/nn/init.h"
#include "kiln/ops/factories.h"
#include "nn/grad_scope.h"
#include "nn/modules/repr.h"

namespace kiln::nn {

namespace F = functional;

namespace {
std::optional<int64_t> normalize_padding(std::optional<int64_t> p, int64_t n, const char* op) {
  if (!p) return p;
  KILN_CHECK(*p < n && *p >= -n, "[", op, "] padding_idx must be within num_embeddings (", n,
             "), got ", *p);
  return *p < 0 ? *p + n : *p;
}
}  // namespace

EmbeddingImpl::EmbeddingImpl(int64_t n, int64_t dim, std::optional<int64_t> pad,
                             std::optional<double> max_norm, double norm_type)
    : Module("Embedding"),
      num_embeddings(n),
      embedding_dim(dim),
      padding_idx(normalize_padding(pad, n, "Embedding")),
      max_norm(max_norm),
      norm_type(norm_type) {
  KILN_CHECK(n >= 0 && dim >= 0, "[Embedding] sizes must be non-negative");
  weight = register_parameter("weight", kiln::empty({n, dim}));
  reset_parameters();
}

void EmbeddingImpl::reset_parameters() {
  init::normal_(weight);
  if (padding_idx) {
    kiln::detail::NoGradScope ng;
    weight.select(0, *padding_idx).fill_(0);
  }
}

Tensor EmbeddingImpl::forward(const Tensor& indices) {
  return F::embedding(indices, weight, padding_idx, max_norm, norm_type);
}

std::string EmbeddingImpl::extra_repr() const {
  std::string s = std::to_string(num_embeddings) + ", " + std::to_string(embedding_dim);
  if (padding_idx) s += ", padding_idx=" + std::to_string(*padding_idx);
  if (max_norm) s += ", max_norm=" + repr::py_float(*max_norm);
  if (norm_type != 2.0) s += ", norm_type=" + repr::py_float(norm_type);
  return s;
}

std::shared_ptr<EmbeddingImpl> EmbeddingImpl::from_pretrained(const Tensor& embeddings, bool freeze,
                                                              std::optional<int64_t> padding_idx) {
  KILN_CHECK(embeddings.defined() && embeddings.dim() == 2,
             "[Embedding.from_pretrained] embeddings must be 2-D");
  auto e = std::make_shared<EmbeddingImpl>(embeddings.size(0), embeddings.size(1), padding_idx);
  {
    kiln::detail::NoGradScope ng;
    e->weight.copy_(embeddings);
  }
  e->weight.requires_grad_(!freeze);
  return e;
}

EmbeddingBagImpl::EmbeddingBagImpl(int64_t n, int64_t dim, std::string mode,
                                   std::optional<int64_t> pad)
    : Module("EmbeddingBag"),
      num_embeddings(n),
      embedding_dim(dim),
      mode(std::move(mode)),
      padding_idx(normalize_padding(pad, n, "EmbeddingBag")) {
  KILN_CHECK(this->mode == "sum" || this->mode == "mean" || this->mode == "max",
             "[EmbeddingBag] mode must be 'sum', 'mean' or 'max', got '", this->mode, "'");
  weight = register_parameter("weight", kiln::empty({n, dim}));
  reset_parameters();
}

void EmbeddingBagImpl::reset_parameters() {
  init::normal_(weight);
  if (padding_idx) {
    kiln::detail::NoGradScope ng;
    weight.select(0, *padding_idx).fill_(0);
  }
}

Tensor EmbeddingBagImpl::forward(const Tensor& input, const Tensor& offsets,
                                 const Tensor& per_sample_weights) {
  return F::embedding_bag(input, weight, offsets, std::nullopt, 2.0, mode, per_sample_weights,
                          false, padding_idx);
}

std::string EmbeddingBagImpl::extra_repr() const {
  std::string s = std::to_string(num_embeddings) + ", " + std::to_string(embedding_dim) +
                  ", mode='" + mode + "'";
  if (padding_idx) s += ", padding_idx=" + std::to_string(*padding_idx);
  return s;
}

}  // namespace kiln::nn
