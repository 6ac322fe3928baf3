// kiln_bench_gpt2: trains GPT-2 (124M by default) with bf16 autocast and AdamW and prints JSON
// lines: per-step losses and a summary (ms/step, tokens/s, MFU, peak memory). Its PyTorch twin
// is bench/gpt2/gpt2_torch.py; bench/run_gpt2_bench.sh runs both. `--help` lists the flags.
#include <kiln/autograd.h>
#include <kiln/cuda.h>
#include <kiln/kiln.h>
#include <kiln/nn/nn.h>
#include <kiln/optim/optim.h>
#include <kiln/serialize.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model.h"
#include "op_stats.h"

#ifdef KILN_GPT2_CUDA_PROFILER
// cudaProfilerStart/Stop of the CUDA runtime kiln links (cuda_profiler_api.h): they bracket the
// one step that `ncu --profile-from-start off` records in --profile mode.
extern "C" int cudaProfilerStart(void);
extern "C" int cudaProfilerStop(void);
#endif

namespace {

using Clock = std::chrono::steady_clock;
namespace F = kiln::nn::functional;

// Dense bf16 tensor-core peak of the H100 / H200 SXM (989.4 TFLOP/s without sparsity): the MFU
// denominator, as in the PyTorch twin.
constexpr double kPeakFlops = 989.4e12;
constexpr const char* kPeakName = "H100/H200 SXM dense bf16 (989.4 TFLOP/s)";

const char* kHelp = R"(kiln_bench_gpt2: GPT-2 training benchmark (JSON lines on stdout).
  --batch N (16) --seq N (1024)         sequences per step and their length
  --warmup N (10) --steps N (20)        untimed steps, then timed steps (losses of all are kept)
  --layers N (12) --heads N (12) --embd N (768) --vocab N (50304) --block N (max(seq, 1024))
  --device D (cuda)                     cuda | cpu
  --weights PATH                        initial weights (safetensors, names of gpt2_torch.py)
  --tokens PATH                         int32 tokens: rows of seq + 1, step s takes rows
                                        [s*batch, (s+1)*batch) modulo the row count (default:
                                        one batch of uniform random tokens, reused)
  --losses-out PATH                     writes {"framework", "losses": [...]} as JSON
  --print-losses                        one {"step", "loss"} line per step
  --no-autocast                         float32 throughout (default: bf16 autocast)
  --ce-fp32                             cross-entropy on a float32 copy of the logits, as PyTorch's
                                        autocast makes (default: the fused loss reads the bf16
                                        logits and returns a float32 loss)
  --no-fused                            AdamW without the fused multi-tensor step
  --no-fused-gelu                       MLP as Linear + F::gelu (default: F::linear_gelu, bias
                                        and GELU in the GEMM's epilogue, where kiln has it)
  --lr X (6e-4) --seed N (1337)
  --lr-warmup N (0)                     linear learning-rate warmup: lr * (s + 1) / N for s < N
  --profile                             after the warmup, one step between cudaProfilerStart and
                                        cudaProfilerStop (for ncu --profile-from-start off), no
                                        timed steps
  --op-stats                            after the warmup, one step with per-op counts and times
                                        (GPU: timing events around each op) as JSON lines
  --threads N                           CPU threads
)";

struct Flags {
  std::map<std::string, std::string> v;
  bool has(const std::string& k) const { return v.count(k) != 0; }
  std::string get(const std::string& k, const std::string& d) const {
    auto it = v.find(k);
    return it == v.end() ? d : it->second;
  }
  int64_t i(const std::string& k, int64_t d) const { return has(k) ? std::stoll(v.at(k)) : d; }
  double f(const std::string& k, double d) const { return has(k) ? std::stod(v.at(k)) : d; }
};

Flags parse(int argc, char** argv) {
  static const char* kSwitches[] = {"no-autocast", "print-losses", "profile",      "ce-fp32",
                                    "no-fused",    "op-stats",     "no-fused-gelu"};
  Flags fl;
  for (int a = 1; a < argc; ++a) {
    std::string s = argv[a];
    if (s == "--help" || s == "-h") {
      std::cout << kHelp;
      std::exit(0);
    }
    KILN_CHECK(s.rfind("--", 0) == 0, "[gpt2] unexpected argument '", s, "' (try --help)");
    s = s.substr(2);
    bool sw = false;
    for (const char* k : kSwitches) sw = sw || s == k;
    if (auto eq = s.find('='); eq != std::string::npos) {
      fl.v[s.substr(0, eq)] = s.substr(eq + 1);
    } else if (sw) {
      fl.v[s] = "1";
    } else {
      KILN_CHECK(a + 1 < argc, "[gpt2] flag --", s, " needs a value");
      fl.v[s] = argv[++a];
    }
  }
  return fl;
}

// The token file as int64 rows [rows, seq + 1] on `dev`.
kiln::Tensor load_tokens(const std::string& path, int64_t seq, int64_t vocab, kiln::Device dev) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  KILN_CHECK(in.good(), "[gpt2] cannot open --tokens ", path);
  const auto bytes = static_cast<int64_t>(in.tellg());
  KILN_CHECK(bytes % 4 == 0, "[gpt2] ", path, " is not a file of int32 tokens");
  std::vector<int32_t> tok(static_cast<size_t>(bytes / 4));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(tok.data()), bytes);
  const int64_t rows = static_cast<int64_t>(tok.size()) / (seq + 1);
  KILN_CHECK(rows > 0, "[gpt2] ", path, " holds fewer than seq + 1 = ", seq + 1, " tokens");
  tok.resize(static_cast<size_t>(rows * (seq + 1)));
  for (int32_t t : tok)
    KILN_CHECK(t >= 0 && t < vocab, "[gpt2] token ", t, " outside the vocabulary of ", vocab);
  return kiln::from_vector(tok, {rows, seq + 1}).to(kiln::kInt64).to(dev);
}

// AdamWOptions::fused(1) when this kiln has the fused multi-tensor AdamW, else the options as
// they are (a template so that the check compiles either way).
template <class O>
O maybe_fused(O o, bool& fused) {
  if constexpr (requires { o.fused(1); }) {
    fused = true;
    return o.fused(1);
  } else {
    fused = false;
    return o;
  }
}

std::string json_num(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

}  // namespace

int main(int argc, char** argv) try {
  const Flags fl = parse(argc, argv);
  const kiln::Device dev(fl.get("device", "cuda"));
  const bool gpu = dev.is_cuda();
  if (fl.has("threads")) kiln::set_num_threads(static_cast<int>(fl.i("threads", 0)));
  kiln::manual_seed(static_cast<uint64_t>(fl.i("seed", 1337)));

  gpt2::Config cfg;
  cfg.layers = fl.i("layers", 12);
  cfg.heads = fl.i("heads", 12);
  cfg.embd = fl.i("embd", 768);
  cfg.vocab = fl.i("vocab", 50304);
  cfg.fused_gelu = gpt2::kHasLinearGelu && !fl.has("no-fused-gelu");
  const int64_t B = fl.i("batch", 16), T = fl.i("seq", 1024);
  cfg.block = fl.i("block", std::max<int64_t>(T, 1024));
  const int64_t warmup = fl.i("warmup", 10), steps = fl.i("steps", 20);
  const bool autocast = !fl.has("no-autocast"), ce_fp32 = fl.has("ce-fp32");
  const bool profile = fl.has("profile");
  const double lr = fl.f("lr", 6e-4);
  KILN_CHECK(cfg.embd % cfg.heads == 0, "[gpt2] --embd ", cfg.embd,
             " must be a multiple of --heads ", cfg.heads);
  KILN_CHECK(B > 0 && T > 0 && T <= cfg.block && warmup >= 0 && steps >= 0,
             "[gpt2] bad --batch/--seq/--warmup/--steps");
#ifndef KILN_GPT2_CUDA_PROFILER
  KILN_CHECK(!profile, "[gpt2] --profile needs a CUDA build of the benchmark");
#endif

  gpt2::GPT model(cfg);
  model->to(dev);
  if (fl.has("weights"))
    kiln::load(*model, fl.get("weights", ""));  // strict: every name must match
  else
    model->init_weights();
  const int64_t n_params = model->num_params(false), n_flops = model->num_params(true);

  // Weight decay on the 2-D weights only (matrices and embeddings), as nanoGPT.
  std::vector<kiln::Tensor> decay, no_decay;
  for (auto& p : model->parameters()) (p.dim() >= 2 ? decay : no_decay).push_back(p);
  bool fused = false;
  const bool want_fused = !fl.has("no-fused");
  auto opts = [&](double wd) {
    auto o = kiln::optim::AdamWOptions(lr).betas({0.9, 0.95}).eps(1e-8).weight_decay(wd);
    if (!want_fused) return o;
    return maybe_fused(o, fused);
  };
  kiln::optim::AdamW opt(
      std::vector<kiln::optim::ParamGroup>{kiln::optim::ParamGroup(decay, opts(0.1)),
                                           kiln::optim::ParamGroup(no_decay, opts(0.0))},
      opts(0.0));

  // Data: the token file's rows on the device, or one batch of uniform random tokens.
  kiln::Tensor rows;
  if (fl.has("tokens")) {
    rows = load_tokens(fl.get("tokens", ""), T, cfg.vocab, dev);
    KILN_CHECK(rows.size(0) % B == 0, "[gpt2] the token file holds ", rows.size(0),
               " rows, not a multiple of --batch ", B);
  } else {
    rows = kiln::randint(cfg.vocab, {B, T + 1}, kiln::TensorOptions(kiln::kInt64).device(dev));
  }
  const int64_t n_batches = rows.size(0) / B;

  std::vector<kiln::Tensor> losses;
  gpt2::OpStats* stats = nullptr;  // --op-stats: marks the phases of the recorded step
  auto phase = [&](const char* p) {
    if (stats) stats->phase(p);
  };
  const int64_t lr_warmup = fl.i("lr-warmup", 0);
  auto train_step = [&](int64_t s) {
    if (lr_warmup > 0)
      for (auto& g : opt.param_groups())
        g.set_lr(lr * std::min(1.0, static_cast<double>(s + 1) / static_cast<double>(lr_warmup)));
    phase("fwd");
    const int64_t b = s % n_batches;
    kiln::Tensor batch = rows.narrow(0, b * B, B);
    kiln::Tensor x = batch.narrow(1, 0, T), y = batch.narrow(1, 1, T).reshape({B * T});
    kiln::Tensor loss;
    {
      std::optional<kiln::amp::autocast> ac;
      if (autocast) ac.emplace(dev.type, kiln::kBFloat16);
      kiln::Tensor logits = model(x).reshape({B * T, cfg.vocab});
      // Under autocast the fused loss reads the bf16 logits as they are and returns a float32
      // loss (Note [autocast cross-entropy]); --ce-fp32 makes the float32 copy of the logits
      // that PyTorch's autocast makes.
      loss = F::cross_entropy(ce_fp32 && autocast ? logits.to(kiln::kFloat32) : logits, y);
    }
    phase("bwd");
    opt.zero_grad();
    loss.backward();
    phase("opt");
    opt.step();
    losses.push_back(loss.detach());
  };

  for (int64_t s = 0; s < warmup; ++s) train_step(s);
  if (gpu) {
    kiln::cuda::synchronize();
    kiln::cuda::reset_peak_memory_stats();
  }
  if (fl.has("op-stats")) {
    gpt2::OpStats st(gpu);
    stats = &st;
    st.start();
    const auto h0 = Clock::now();
    train_step(warmup);
    const double host_ms = std::chrono::duration<double, std::milli>(Clock::now() - h0).count();
    st.stop();
    if (gpu) kiln::cuda::synchronize();
    const double wall_ms = std::chrono::duration<double, std::milli>(Clock::now() - h0).count();
    std::printf("{\"op_stats\":\"step\",\"host_ms\":%.3f,\"wall_ms\":%.3f}\n", host_ms, wall_ms);
    st.print(40);
    return 0;
  }
  if (profile) {
#ifdef KILN_GPT2_CUDA_PROFILER
    cudaProfilerStart();
    train_step(warmup);
    kiln::cuda::synchronize();
    cudaProfilerStop();
#endif
    std::printf("{\"framework\":\"kiln\",\"profiled_step\":%lld}\n",
                static_cast<long long>(warmup));
    return 0;
  }
  // Allocator traffic over the timed steps: the caching allocator should serve every request
  // from its cache after the warmup (device allocations or frees here stall the stream).
  std::map<std::string, int64_t> mem0;
  if (gpu) mem0 = kiln::cuda::memory_stats();
  const auto t0 = Clock::now();
  for (int64_t s = warmup; s < warmup + steps; ++s) train_step(s);
  if (gpu) kiln::cuda::synchronize();
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  if (gpu) {
    auto mem1 = kiln::cuda::memory_stats();
    std::printf("{\"framework\":\"kiln\",\"alloc_stats_timed_steps\":{");
    const char* keys[] = {"num_device_alloc", "num_device_free", "num_sync_all_streams",
                          "num_alloc_retries", "allocation.all.allocated"};
    for (size_t k = 0; k < std::size(keys); ++k)
      std::printf("%s\"%s\":%lld", k ? "," : "", keys[k],
                  static_cast<long long>(mem1[keys[k]] - mem0[keys[k]]));
    std::printf("}}\n");
  }

  std::vector<double> loss_values;
  for (auto& l : losses) loss_values.push_back(l.item<double>());
  if (fl.has("print-losses"))
    for (size_t s = 0; s < loss_values.size(); ++s)
      std::printf("{\"framework\":\"kiln\",\"step\":%zu,\"loss\":%s}\n", s,
                  json_num(loss_values[s]).c_str());
  if (fl.has("losses-out")) {
    std::ofstream out(fl.get("losses-out", ""));
    KILN_CHECK(out.good(), "[gpt2] cannot write --losses-out ", fl.get("losses-out", ""));
    out << "{\"framework\":\"kiln\",\"autocast\":" << (autocast ? "true" : "false")
        << ",\"losses\":[";
    for (size_t s = 0; s < loss_values.size(); ++s)
      out << (s ? "," : "") << json_num(loss_values[s]);
    out << "]}\n";
  }

  const double ms = steps > 0 ? 1e3 * secs / static_cast<double>(steps) : 0.0;
  const double tok_s = ms > 0 ? static_cast<double>(B * T) / (ms * 1e-3) : 0.0;
  // nanoGPT's estimate_mfu: 6 N + 12 L H Q T flops per token (forward and backward).
  const double flops_per_token =
      6.0 * static_cast<double>(n_flops) + 12.0 * static_cast<double>(cfg.layers * cfg.heads) *
                                               static_cast<double>(cfg.embd / cfg.heads) *
                                               static_cast<double>(T);
  const double mfu = gpu ? flops_per_token * tok_s / kPeakFlops : 0.0;
  const size_t peak_mem = gpu ? kiln::cuda::max_memory_allocated() : 0;
  std::printf(
      "{\"framework\":\"kiln\",\"device\":\"%s\",\"batch\":%lld,\"seq\":%lld,\"warmup\":%lld,"
      "\"steps\":%lld,\"ms_per_step\":%s,\"tokens_per_s\":%s,\"mfu\":%s,\"mfu_peak\":\"%s\","
      "\"peak_mem_bytes\":%zu,\"params\":%lld,\"params_mfu\":%lld,\"autocast\":%s,"
      "\"fused_adamw\":%s,\"linear_gelu\":%s,\"ce_logits\":\"%s\",\"final_loss\":%s}\n",
      gpu ? kiln::cuda::get_device_name().c_str() : "cpu", static_cast<long long>(B),
      static_cast<long long>(T), static_cast<long long>(warmup), static_cast<long long>(steps),
      json_num(ms).c_str(), json_num(tok_s).c_str(), json_num(mfu).c_str(),
      gpu ? kPeakName : "none (cpu)", peak_mem, static_cast<long long>(n_params),
      static_cast<long long>(n_flops), autocast ? "true" : "false", fused ? "true" : "false",
      cfg.fused_gelu ? "true" : "false",
      !autocast ? "fp32"
      : ce_fp32 ? "fp32 (cast, as PyTorch)"
                : "bf16 (fused, fp32 loss)",
      json_num(loss_values.empty() ? 0.0 : loss_values.back()).c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "kiln_bench_gpt2: %s\n", e.what());
  return 1;
}
