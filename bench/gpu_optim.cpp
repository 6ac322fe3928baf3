// Optimizer step benchmarks over GPT-2 small's 148 parameter tensors (124M elements), JSON lines:
// AdamW / SGD fused (multi-tensor kernels) vs unfused (kiln ops per tensor), bfloat16 with master
// weights, GradScaler's unscale + inf check and clip_grad_norm_. bench/torch_gpu_optim.py times
// the same cases in PyTorch (fused=True / foreach=True / foreach=False); bench/run_optim_bench.sh
// runs both on the GPU machine and prints the ratios.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <vector>

#include "gpu_timing.h"
#include "kiln/amp.h"
#include "kiln/cuda.h"
#include "kiln/kiln.h"
#include "kiln/nn/utils.h"
#include "kiln/optim/optim.h"

namespace {

using namespace kiln;

// Median over 5 batches after 2 warm-up calls, in ms (bench/gpu_timing.h).
double gpu_ms(int iters, const std::function<void()>& f) { return bench::gpu_ms(iters, f, 2, 5); }

// GPT-2 small (tied embeddings): wte, wpe, 12 blocks, ln_f.
std::vector<std::vector<int64_t>> gpt2_shapes() {
  std::vector<std::vector<int64_t>> s = {{50304, 768}, {1024, 768}};
  for (int l = 0; l < 12; ++l) {
    for (auto v : std::vector<std::vector<int64_t>>{{768},
                                                    {768},
                                                    {2304, 768},
                                                    {2304},
                                                    {768, 768},
                                                    {768},
                                                    {768},
                                                    {768},
                                                    {3072, 768},
                                                    {3072},
                                                    {768, 3072},
                                                    {768}})
      s.push_back(v);
  }
  s.push_back({768});
  s.push_back({768});
  return s;
}

std::vector<Tensor> make_params(DType dt) {
  std::vector<Tensor> ps;
  for (auto& s : gpt2_shapes()) {
    Tensor p = randn(s, TensorOptions(dt).device(Device(kCUDA, 0))).mul_(0.02);
    p.requires_grad_(true);
    p.mutable_grad() = randn(s, TensorOptions(dt).device(Device(kCUDA, 0))).mul_(1e-3);
    ps.push_back(p);
  }
  return ps;
}

int64_t numel_of(const std::vector<Tensor>& ps) {
  int64_t n = 0;
  for (auto& p : ps) n += p.numel();
  return n;
}

void report(const char* name, const std::vector<Tensor>& ps, double bytes_per_elem, double ms) {
  const double n = static_cast<double>(numel_of(ps));
  std::printf(
      "{\"bench\": \"gpu_optim\", \"case\": \"%s\", \"tensors\": %zu, \"elements\": %.0f, "
      "\"ms\": %.4f, \"GBps\": %.1f, \"host_us\": %.1f}\n",
      name, ps.size(), n, ms, n * bytes_per_elem / (ms * 1e6), bench::g_host_us);
  std::fflush(stdout);
}

}  // namespace

int main() {
  if (!cuda::is_available()) {
    std::printf("{\"error\": \"no GPU\"}\n");
    return 0;
  }
  NoGradGuard ng;
  {  // AdamW float32: reads p, g, m, v; writes p, m, v (28 bytes per element).
    for (int fused : {1, 0}) {
      auto ps = make_params(kFloat32);
      optim::AdamW opt(ps, optim::AdamWOptions(1e-4).fused(fused));
      const double ms = gpu_ms(fused ? 20 : 5, [&] { opt.step(); });
      report(fused ? "adamw_fp32_fused" : "adamw_fp32_unfused", ps, 28, ms);
    }
  }
  {  // AdamW bfloat16 params + float32 master: g, p (2+2 bytes), master, m, v (read+write 4 each).
    auto ps = make_params(kBFloat16);
    optim::AdamW opt(ps, optim::AdamWOptions(1e-4).fused(1).master_weights(1));
    const double ms = gpu_ms(20, [&] { opt.step(); });
    report("adamw_bf16_master_fused", ps, 2 + 2 + 24, ms);
  }
  {  // SGD with momentum float32: reads p, g, buf; writes p, buf (20 bytes per element).
    for (int fused : {1, 0}) {
      auto ps = make_params(kFloat32);
      optim::SGD opt(ps, optim::SGDOptions(1e-3).momentum(0.9).fused(fused));
      const double ms = gpu_ms(fused ? 20 : 5, [&] { opt.step(); });
      report(fused ? "sgd_momentum_fp32_fused" : "sgd_momentum_fp32_unfused", ps, 20, ms);
    }
  }
  {  // GradScaler: unscale_ + inf check (read + write the grads, 8 bytes) with its host read.
    auto ps = make_params(kFloat32);
    optim::SGD opt(ps, optim::SGDOptions(1e-3));
    amp::GradScaler scaler(2.0);  // halves the grads per call: 1e-3 * 2^-102 is still normal
    const double ms = gpu_ms(20, [&] {
      scaler.unscale_(opt);
      scaler.update(2.0);
    });
    report("grad_scaler_unscale_fp32", ps, 8, ms);
  }
  {  // clip_grad_norm_: norms (read 4 bytes) then scale (read + write 8 bytes).
    auto ps = make_params(kFloat32);
    const double ms = gpu_ms(20, [&] { nn::utils::clip_grad_norm_(ps, 1e9); });
    report("clip_grad_norm_fp32", ps, 12, ms);
  }
  return 0;
}
