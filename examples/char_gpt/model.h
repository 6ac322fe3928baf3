// A small GPT (decoder-only transformer) for the char_gpt demo: pre-LayerNorm blocks of causal
// self-attention and a GELU MLP, learned position embeddings, weights tied to the token table.
#pragma once

#include <kiln/kiln.h>
#include <kiln/nn/nn.h>

#include <cmath>

namespace char_gpt {

namespace F = kiln::nn::functional;

struct Config {
  int64_t vocab = 0;
  int64_t block = 128;  // context length
  int64_t layers = 4;
  int64_t heads = 4;
  int64_t embd = 128;
  double dropout = 0.0;
};

class CausalSelfAttentionImpl : public kiln::nn::Module {
 public:
  explicit CausalSelfAttentionImpl(const Config& c)
      : Module("CausalSelfAttention"), heads_(c.heads), dropout_(c.dropout) {
    qkv = register_module("qkv", kiln::nn::Linear(c.embd, 3 * c.embd));
    proj = register_module("proj", kiln::nn::Linear(c.embd, c.embd));
  }
  kiln::Tensor forward(const kiln::Tensor& x) {
    const int64_t B = x.size(0), T = x.size(1), C = x.size(2), hd = C / heads_;
    auto parts = kiln::split(qkv(x), C, 2);  // q, k, v: [B, T, C] each
    auto heads = [&](const kiln::Tensor& t) {
      return t.reshape({B, T, heads_, hd}).transpose(1, 2);
    };
    const double p = is_training() ? dropout_ : 0.0;
    kiln::Tensor y = F::scaled_dot_product_attention(heads(parts[0]), heads(parts[1]),
                                                     heads(parts[2]), {}, p, /*is_causal=*/true);
    return proj(y.transpose(1, 2).reshape({B, T, C}));
  }
  kiln::nn::Linear qkv{nullptr}, proj{nullptr};

 private:
  int64_t heads_;
  double dropout_;
};
KILN_MODULE(CausalSelfAttention);

class BlockImpl : public kiln::nn::Module {
 public:
  explicit BlockImpl(const Config& c) : Module("Block"), dropout_(c.dropout) {
    ln1 = register_module("ln1", kiln::nn::LayerNorm(std::vector<int64_t>{c.embd}));
    attn = register_module("attn", CausalSelfAttention(c));
    ln2 = register_module("ln2", kiln::nn::LayerNorm(std::vector<int64_t>{c.embd}));
    fc = register_module("fc", kiln::nn::Linear(c.embd, 4 * c.embd));
    out = register_module("out", kiln::nn::Linear(4 * c.embd, c.embd));
  }
  kiln::Tensor forward(const kiln::Tensor& x) {
    kiln::Tensor h = x + F::dropout(attn(ln1(x)), dropout_, is_training());
    kiln::Tensor m = out(F::gelu(fc(ln2(h)), "tanh"));
    return h + F::dropout(m, dropout_, is_training());
  }
  kiln::nn::LayerNorm ln1{nullptr}, ln2{nullptr};
  CausalSelfAttention attn{nullptr};
  kiln::nn::Linear fc{nullptr}, out{nullptr};

 private:
  double dropout_;
};
KILN_MODULE(Block);

class GPTImpl : public kiln::nn::Module {
 public:
  explicit GPTImpl(const Config& c) : Module("GPT"), cfg(c) {
    wte = register_module("wte", kiln::nn::Embedding(c.vocab, c.embd));
    wpe = register_module("wpe", kiln::nn::Embedding(c.block, c.embd));
    for (int64_t i = 0; i < c.layers; ++i)
      blocks.push_back(register_module("h" + std::to_string(i), Block(c)));
    ln_f = register_module("ln_f", kiln::nn::LayerNorm(std::vector<int64_t>{c.embd}));
    // GPT-2's initialization: N(0, 0.02) everywhere, residual projections scaled by depth.
    kiln::NoGradGuard no_grad;
    for (auto& p : named_parameters()) {
      if (p.value.dim() < 2) continue;
      const bool residual = p.key.ends_with("proj.weight") || p.key.ends_with("out.weight");
      p.value.normal_(0.0, residual ? 0.02 / std::sqrt(2.0 * c.layers) : 0.02);
    }
  }
  // idx [B, T] int64 -> logits [B, T, vocab].
  kiln::Tensor forward(const kiln::Tensor& idx) {
    const int64_t T = idx.size(1);
    KILN_CHECK(T <= cfg.block, "[char_gpt] sequence of ", T, " exceeds the context of ", cfg.block);
    kiln::Tensor pos =
        kiln::arange(T, kiln::TensorOptions().dtype(kiln::kInt64).device(idx.device()));
    kiln::Tensor x = F::dropout(wte(idx) + wpe(pos), cfg.dropout, is_training());
    for (auto& b : blocks) x = b(x);
    return F::linear(ln_f(x), wte->weight);  // tied output projection
  }
  Config cfg;
  kiln::nn::Embedding wte{nullptr}, wpe{nullptr};
  std::vector<Block> blocks;
  kiln::nn::LayerNorm ln_f{nullptr};
};
KILN_MODULE(GPT);

}  // namespace char_gpt
