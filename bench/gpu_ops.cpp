// GPU op benchmarks (JSON lines, one per case): float32 add and sum on 2^26 elements, bfloat16
// tanh-GELU on 16384x3072, bfloat16 matmul 8192^3, float32 matmul 4096^3 ("highest" and "high"),
// and the host cost of a 1-element add. bench/torch_gpu_ops.py runs the same cases in PyTorch;
// bench/run_gpu_bench.sh runs both (and a libtorch program for the host cost) and prints ratios.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "kiln/cuda.h"
#include "kiln/kiln.h"
#include "kiln/ops/gpu_settings.h"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median over 7 batches of the GPU time per call of f (events on the current stream), in ms.
double gpu_ms(int iters, const std::function<void()>& f) {
  for (int i = 0; i < 3; ++i) f();  // warm-up: algorithm choice, allocator, module load
  kiln::cuda::synchronize();
  std::vector<double> t;
  for (int r = 0; r < 7; ++r) {
    kiln::cuda::Event a(true), b(true);
    a.record();
    for (int i = 0; i < iters; ++i) f();
    b.record();
    b.synchronize();
    t.push_back(a.elapsed_time(b) / iters);
  }
  return median(t);
}

void emit(const char* name, double ms, const char* unit, double value) {
  std::printf("{\"bench\": \"%s\", \"impl\": \"kiln\", \"ms\": %.5f, \"%s\": %.2f}\n", name, ms,
              unit, value);
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
    double us = median(t);
    std::printf("{\"bench\": \"add_1elem_host_us\", \"impl\": \"kiln\", \"us\": %.3f}\n", us);
  }
  return 0;
}
