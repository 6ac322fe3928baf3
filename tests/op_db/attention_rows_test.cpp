// Op-table rows of the fused attention primitives (FlashAttention,
// FlashAttentionVarlen and, via the gradcheck suite, their backward ops)
// against plain double loops.
#include <cmath>

#include "kiln/nn/attention.h"
#include "kiln/nn/functional.h"
#include "op_db/nn_rows_util.h"

namespace kiln::testing {
namespace {

using namespace nn_rows;
namespace F = kiln::nn::functional;

// softmax(scale q k^T (causal: j <= i)) v for one head: q [lq, d], k/v [lk, d]
// at offsets.
void ref_head(const Vec& q, int64_t qo, int64_t qs, const Vec& k, const Vec& v, int64_t ko,
              int64_t ks, int64_t lq, int64_t lk, int64_t d, bool causal, Vec& out) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  for (int64_t i = 0; i < lq; ++i) {
    Vec s(static_cast<size_t>(lk));
    double m = -INFINITY;
    for (int64_t j = 0; j < lk; ++j) {
      double a = 0;
      for (int64_t t = 0; t < d; ++t) a += q[qo + i * qs + t] * k[ko + j * ks + t];
      s[j] = (causal && j > i) ? -INFINITY : a * scale;
      m = std::max(m, s[j]);
    }
    double z = 0;
    for (int64_t j = 0; j < lk; ++j) z += std::exp(s[j] - m);
    for (int64_t t = 0; t < d; ++t) {
      double acc = 0;
      for (int64_t j = 0; j < lk; ++j) acc += std::exp(s[j] - m) / z * v[ko + j * ks + t];
      out[qo + i * qs + t] = acc;
    }
  }
}

std::vector<OpRow> attention_rows() {
  std::vector<OpRow> rows;
  const uint32_t dtypes = detail::kFloatMask;
  {
    // q [B, Hq, Tq, D], k/v [B, Hk, Tk, D]; flag = is_causal; Hq % Hk == 0
    // (GQA).
    auto samples = [](DType) {
      std::vector<Sample> s;
      auto add = [&](Shape q, Shape kv, bool causal, const char* desc) {
        Sample x;
        x.inputs = {rm(q, 1), rm(kv, 2), rm(kv, 3)};
        x.flag = causal;
        x.desc = desc;
        s.push_back(x);
      };
      add({2, 2, 5, 8}, {2, 2, 7, 8}, false, "tq != tk");
      add({1, 4, 6, 4}, {1, 2, 6, 4}, true, "causal gqa");
      add({1, 1, 9, 3}, {1, 1, 4, 3}, true, "causal tq > tk");
      return s;
    };
    rows.push_back(mk(
        "nn.flash_attention", {OpId::FlashAttention, OpId::FlashAttentionBackward}, dtypes, samples,
        [](const std::vector<Tensor>& in, const Sample& s) {
          return std::get<0>(F::_scaled_dot_product_flash_attention(in[0], in[1], in[2], {}, 0.0,
                                                                    s.flag, std::nullopt, true));
        },
        [](const std::vector<Tensor>& in, const Sample& s) {
          const Arr q = arr(in[0]), k = arr(in[1]), v = arr(in[2]);
          const int64_t b = q.shape[0], hq = q.shape[1], tq = q.shape[2], d = q.shape[3];
          const int64_t hk = k.shape[1], tk = k.shape[2];
          Vec out(q.v.size());
          for (int64_t bi = 0; bi < b; ++bi)
            for (int64_t h = 0; h < hq; ++h)
              ref_head(q.v, (bi * hq + h) * tq * d, d, k.v, v.v, (bi * hk + h / (hq / hk)) * tk * d,
                       d, tq, tk, d, s.flag, out);
          return tens(out, q.shape);
        }));
  }
  {
    // Packed q [Nq, Hq, D], k/v [Nk, Hk, D]; inputs 3, 4: int32 cu_seqlens
    // (kept as they are).
    auto samples = [](DType) {
      std::vector<Sample> s;
      for (bool causal : {false, true}) {
        Sample x;
        x.inputs = {rm({9, 2, 8}, 4), rm({10, 1, 8}, 5), rm({10, 1, 8}, 6),
                    from_vector(std::vector<int32_t>{0, 4, 4, 9}),
                    from_vector(std::vector<int32_t>{0, 3, 5, 10})};
        x.keep_dtype = {false, false, false, true, true};
        x.flag = causal;
        x.desc = causal ? "causal" : "plain";
        s.push_back(x);
      }
      return s;
    };
    rows.push_back(mk(
        "nn.varlen_attention", {OpId::FlashAttentionVarlen, OpId::FlashAttentionVarlenBackward},
        dtypes, samples,
        [](const std::vector<Tensor>& in, const Sample& s) {
          return F::varlen_attention(in[0], in[1], in[2], in[3], in[4], 5, 5, 0.0, s.flag);
        },
        [](const std::vector<Tensor>& in, const Sample& s) {
          const Arr q = arr(in[0]), k = arr(in[1]), v = arr(in[2]);
          const std::vector<int64_t> cq = ints(in[3]), ck = ints(in[4]);
          const int64_t hq = q.shape[1], d = q.shape[2], hk = k.shape[1];
          Vec out(q.v.size(), 0.0);
          for (size_t bi = 0; bi + 1 < cq.size(); ++bi)
            for (int64_t h = 0; h < hq; ++h)
              ref_head(q.v, cq[bi] * hq * d + h * d, hq * d, k.v, v.v,
                       ck[bi] * hk * d + (h / (hq / hk)) * d, hk * d, cq[bi + 1] - cq[bi],
                       ck[bi + 1] - ck[bi], d, s.flag, out);
          return tens(out, q.shape);
        }));
  }
  return rows;
}
KILN_OP_ROWS(attention_rows);

}  // namespace
}  // namespace kiln::testing
