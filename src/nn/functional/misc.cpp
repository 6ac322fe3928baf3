// kiln::nn::functional linear/bilinear, embedding (primitive) and embedding_bag, one_hot,
// distances and multi_head_attention_forward (scaled_dot_product_attention: attention.cpp).
#include <cmath>
#include <limits>

#include "kiln/nn/functional/activation.h"
#include "kiln/nn/functional/misc.h"
#include "kiln/ops.h"
#include "nn/functional/nn_ops.h"

namespace kiln::nn::functional {

Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  return kiln::linear(input, weight, bias);
}

Tensor bilinear(const Tensor& input1, const Tensor& input2, const Tensor& weight,
                const Tensor& bias) {
  const char* op = "bilinear";
  KILN_CHECK(input1.defined() && input2.defined() && weight.defined(), "[", op,
             "] inputs and weight must be defined");
  KILN_CHECK(weight.dim() == 3, "[", op, "] expected a 3-D weight, but got ", weight.sizes());
  KILN_CHECK(input1.dim() >= 1 && input2.dim() == input1.dim(), "[", op,
             "] input1 and input2 must have the same number of dims (>= 1)");
  KILN_CHECK(input1.size(-1) == weight.size(1) && input2.size(-1) == weight.size(2), "[", op,
             "] input sizes ", input1.sizes(), " and ", input2.sizes(),
             " don't match weight of shape ", weight.sizes());
  Tensor y = kiln::einsum("...i,oij,...j->...o", {input1, weight, input2});
  if (bias.defined()) y = y + bias;
  return y;
}

Tensor embedding(const Tensor& input, const Tensor& weight, std::optional<int64_t> padding_idx,
                 std::optional<double> max_norm, double norm_type) {
  const char* op = "embedding";
  KILN_CHECK(weight.defined() && weight.dim() == 2, "[", op, "] weight must be 2-D");
  int64_t pad = -1;
  if (padding_idx) {
    const int64_t v = weight.size(0);
    KILN_CHECK(*padding_idx < v && *padding_idx >= -v, "[", op,
               "] Padding_idx must be within num_embeddings");
    pad = *padding_idx < 0 ? *padding_idx + v : *padding_idx;
  }
  if (max_norm) detail::embedding_renorm_op(weight, input, *max_norm, norm_type);
  return detail::embedding_op(weight, input, pad);
}

Tensor embedding_bag(const Tensor& input, const Tensor& weight, const Tensor& offsets,
                     std::optional<double> max_norm, double norm_type, std::string_view mode,
                     const Tensor& per_sample_weights, bool include_last_offset,
                     std::optional<int64_t> padding_idx) {
  const char* op = "embedding_bag";
  KILN_CHECK(mode == "sum" || mode == "mean" || mode == "max", "[", op,
             "] mode has to be one of sum, mean or max, but got ", mode);
  KILN_CHECK(input.defined() && (input.dim() == 1 || input.dim() == 2), "[", op,
             "] input has to be 1D or 2D Tensor, but got Tensor of dimension ",
             input.defined() ? input.dim() : 0);
  KILN_CHECK(!per_sample_weights.defined() || mode == "sum", "[", op,
             "] embedding_bag: per_sample_weights was not None. per_sample_weights is only "
             "supported for mode='sum' (got mode='",
             mode, "')");
  if (per_sample_weights.defined())
    KILN_CHECK(per_sample_weights.sizes() == input.sizes(), "[", op,
               "] per_sample_weights must have the input's shape ", input.sizes());
  // Bags as [start, end) ranges of the flattened input.
  std::vector<std::pair<int64_t, int64_t>> bags;
  if (input.dim() == 2) {
    KILN_CHECK(!offsets.defined(), "[", op,
               "] if input is 2D, then offsets has to be None, as input is treated is a "
               "mini-batch of fixed length sequences");
    for (int64_t b = 0; b < input.size(0); ++b)
      bags.push_back({b * input.size(1), (b + 1) * input.size(1)});
  } else {
    KILN_CHECK(offsets.defined() && offsets.dim() == 1, "[", op,
               "] offsets has to be a 1D Tensor but got ", offsets.defined() ? offsets.dim() : 0,
               "-D");
    std::vector<int64_t> off;
    for (const Scalar& s : offsets.tolist_flat()) off.push_back(s.to<int64_t>());
    KILN_CHECK(off.empty() || off[0] == 0, "[", op,
               "] offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to "
               "start from position 0. However, got ",
               off.empty() ? 0 : off[0]);
    const int64_t n = input.numel();
    if (!include_last_offset) off.push_back(n);
    for (size_t i = 0; i + 1 < off.size(); ++i) {
      KILN_CHECK(off[i] <= off[i + 1] && off[i + 1] <= n, "[", op,
                 "] offsets must be non-decreasing and at most the input size ", n);
      bags.push_back({off[i], off[i + 1]});
    }
  }
  Tensor flat = input.reshape({-1});
  Tensor emb = embedding(flat, weight, padding_idx, max_norm, norm_type);  // [n, D]
  const int64_t v = weight.size(0), d = weight.size(1);
  const int64_t pad = padding_idx ? (*padding_idx < 0 ? *padding_idx + v : *padding_idx) : -1;
  Tensor keep = flat != pad;  // padding entries take no part
  Tensor w = keep.to(weight.dtype());
  if (per_sample_weights.defined()) w = w * per_sample_weights.reshape({-1});
  Tensor out = kiln::zeros({static_cast<int64_t>(bags.size()), d}, weight.options());
  for (size_t b = 0; b < bags.size(); ++b) {
    const auto [s, e] = bags[b];
    if (e == s) continue;
    Tensor rows = emb.narrow(0, s, e - s);
    Tensor wb = w.narrow(0, s, e - s).unsqueeze(1);
    Tensor r;
    if (mode == "max") {
      Tensor masked = kiln::where(keep.narrow(0, s, e - s).unsqueeze(1), rows,
                                  Scalar(-std::numeric_limits<double>::infinity()));
      r = masked.amax(IntArrayRef{0});
      r = kiln::where(kiln::isinf(r), Scalar(0.0), r);  // an all-padding bag gives 0
    } else {
      r = (rows * wb).sum(IntArrayRef{0});
      if (mode == "mean") r = r / kiln::clamp_min(wb.sum(), Scalar(1.0));
    }
    out.select(0, static_cast<int64_t>(b)).copy_(r);
  }
  return out;
}

Tensor one_hot(const Tensor& tensor, int64_t num_classes) {
  const char* op = "one_hot";
  KILN_CHECK(tensor.defined() && tensor.dtype() == DType::Int64, "[", op,
             "] one_hot is only applicable to index tensor of type int64");
  if (num_classes == -1) {
    KILN_CHECK(tensor.numel() > 0, "[", op,
               "] Can not infer total number of classes from empty tensor.");
    num_classes = tensor.max().item<int64_t>() + 1;
  }
  KILN_CHECK(num_classes >= 0, "[", op, "] num_classes should be positive");
  if (tensor.numel() > 0) {
    KILN_CHECK(tensor.min().item<int64_t>() >= 0, "[", op, "] Class values must be non-negative.");
    KILN_CHECK(tensor.max().item<int64_t>() < num_classes, "[", op,
               "] Class values must be smaller than num_classes.");
  }
  Tensor classes = kiln::arange(num_classes, TensorOptions(DType::Int64).device(tensor.device()));
  return (tensor.unsqueeze(-1) == classes).to(DType::Int64);
}

Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim, double eps) {
  const char* op = "cosine_similarity";
  KILN_CHECK(x1.defined() && x2.defined(), "[", op, "] inputs must be defined");
  // Each input divided by its clamped norm, then the dot product (PyTorch's formulation).
  Tensor n1 = kiln::clamp_min(kiln::linalg::vector_norm(x1, 2, dim, true), Scalar(eps));
  Tensor n2 = kiln::clamp_min(kiln::linalg::vector_norm(x2, 2, dim, true), Scalar(eps));
  Tensor prod = (x1 / n1) * (x2 / n2);
  const int64_t nd = prod.dim();
  return prod.sum(IntArrayRef{dim < 0 ? dim + nd : dim});
}

Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, double p, double eps, bool keepdim) {
  KILN_CHECK(x1.defined() && x2.defined(), "[pairwise_distance] inputs must be defined");
  Tensor d = x1 - x2 + eps;
  if (d.dim() == 0) d = d.reshape({1});
  return kiln::linalg::vector_norm(d, p, -1, keepdim);
}

Tensor cdist(const Tensor& x1, const Tensor& x2, double p) {
  const char* op = "cdist";
  KILN_CHECK(x1.defined() && x2.defined() && x1.dim() >= 2 && x2.dim() >= 2, "[", op,
             "] cdist only supports at least 2D tensors");
  KILN_CHECK(x1.size(-1) == x2.size(-1), "[", op,
             "] X1 and X2 must have the same number of columns. X1: ", x1.size(-1),
             " X2: ", x2.size(-1));
  KILN_CHECK(p >= 0, "[", op, "] cdist only supports non-negative p values");
  KILN_CHECK(x1.is_floating_point() && x2.is_floating_point(), "[", op,
             "] cdist only supports floating-point dtypes");
  return kiln::linalg::vector_norm(x1.unsqueeze(-2) - x2.unsqueeze(-3), p, -1);
}

Tensor pdist(const Tensor& input, double p) {
  const char* op = "pdist";
  KILN_CHECK(input.defined() && input.dim() == 2, "[", op,
             "] pdist only supports 2D tensors, got: ", input.defined() ? input.dim() : 0, "D");
  KILN_CHECK(input.is_floating_point(), "[", op, "] pdist only supports floating-point dtypes");
  KILN_CHECK(p >= 0, "[", op, "] pdist only supports non-negative p values");
  const int64_t n = input.size(0);
  Tensor out = kiln::empty({n < 2 ? 0 : n * (n - 1) / 2}, input.options());
  int64_t off = 0;
  for (int64_t i = 0; i + 1 < n; ++i) {
    Tensor rest = input.narrow(0, i + 1, n - i - 1);
    out.narrow(0, off, n - i - 1)
        .copy_(kiln::linalg::vector_norm(rest - input.select(0, i).unsqueeze(0), p, -1));
    off += n - i - 1;
  }
  return out;
}

std::tuple<Tensor, Tensor> multi_head_attention_forward(const Tensor& query, const Tensor& key,
                                                        const Tensor& value,
                                                        const MultiHeadAttentionOptions& o) {
  const char* op = "multi_head_attention_forward";
  KILN_CHECK(query.defined() && key.defined() && value.defined(), "[", op,
             "] query, key and value must be defined");
  const bool batched = query.dim() == 3;
  KILN_CHECK(query.dim() == 2 || query.dim() == 3, "[", op,
             "] query should be unbatched 2D or batched 3D tensor but received ", query.dim(),
             "-D query tensor");
  KILN_CHECK(key.dim() == query.dim() && value.dim() == query.dim(), "[", op,
             "] key and value must have the query's number of dims");
  Tensor q = batched ? query : query.unsqueeze(1);
  Tensor k = batched ? key : key.unsqueeze(1);
  Tensor v = batched ? value : value.unsqueeze(1);
  const int64_t l = q.size(0), n = q.size(1), e = q.size(2), s = k.size(0);
  const int64_t h = o.num_heads;
  KILN_CHECK(h > 0 && e % h == 0, "[", op, "] embed_dim ", e, " not divisible by num_heads ", h);
  KILN_CHECK(k.size(0) == v.size(0) && k.size(1) == n && v.size(1) == n, "[", op,
             "] key/value shapes ", key.sizes(), ", ", value.sizes(), " don't match query ",
             query.sizes());
  KILN_CHECK(o.in_proj_weight.defined() && o.in_proj_weight.dim() == 2 &&
                 o.in_proj_weight.size(0) == 3 * e && o.in_proj_weight.size(1) == e,
             "[", op, "] expected in_proj_weight of shape [", 3 * e, ", ", e, "]");
  KILN_CHECK(o.out_proj_weight.defined(), "[", op, "] out_proj_weight must be defined");
  auto part = [&](const Tensor& t, int64_t i) {
    return t.defined() ? t.narrow(0, i * e, e) : Tensor();
  };
  const int64_t hd = e / h;
  // [len, N, E] -> [N * H, len, hd]
  auto heads = [&](const Tensor& t) { return t.reshape({t.size(0), n * h, hd}).transpose(0, 1); };
  Tensor qh = heads(kiln::linear(q, part(o.in_proj_weight, 0), part(o.in_proj_bias, 0)));
  Tensor kh = heads(kiln::linear(k, part(o.in_proj_weight, 1), part(o.in_proj_bias, 1)));
  Tensor vh = heads(kiln::linear(v, part(o.in_proj_weight, 2), part(o.in_proj_bias, 2)));
  const double ninf = -std::numeric_limits<double>::infinity();
  // Additive float mask [N * H or 1, L, S] from attn_mask (true = masked) and key_padding_mask.
  Tensor mask;
  auto as_float = [&](const Tensor& m) {
    return m.dtype() == DType::Bool ? kiln::where(m, Scalar(ninf), Scalar(0.0)).to(qh.dtype()) : m;
  };
  if (o.attn_mask.defined()) {
    Tensor m = as_float(o.attn_mask);
    KILN_CHECK((m.dim() == 2 && m.size(0) == l && m.size(1) == s) ||
                   (m.dim() == 3 && m.size(0) == n * h && m.size(1) == l && m.size(2) == s),
               "[", op, "] attn_mask of shape ", m.sizes(), " should be [", l, ", ", s, "] or [",
               n * h, ", ", l, ", ", s, "]");
    mask = m.dim() == 2 ? m.unsqueeze(0) : m;
  } else if (o.is_causal) {
    Tensor i = kiln::arange(l, TensorOptions(DType::Int64)).unsqueeze(1);
    Tensor j = kiln::arange(s, TensorOptions(DType::Int64)).unsqueeze(0);
    mask = kiln::where(j > i, Scalar(ninf), Scalar(0.0)).to(qh.dtype()).unsqueeze(0);
  }
  if (o.key_padding_mask.defined()) {
    Tensor kp = as_float(o.key_padding_mask);
    KILN_CHECK(kp.dim() == (batched ? 2 : 1) && kp.size(-1) == s, "[", op,
               "] key_padding_mask of shape ", kp.sizes(), " should be [", n, ", ", s, "]");
    kp = kp.reshape({n, 1, 1, s}).expand({n, h, 1, s}).reshape({n * h, 1, s});
    mask = mask.defined() ? mask + kp : kp;
  }
  Tensor attn = kiln::matmul(qh / std::sqrt(static_cast<double>(hd)), kh.transpose(1, 2));
  if (mask.defined()) attn = attn + mask;
  Tensor w = softmax(attn, -1);
  Tensor wd = (o.training && o.dropout_p > 0) ? dropout(w, o.dropout_p, true) : w;
  Tensor out = kiln::matmul(wd, vh).transpose(0, 1).reshape({l, n, e});
  out = kiln::linear(out, o.out_proj_weight, o.out_proj_bias);
  if (!batched) out = out.squeeze(1);
  Tensor weights;
  if (o.need_weights) {
    weights = w.reshape({n, h, l, s});
    if (o.average_attn_weights) weights = weights.mean(IntArrayRef{1});
    if (!batched) weights = weights.squeeze(0);
  }
  return {out, weights};
}

}  // namespace kiln::nn::functional
