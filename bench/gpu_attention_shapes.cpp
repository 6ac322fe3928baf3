// Kernel tuning probe (JSON lines): GPU time per call of kiln's causal or full bfloat16
// scaled_dot_product_attention for shapes given on the command line, forward only or forward +
// backward (median of 7 samples of 10 calls, CUDA events, after 5 warm-up calls and, with
// KILN_BENCH_WARMUP_S=s, s seconds of calls).
//
//   gpu_attention_shapes fwd|fwdbwd B H T D CAUSAL [B H T D CAUSAL ...]
//
// The kernels' tuning variables (KILN_FLASH_SM90_CFG, KILN_FLASH_SM90_BWD_CFG, ...) pick the
// shapes timed; run it once per setting, interleaved, for A/B comparisons. Built by
// bench/run_attention_bench.sh --build next to gpu_attention_bench.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kiln/cuda.h"
#include "kiln/kiln.h"

int main(int argc, char** argv) {
  namespace F = kiln::nn::functional;
  const bool bwd = argc > 1 && std::strcmp(argv[1], "fwdbwd") == 0;
  if (argc < 7 || (!bwd && std::strcmp(argv[1], "fwd") != 0) || (argc - 2) % 5 != 0) {
    std::fprintf(stderr, "usage: %s fwd|fwdbwd B H T D CAUSAL [B H T D CAUSAL ...]\n", argv[0]);
    return 2;
  }
  const kiln::Device gpu(kiln::kCUDA, 0);
  for (int a = 2; a + 4 < argc; a += 5) {
    const int64_t b = std::atoll(argv[a]), h = std::atoll(argv[a + 1]), t = std::atoll(argv[a + 2]),
                  d = std::atoll(argv[a + 3]);
    const bool causal = std::atoi(argv[a + 4]) != 0;
    auto make = [&](uint64_t seed) {
      kiln::manual_seed(seed);
      return kiln::randn({b, h, t, d}, kiln::TensorOptions(kiln::kFloat32))
          .to(kiln::kBFloat16)
          .to(gpu);
    };
    kiln::Tensor q = make(1), k = make(2), v = make(3), go = make(4);
    if (bwd) {
      q.requires_grad_();
      k.requires_grad_();
      v.requires_grad_();
    }
    auto step = [&] {
      if (!bwd) {
        kiln::NoGradGuard ng;
        F::scaled_dot_product_attention(q, k, v, {}, 0, causal);
        return;
      }
      F::scaled_dot_product_attention(q, k, v, {}, 0, causal).backward(go);
      q.mutable_grad() = {};
      k.mutable_grad() = {};
      v.mutable_grad() = {};
    };
    for (int i = 0; i < 5; ++i) step();
    kiln::cuda::synchronize();
    // KILN_BENCH_WARMUP_S=s: s seconds of calls first, so the samples run at the clocks the GPU
    // holds under its power cap (as in bench/gpu_attention.cpp).
    const char* warm = std::getenv("KILN_BENCH_WARMUP_S");
    const auto w0 = std::chrono::steady_clock::now();
    while (warm && std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count() <
                       std::atof(warm)) {
      for (int i = 0; i < 10; ++i) step();
      kiln::cuda::synchronize();
    }
    std::vector<double> ms;
    for (int r = 0; r < 7; ++r) {
      kiln::cuda::Event e0(true), e1(true);
      e0.record();
      for (int i = 0; i < 10; ++i) step();
      e1.record();
      e1.synchronize();
      ms.push_back(e0.elapsed_time(e1) / 10);
    }
    std::sort(ms.begin(), ms.end());
    const double flops = (bwd ? 3.5 : 1.0) * 4.0 * b * h * t * t * d * (causal ? 0.5 : 1.0);
    std::printf(
        "{\"bench\": \"%s_b%lld_h%lld_t%lld_d%lld%s\", \"impl\": \"kiln\", \"backend\": "
        "\"%s\", \"us\": %.2f, \"tflops\": %.1f}\n",
        bwd ? "fwdbwd" : "fwd", static_cast<long long>(b), static_cast<long long>(h),
        static_cast<long long>(t), static_cast<long long>(d), causal ? "_causal" : "",
        kiln::nn::attention_backend(), ms[3] * 1000, flops / ms[3] / 1e9);
    std::fflush(stdout);
  }
  return 0;
}
