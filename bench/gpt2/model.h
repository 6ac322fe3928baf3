// GPT-2 (124M by default) for the training benchmark: pre-LayerNorm blocks of causal
// self-attention and a tanh-GELU MLP, learned positions, output projection tied to the token
// table. Parameter names equal the state_dict of the PyTorch twin (bench/gpt2/gpt2_torch.py).
#pragma once

#include <kiln/kiln.h>
#include <kiln/nn/nn.h>

#include <cmath>
#include <string>

// F::linear_gelu (bias + tanh-GELU as a cuBLASLt epilogue, with a one-pass backward) where this
// kiln has it; the MLP then runs it unless Config::fused_gelu is off.
#if __has_include(<kiln/nn/functional/fused.h>)
#include <kiln/nn/functional/fused.h>
#define KILN_GPT2_HAS_LINEAR_GELU 1
#endif

namespace gpt2 {

namespace F = kiln::nn::functional;

struct Config {
  int64_t vocab = 50304;
  int64_t block = 1024;  // context length
  int64_t layers = 12;
  int64_t heads = 12;
  int64_t embd = 768;
  bool fused_gelu = true;  // MLP c_fc + GELU through F::linear_gelu when available
};

constexpr bool kHasLinearGelu =
#ifdef KILN_GPT2_HAS_LINEAR_GELU
    true;
#else
    false;
#endif

// attn.c_attn (q, k, v in one matrix) and attn.c_proj, as GPT-2's checkpoints name them.
class AttentionImpl : public kiln::nn::Module {
 public:
  explicit AttentionImpl(const Config& c) : Module("CausalSelfAttention"), heads_(c.heads) {
    c_attn = register_module("c_attn", kiln::nn::Linear(c.embd, 3 * c.embd));
    c_proj = register_module("c_proj", kiln::nn::Linear(c.embd, c.embd));
  }
  kiln::Tensor forward(const kiln::Tensor& x) {
    const int64_t B = x.size(0), T = x.size(1), C = x.size(2), hd = C / heads_;
    auto qkv = kiln::split(c_attn(x), C, 2);  // q, k, v: [B, T, C] each
    auto heads = [&](const kiln::Tensor& t) {
      return t.reshape({B, T, heads_, hd}).transpose(1, 2);  // [B, H, T, hd]
    };
    kiln::Tensor y = F::scaled_dot_product_attention(heads(qkv[0]), heads(qkv[1]), heads(qkv[2]),
                                                     {}, 0.0, /*is_causal=*/true);
    return c_proj(y.transpose(1, 2).reshape({B, T, C}));
  }
  kiln::nn::Linear c_attn{nullptr}, c_proj{nullptr};

 private:
  int64_t heads_;
};
KILN_MODULE(Attention);

class MlpImpl : public kiln::nn::Module {
 public:
  explicit MlpImpl(const Config& c) : Module("MLP"), fused_(c.fused_gelu) {
    c_fc = register_module("c_fc", kiln::nn::Linear(c.embd, 4 * c.embd));
    c_proj = register_module("c_proj", kiln::nn::Linear(4 * c.embd, c.embd));
  }
  kiln::Tensor forward(const kiln::Tensor& x) {
#ifdef KILN_GPT2_HAS_LINEAR_GELU
    if (fused_) return c_proj(F::linear_gelu(x, c_fc->weight, c_fc->bias, "tanh"));
#endif
    return c_proj(F::gelu(c_fc(x), "tanh"));
  }
  kiln::nn::Linear c_fc{nullptr}, c_proj{nullptr};

 private:
  bool fused_;
};
KILN_MODULE(Mlp);

class BlockImpl : public kiln::nn::Module {
 public:
  explicit BlockImpl(const Config& c) : Module("Block") {
    ln_1 = register_module("ln_1", kiln::nn::LayerNorm(std::vector<int64_t>{c.embd}));
    attn = register_module("attn", Attention(c));
    ln_2 = register_module("ln_2", kiln::nn::LayerNorm(std::vector<int64_t>{c.embd}));
    mlp = register_module("mlp", Mlp(c));
  }
  kiln::Tensor forward(const kiln::Tensor& x) {
    kiln::Tensor h = x + attn(ln_1(x));
    return h + mlp(ln_2(h));
  }
  kiln::nn::LayerNorm ln_1{nullptr}, ln_2{nullptr};
  Attention attn{nullptr};
  Mlp mlp{nullptr};
};
KILN_MODULE(Block);

// "transformer.wte", "transformer.h.<i>", ... as nanoGPT's GPT.transformer ModuleDict.
class TransformerImpl : public kiln::nn::Module {
 public:
  explicit TransformerImpl(const Config& c) : Module("Transformer") {
    wte = register_module("wte", kiln::nn::Embedding(c.vocab, c.embd));
    wpe = register_module("wpe", kiln::nn::Embedding(c.block, c.embd));
    h = register_module("h", kiln::nn::ModuleList());
    for (int64_t i = 0; i < c.layers; ++i) {
      blocks.push_back(Block(c));
      h->push_back(blocks.back());
    }
    ln_f = register_module("ln_f", kiln::nn::LayerNorm(std::vector<int64_t>{c.embd}));
  }
  kiln::nn::Embedding wte{nullptr}, wpe{nullptr};
  kiln::nn::ModuleList h{nullptr};
  std::vector<Block> blocks;
  kiln::nn::LayerNorm ln_f{nullptr};
};
KILN_MODULE(Transformer);

class GPTImpl : public kiln::nn::Module {
 public:
  explicit GPTImpl(const Config& c) : Module("GPT"), cfg(c) {
    transformer = register_module("transformer", Transformer(c));
  }
  // GPT-2's initialization (nanoGPT's _init_weights): weights N(0, 0.02), the residual
  // projections (*.c_proj.weight) N(0, 0.02 / sqrt(2 * layers)), biases 0, LayerNorm 1 / 0.
  void init_weights() {
    kiln::NoGradGuard no_grad;
    for (auto& p : named_parameters()) {
      const std::string& name = p.key;
      if (name.find(".ln_") != std::string::npos || name.ends_with("ln_f.weight") ||
          name.ends_with("ln_f.bias")) {
        if (name.ends_with(".weight"))
          p.value.fill_(1.0);
        else
          p.value.zero_();
      } else if (name.ends_with(".bias")) {
        p.value.zero_();
      } else {
        const bool residual = name.ends_with("c_proj.weight");
        p.value.normal_(0.0,
                        residual ? 0.02 / std::sqrt(2.0 * static_cast<double>(cfg.layers)) : 0.02);
      }
    }
  }
  // idx [B, T] int64 -> logits [B, T, vocab].
  kiln::Tensor forward(const kiln::Tensor& idx) {
    const int64_t T = idx.size(1);
    KILN_CHECK(T <= cfg.block, "[gpt2] sequence of ", T, " exceeds the context of ", cfg.block);
    kiln::Tensor pos =
        kiln::arange(T, kiln::TensorOptions().dtype(kiln::kInt64).device(idx.device()));
    auto& tr = *transformer;
    kiln::Tensor x = tr.wte(idx) + tr.wpe(pos);
    for (auto& b : tr.blocks) x = b(x);
    return F::linear(tr.ln_f(x), tr.wte->weight);  // tied output projection
  }
  // Parameters without the position table (nanoGPT's get_num_params(non_embedding=True)).
  int64_t num_params(bool non_embedding) {
    int64_t n = 0;
    for (auto& p : parameters()) n += p.numel();
    return non_embedding ? n - transformer->wpe->weight.numel() : n;
  }
  Config cfg;
  Transformer transformer{nullptr};
};
KILN_MODULE(GPT);

}  // namespace gpt2
