// End-to-end check (DESIGN.md §9): a tiny MLP (SGD with momentum) and a tiny GPT block (AdamW)
// train 10 steps from closed-form weights and data; the losses must match PyTorch's, recorded by
// scripts/record_e2e_losses.py into tests/nn/data/e2e_losses.json (same formulas on both sides).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kiln/autograd.h"
#include "kiln/nn/nn.h"
#include "kiln/ops.h"
#include "kiln/optim/optim.h"

using namespace kiln;
namespace F = kiln::nn::functional;

namespace {

constexpr int kSteps = 10;
constexpr int64_t kVocab = 11, kCtx = 8, kWidth = 16, kHeads = 2, kBatch = 4;

// The reference file sits beside this source file (no CMake change needed to find it).
// e2e_losses.json: PyTorch on the GPU machine's cpu; e2e_losses_cuda.json: on its GPU (TF32 off).
std::filesystem::path losses_path(const char* file = "e2e_losses.json") {
  return std::filesystem::path(__FILE__).parent_path() / "data" / file;
}

// Reads the number array under "key" from the recorded JSON (a flat object of arrays).
std::vector<double> read_losses(const std::string& key, const char* file = "e2e_losses.json") {
  std::ifstream f(losses_path(file));
  if (!f) {
    ADD_FAILURE() << "missing reference file " << losses_path(file)
                  << " (run scripts/record_e2e_losses.py)";
    return {};
  }
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string s = ss.str();
  const size_t k = s.find("\"" + key + "\"");
  if (k == std::string::npos) {
    ADD_FAILURE() << "key " << key << " not in " << losses_path(file);
    return {};
  }
  const size_t open = s.find('[', k), close = s.find(']', k);
  std::vector<double> out;
  std::stringstream body(s.substr(open + 1, close - open - 1));
  std::string item;
  while (std::getline(body, item, ',')) out.push_back(std::stod(item));
  return out;
}

// Closed-form weights (see the script's header): parameter k of `names`, element i.
void fill_params(nn::Module& m, const std::vector<std::string>& names, DType dt) {
  auto params = m.named_parameters();
  ASSERT_EQ(params.size(), names.size());
  NoGradGuard ng;
  for (size_t k = 0; k < names.size(); ++k) {
    ASSERT_TRUE(params.contains(names[k])) << names[k];
    Tensor p = params[names[k]];
    const bool ln_weight = names[k].starts_with("ln") && names[k].ends_with(".weight");
    std::vector<double> v(p.numel());
    for (size_t i = 0; i < v.size(); ++i) {
      const double s = std::sin(0.37 * static_cast<double>(i) + 1.1 * static_cast<double>(k) + 0.5);
      v[i] = ln_weight ? 1.0 + 0.1 * s : 0.3 * s;
    }
    p.copy_(from_vector(v, p.sizes()).to(dt));
  }
}

std::vector<double> train_mlp(DType dt) {
  nn::Sequential model(nn::Linear(8, 32), nn::Tanh(), nn::Linear(32, 32), nn::GELU(),
                       nn::Linear(32, 4));
  model->to(dt);
  fill_params(*model.ptr(), {"0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"}, dt);
  std::vector<double> xv, yv;
  for (int n = 0; n < 16; ++n) {
    for (int j = 0; j < 8; ++j) xv.push_back(std::sin(0.5 * n + 0.3 * j + 0.1));
    for (int o = 0; o < 4; ++o) yv.push_back(0.5 * std::cos(0.7 * n + 1.3 * o));
  }
  Tensor x = from_vector(xv, {16, 8}).to(dt), y = from_vector(yv, {16, 4}).to(dt);
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.1).momentum(0.9).weight_decay(1e-3));
  std::vector<double> losses;
  for (int s = 0; s < kSteps; ++s) {
    opt.zero_grad();
    Tensor loss = F::mse_loss(model(x), y);
    loss.backward();
    opt.step();
    losses.push_back(loss.item<double>());
  }
  return losses;
}

// The script's TinyGPT: one pre-LayerNorm block, explicit causal attention, separate head.
class TinyGPTImpl : public nn::Module {
 public:
  TinyGPTImpl() : Module("TinyGPT") {
    wte = register_module("wte", nn::Embedding(kVocab, kWidth));
    wpe = register_module("wpe", nn::Embedding(kCtx, kWidth));
    ln1 = register_module("ln1", nn::LayerNorm(std::vector<int64_t>{kWidth}));
    qkv = register_module("qkv", nn::Linear(kWidth, 3 * kWidth));
    proj = register_module("proj", nn::Linear(kWidth, kWidth));
    ln2 = register_module("ln2", nn::LayerNorm(std::vector<int64_t>{kWidth}));
    fc = register_module("fc", nn::Linear(kWidth, 4 * kWidth));
    out = register_module("out", nn::Linear(4 * kWidth, kWidth));
    ln_f = register_module("ln_f", nn::LayerNorm(std::vector<int64_t>{kWidth}));
    head = register_module("head", nn::Linear(kWidth, kVocab, false));
  }
  Tensor forward(const Tensor& idx) {
    const int64_t B = idx.size(0), T = idx.size(1), C = kWidth, hd = C / kHeads;
    Tensor pos = arange(T, TensorOptions(kInt64));
    Tensor x = wte(idx) + wpe(pos);
    auto parts = kiln::split(qkv(ln1(x)), C, 2);
    auto heads = [&](const Tensor& t) { return t.reshape({B, T, kHeads, hd}).transpose(1, 2); };
    Tensor q = heads(parts[0]), k = heads(parts[1]), v = heads(parts[2]);
    Tensor att = kiln::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(hd)));
    Tensor mask = ones({T, T}, TensorOptions(kBool)).triu(1);
    att = F::softmax(att.masked_fill(mask, -INFINITY), -1);
    Tensor y = kiln::matmul(att, v).transpose(1, 2).reshape({B, T, C});
    x = x + proj(y);
    x = x + out(F::gelu(fc(ln2(x)), "tanh"));
    return head(ln_f(x));
  }
  nn::Embedding wte{nullptr}, wpe{nullptr};
  nn::LayerNorm ln1{nullptr}, ln2{nullptr}, ln_f{nullptr};
  nn::Linear qkv{nullptr}, proj{nullptr}, fc{nullptr}, out{nullptr}, head{nullptr};
};
KILN_MODULE(TinyGPT);

std::vector<double> train_gpt(DType dt) {
  TinyGPT model;
  model->to(dt);
  fill_params(*model.ptr(),
              {"wte.weight", "wpe.weight", "ln1.weight", "ln1.bias", "qkv.weight", "qkv.bias",
               "proj.weight", "proj.bias", "ln2.weight", "ln2.bias", "fc.weight", "fc.bias",
               "out.weight", "out.bias", "ln_f.weight", "ln_f.bias", "head.weight"},
              dt);
  std::vector<int64_t> tok;
  for (int64_t b = 0; b < kBatch; ++b)
    for (int64_t t = 0; t <= kCtx; ++t)
      tok.push_back((3 * b + 5 * t + b * t + (b * t * t) / 3) % kVocab);
  Tensor all = from_vector(tok, {kBatch, kCtx + 1});
  Tensor inp = all.narrow(1, 0, kCtx), tgt = all.narrow(1, 1, kCtx);
  optim::AdamW opt(model->parameters(),
                   optim::AdamWOptions(1e-2).betas({0.9, 0.95}).eps(1e-8).weight_decay(0.1));
  std::vector<double> losses;
  for (int s = 0; s < kSteps; ++s) {
    opt.zero_grad();
    Tensor logits = model(inp);
    Tensor loss = F::cross_entropy(logits.reshape({-1, kVocab}), tgt.reshape({-1}));
    loss.backward();
    opt.step();
    losses.push_back(loss.item<double>());
  }
  return losses;
}

// Note [e2e tolerances]: in float64 both frameworks compute the same formulas with rounding
// errors ~1e-16 per op, amplified over 10 optimizer steps by at most a few orders of magnitude
// (the recorded float32 and float64 PyTorch curves agree to ~5e-7 relative, so the dynamics are
// well conditioned): rtol 1e-9 leaves a wide margin yet catches any formula difference (a wrong
// eps, bias correction or weight-decay rule moves the loss by >1e-4). In float32 each framework
// rounds differently (summation order in GEMM and reductions, ~1e-7 per op); the recorded
// float32-vs-float64 gap is ~5e-7, so rtol 2e-5 is ~40x that gap.
void expect_close(const std::vector<double>& got, const std::vector<double>& want, double rtol,
                  const char* what) {
  ASSERT_EQ(want.size(), static_cast<size_t>(kSteps)) << what;
  ASSERT_EQ(got.size(), want.size()) << what;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], rtol * std::abs(want[i])) << what << " step " << i;
    worst = std::max(worst, std::abs(got[i] - want[i]) / std::abs(want[i]));
  }
  std::printf("[e2e] %s: largest relative difference to PyTorch %.2e (rtol %.0e)\n", what, worst,
              rtol);
}

}  // namespace

TEST(E2eTraining, ReferenceFilesArePresent) {
  for (const char* f : {"e2e_losses.json", "e2e_losses_cuda.json"})
    ASSERT_TRUE(std::filesystem::exists(losses_path(f)))
        << losses_path(f) << " is missing: run scripts/record_e2e_losses.py [--cuda]";
}

TEST(E2eTraining, MlpSgdMomentumFloat64MatchesPyTorch) {
  expect_close(train_mlp(kFloat64), read_losses("mlp_float64"), 1e-9, "mlp float64");
}

TEST(E2eTraining, MlpSgdMomentumFloat32MatchesPyTorch) {
  expect_close(train_mlp(kFloat32), read_losses("mlp_float32"), 2e-5, "mlp float32");
}

TEST(E2eTraining, GptAdamWFloat64MatchesPyTorch) {
  expect_close(train_gpt(kFloat64), read_losses("gpt_float64"), 1e-9, "gpt float64");
}

TEST(E2eTraining, GptAdamWFloat32MatchesPyTorch) {
  expect_close(train_gpt(kFloat32), read_losses("gpt_float32"), 2e-5, "gpt float32");
}

// The same kiln cpu runs against PyTorch's curves recorded on the GPU (different kernels and
// summation orders there: the float32 tolerance argument above holds unchanged).
TEST(E2eTraining, MatchesPyTorchCudaRecording) {
  const char* f = "e2e_losses_cuda.json";
  expect_close(train_mlp(kFloat64), read_losses("mlp_float64", f), 1e-9, "mlp float64 (cuda)");
  expect_close(train_mlp(kFloat32), read_losses("mlp_float32", f), 2e-5, "mlp float32 (cuda)");
  expect_close(train_gpt(kFloat64), read_losses("gpt_float64", f), 1e-9, "gpt float64 (cuda)");
  expect_close(train_gpt(kFloat32), read_losses("gpt_float32", f), 2e-5, "gpt float32 (cuda)");
}
