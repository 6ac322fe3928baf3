// GPU op benchmarks (JSON lines, one per case): float32 add and sum on 2^26 elements, bfloat16
// tanh-GELU on 16384x3072, bfloat16 matmul 8192^3, float32 matmul 4096^3 ("highest" and "high"),
// the fused nn kernels (softmax, layer_norm, cross-entropy, dropout; forward and forward+backward)
// the host cost of a 1-element add, and CUDA-graph (kernel-time) figures of layer_norm; every
// event-timed case also reports its host time per call (host_us). bench/torch_gpu_ops.py runs the
// same cases in PyTorch; bench/run_gpu_bench.sh runs both (and a libtorch program for the host
// cost) and prints ratios. Byte counts are nominal (each tensor read or written once) and equal for
// both frameworks, so the GB/s ratio is the speed ratio.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "gpu_timing.h"
#include "kiln/cuda.h"
#include "kiln/kiln.h"
#include "kiln/nn/functional.h"
#include "kiln/ops/gpu_settings.h"
#include "nn/functional/nn_ops.h"

namespace {

using bench::g_host_us;
using bench::gpu_ms;
using bench::graph_ms;

void emit(const char* name, double ms, const char* unit, double value) {
  std::printf(
      "{\"bench\": \"%s\", \"impl\": \"kiln\", \"ms\": %.5f, \"%s\": %.2f, \"host_us\": %.2f}\n",
      name, ms, unit, value, g_host_us);
  std::fflush(stdout);
}

// Random values (generated on the CPU: the GPU random kernels are not there yet) on the GPU.
kiln::Tensor randn_gpu(kiln::IntArrayRef shape, kiln::DType dt) {
  return kiln::randn(shape).to(dt).to(kiln::Device(kiln::kCUDA, 0));
}

}  // namespace

int main() {
  if (!kiln::cuda::is_available()) {
    std::printf("{\"error\": \"no GPU\"}\n");
    return 0;
  }
  using kiln::DType;
  {
    const int64_t n = int64_t{1} << 26;
    kiln::Tensor a = randn_gpu({n}, DType::Float32), b = randn_gpu({n}, DType::Float32);
    double ms = gpu_ms(50, [&] { (void)kiln::add(a, b); });
    emit("add_f32_2^26", ms, "GB/s", 3.0 * 4 * n / ms / 1e6);
    ms = gpu_ms(50, [&] { (void)a.sum(); });
    emit("sum_f32_2^26", ms, "GB/s", 4.0 * n / ms / 1e6);
  }
  {
    kiln::Tensor x = randn_gpu({16384, 3072}, DType::BFloat16);
    double ms = gpu_ms(50, [&] { (void)kiln::gelu(x, "tanh"); });
    emit("gelu_tanh_bf16_16384x3072", ms, "GB/s", 2.0 * 2 * x.numel() / ms / 1e6);
  }
  {
    // softmax float32 4096x8192 (dim 1): forward, and forward + backward.
    kiln::Tensor x = randn_gpu({4096, 8192}, DType::Float32),
                 g = randn_gpu({4096, 8192}, DType::Float32);
    const double n = static_cast<double>(x.numel());
    double ms = gpu_ms(50, [&] { (void)kiln::detail::softmax_op(x, 1); });
    emit("softmax_f32_4096x8192", ms, "GB/s", 2.0 * 4 * n / ms / 1e6);
    ms = gpu_ms(50, [&] {
      kiln::Tensor y = kiln::detail::softmax_op(x, 1);
      (void)kiln::detail::softmax_backward_op(g, y, 1);
    });
    emit("softmax_fwd_bwd_f32_4096x8192", ms, "GB/s", 5.0 * 4 * n / ms / 1e6);
  }
  {
    // layer_norm bfloat16 16384x768 with weight and bias: forward, and forward + backward
    // (dx, dweight, dbias).
    kiln::Tensor x = randn_gpu({16384, 768}, DType::BFloat16),
                 g = randn_gpu({16384, 768}, DType::BFloat16);
    kiln::Tensor w = randn_gpu({768}, DType::BFloat16), b = randn_gpu({768}, DType::BFloat16);
    const double n = static_cast<double>(x.numel());
    double ms = gpu_ms(100, [&] { (void)kiln::detail::layer_norm_op(x, 768, w, b, 1e-5); });
    emit("layer_norm_bf16_16384x768", ms, "GB/s", 2.0 * 2 * n / ms / 1e6);
    ms = gpu_ms(100, [&] {
      auto [y, mean, rstd] = kiln::detail::layer_norm_op(x, 768, w, b, 1e-5);
      (void)kiln::detail::layer_norm_backward_op(g, x, mean, rstd, 768, w, true);
    });
    emit("layer_norm_fwd_bwd_bf16_16384x768", ms, "GB/s", 5.0 * 2 * n / ms / 1e6);
  }
  {
    // cross-entropy over a GPT-2 vocabulary, bfloat16 logits [16384, 50304], mean reduction:
    // forward, and forward + backward (grad of the logits).
    const int64_t rows = 16384, cls = 50304;
    kiln::Tensor x = randn_gpu({rows, cls}, DType::BFloat16);
    kiln::Tensor t = kiln::randint(0, cls, {rows}).to(kiln::Device(kiln::kCUDA, 0));
    kiln::Tensor one = kiln::ones({}).to(DType::BFloat16).to(kiln::Device(kiln::kCUDA, 0));
    const double n = static_cast<double>(x.numel());
    double ms =
        gpu_ms(10, [&] { (void)kiln::detail::cross_entropy_loss_op(x, t, {}, -100, 1, 0); });
    emit("cross_entropy_bf16_16384x50304", ms, "GB/s", 2.0 * n / ms / 1e6);
    ms = gpu_ms(10, [&] {
      auto [loss, lse] = kiln::detail::cross_entropy_loss_op(x, t, {}, -100, 1, 0);
      (void)kiln::detail::cross_entropy_loss_backward_op(one, x, t, lse, {}, -100, 1, 0);
    });
    emit("cross_entropy_fwd_bwd_bf16_16384x50304", ms, "GB/s", 3.0 * 2 * n / ms / 1e6);
  }
  {
    // dropout p = 0.1 on bfloat16 16384x3072 (output and bool mask).
    kiln::Tensor x = randn_gpu({16384, 3072}, DType::BFloat16);
    const double n = static_cast<double>(x.numel());
    double ms = gpu_ms(50, [&] { (void)kiln::detail::native_dropout_op(x, 0.1); });
    emit("dropout_bf16_16384x3072", ms, "GB/s", 5.0 * n / ms / 1e6);
  }
  {
    const int64_t n = 8192;
    kiln::Tensor a = randn_gpu({n, n}, DType::BFloat16), b = randn_gpu({n, n}, DType::BFloat16);
    double ms = gpu_ms(10, [&] { (void)kiln::matmul(a, b); });
    emit("matmul_bf16_8192", ms, "TFLOP/s", 2.0 * n * n * n / ms / 1e9);
  }
  {
    const int64_t n = 4096;
    kiln::Tensor a = randn_gpu({n, n}, DType::Float32), b = randn_gpu({n, n}, DType::Float32);
    kiln::set_float32_matmul_precision("highest");
    double ms = gpu_ms(10, [&] { (void)kiln::matmul(a, b); });
    emit("matmul_f32_4096_highest", ms, "TFLOP/s", 2.0 * n * n * n / ms / 1e9);
    kiln::set_float32_matmul_precision("high");
    ms = gpu_ms(10, [&] { (void)kiln::matmul(a, b); });
    emit("matmul_f32_4096_high", ms, "TFLOP/s", 2.0 * n * n * n / ms / 1e9);
    kiln::set_float32_matmul_precision("highest");
  }
  {
    // Host cost of a small eager op: 20,000 1-element adds queued back to back, wall time per
    // call (the GPU work of each is tiny; the queue absorbs it).
    kiln::Tensor a = randn_gpu({1}, DType::Float32), b = randn_gpu({1}, DType::Float32);
    for (int i = 0; i < 1000; ++i) (void)kiln::add(a, b);
    kiln::cuda::synchronize();
    std::vector<double> t;
    for (int r = 0; r < 5; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < 20000; ++i) (void)kiln::add(a, b);
      auto t1 = std::chrono::steady_clock::now();
      kiln::cuda::synchronize();
      t.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / 20000);
    }
    double us = bench::median(t);
    std::printf("{\"bench\": \"add_1elem_host_us\", \"impl\": \"kiln\", \"us\": %.3f}\n", us);
  }
  {
    // Kernel-time figures (CUDA graph replay, the host path out of the picture) of the layer_norm
    // cases; last, so that a capture failure cannot cost the other figures.
    kiln::Tensor x = randn_gpu({16384, 768}, DType::BFloat16),
                 g = randn_gpu({16384, 768}, DType::BFloat16);
    kiln::Tensor w = randn_gpu({768}, DType::BFloat16), b = randn_gpu({768}, DType::BFloat16);
    const double n = static_cast<double>(x.numel());
    double ms = graph_ms(20, [&] { (void)kiln::detail::layer_norm_op(x, 768, w, b, 1e-5); });
    emit("layer_norm_bf16_16384x768_graph", ms, "GB/s", 2.0 * 2 * n / ms / 1e6);
    ms = graph_ms(20, [&] {
      auto [y, mean, rstd] = kiln::detail::layer_norm_op(x, 768, w, b, 1e-5);
      (void)kiln::detail::layer_norm_backward_op(g, x, mean, rstd, 768, w, true);
    });
    emit("layer_norm_fwd_bwd_bf16_16384x768_graph", ms, "GB/s", 5.0 * 2 * n / ms / 1e6);
  }
  return 0;
}
