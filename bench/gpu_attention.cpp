// Fused attention benchmark (JSON lines): causal bfloat16 scaled_dot_product_attention, forward
// and forward+backward TFLOP/s at B16 H12 T1024 D64 and B4 H32 T4096 D128.
// bench/torch_gpu_attention.py runs the same cases in PyTorch; bench/run_attention_bench.sh both.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "kiln/cuda.h"
#include "kiln/kiln.h"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Seconds of sustained calls before timing, after the three warm-up calls (KILN_BENCH_WARMUP_S,
// default 0), as in torch_gpu_attention.py: times the clocks the GPU holds under its power cap in
// a long training run (bench/run_attention_bench.sh).
double warmup_s() {
  const char* e = std::getenv("KILN_BENCH_WARMUP_S");
  return e ? std::atof(e) : 0.0;
}

// Median over 5 batches of the GPU time per call of f (events on the current stream), in ms.
double gpu_ms(int iters, const std::function<void()>& f) {
  for (int i = 0; i < 3; ++i) f();
  kiln::cuda::synchronize();
  const auto w0 = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count() <
         warmup_s()) {
    for (int i = 0; i < iters; ++i) f();
    kiln::cuda::synchronize();
  }
  std::vector<double> t;
  for (int r = 0; r < 5; ++r) {
    kiln::cuda::Event a(true), b(true);
    a.record();
    for (int i = 0; i < iters; ++i) f();
    b.record();
    b.synchronize();
    t.push_back(a.elapsed_time(b) / iters);
  }
  return median(t);
}

// KILN_BENCH_ATTN_DETAIL=1: where the time of a forward+backward step goes. GPU time of the
// forward and of the backward (events between them, summed over iters steps), host time to issue
// one step, and the allocator's device allocations / frees / whole-device syncs during the steps.
void step_detail(const char* name, int iters, const std::function<void()>& fwd,
                 const std::function<void()>& bwd) {
  auto stat = [](const char* key) { return kiln::cuda::memory_stats().at(key); };
  fwd();
  bwd();
  kiln::cuda::synchronize();
  const int64_t a0 = stat("num_device_alloc"), f0 = stat("num_device_free");
  const int64_t s0 = stat("num_sync_all_streams");
  std::vector<kiln::cuda::Event> ev;
  for (int i = 0; i < 3 * iters; ++i) ev.emplace_back(true);
  double host_us = 0;
  for (int i = 0; i < iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    ev[3 * i].record();
    fwd();
    ev[3 * i + 1].record();
    bwd();
    ev[3 * i + 2].record();
    host_us +=
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  }
  ev.back().synchronize();
  double f = 0, b = 0, gap = 0;
  for (int i = 0; i < iters; ++i) {
    f += ev[3 * i].elapsed_time(ev[3 * i + 1]);
    b += ev[3 * i + 1].elapsed_time(ev[3 * i + 2]);
    if (i > 0) gap += ev[3 * i - 1].elapsed_time(ev[3 * i]);
  }
  std::printf(
      "{\"detail\": \"%s\", \"fwd_ms\": %.4f, \"bwd_ms\": %.4f, \"between_steps_ms\": %.4f, "
      "\"host_issue_ms\": %.4f, \"device_allocs\": %lld, \"device_frees\": %lld, "
      "\"device_syncs\": %lld}\n",
      name, f / iters, b / iters, iters > 1 ? gap / (iters - 1) : 0.0, host_us / iters / 1000,
      static_cast<long long>(stat("num_device_alloc") - a0),
      static_cast<long long>(stat("num_device_free") - f0),
      static_cast<long long>(stat("num_sync_all_streams") - s0));
  std::fflush(stdout);
}

}  // namespace

int main() {
  const char* detail_env = std::getenv("KILN_BENCH_ATTN_DETAIL");
  const bool detail = detail_env && detail_env[0] == '1';
  namespace F = kiln::nn::functional;
  const kiln::Device gpu(kiln::kCUDA, 0);
  struct Shape {
    int64_t b, h, t, d;
  };
  for (Shape s : {Shape{16, 12, 1024, 64}, Shape{4, 32, 4096, 128}}) {
    auto make = [&](uint64_t seed) {
      kiln::manual_seed(seed);
      return kiln::randn({s.b, s.h, s.t, s.d}, kiln::TensorOptions(kiln::kFloat32))
          .to(kiln::kBFloat16)
          .to(gpu);
    };
    kiln::Tensor q = make(1), k = make(2), v = make(3), go = make(4);
    // Causal: half of the 4 B H T^2 D multiply-adds of the two products (PyTorch's convention);
    // the backward counts 2.5 times the forward.
    const double fwd_flops = 4.0 * s.b * s.h * s.t * s.t * s.d / 2;
    // Steps per timed sample (KILN_BENCH_ITERS overrides, as in torch_gpu_attention.py).
    const char* it_env = std::getenv("KILN_BENCH_ITERS");
    const int iters = it_env && std::atoi(it_env) > 0 ? std::atoi(it_env) : s.t >= 4096 ? 5 : 20;
    char name[64];
    std::snprintf(name, sizeof name, "b%lld_h%lld_t%lld_d%lld", static_cast<long long>(s.b),
                  static_cast<long long>(s.h), static_cast<long long>(s.t),
                  static_cast<long long>(s.d));
    {
      kiln::NoGradGuard ng;
      const double ms =
          gpu_ms(iters, [&] { F::scaled_dot_product_attention(q, k, v, {}, 0, true); });
      std::printf(
          "{\"bench\": \"%s_fwd\", \"impl\": \"kiln\", \"backend\": \"%s\", \"ms\": %.4f, "
          "\"tflops\": %.1f}\n",
          name, kiln::nn::attention_backend(), ms, fwd_flops / ms / 1e9);
      std::fflush(stdout);
    }
    kiln::Tensor qg = q.detach().requires_grad_(), kg = k.detach().requires_grad_(),
                 vg = v.detach().requires_grad_();
    const double ms = gpu_ms(iters, [&] {
      kiln::Tensor o = F::scaled_dot_product_attention(qg, kg, vg, {}, 0, true);
      o.backward(go);
      qg.mutable_grad() = {};
      kg.mutable_grad() = {};
      vg.mutable_grad() = {};
    });
    std::printf(
        "{\"bench\": \"%s_fwdbwd\", \"impl\": \"kiln\", \"backend\": \"%s\", \"ms\": %.4f, "
        "\"tflops\": %.1f}\n",
        name, kiln::nn::attention_backend(), ms, 3.5 * fwd_flops / ms / 1e9);
    std::fflush(stdout);
    if (detail) {
      kiln::Tensor o;
      step_detail(
          name, iters, [&] { o = F::scaled_dot_product_attention(qg, kg, vg, {}, 0, true); },
          [&] {
            o.backward(go);
            o = {};
            qg.mutable_grad() = {};
            kg.mutable_grad() = {};
            vg.mutable_grad() = {};
          });
    }
  }
  return 0;
}
