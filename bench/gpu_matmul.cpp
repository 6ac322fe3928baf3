// GPU matmul throughput (JSON lines): bfloat16 8192^3 and float32 4096^3 ("highest" and "high"),
// as bench/torch_gpu_matmul.py measures them in PyTorch; run side by side by
// bench/run_host_cost_bench.sh, which prints the ratios.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <vector>

#include "gpu_timing.h"
#include "kiln/cuda.h"
#include "kiln/kiln.h"
#include "kiln/ops/gpu_settings.h"

namespace {

// Median over 9 batches after 5 warm-up calls (algorithm choice, workspace, clocks), in ms.
double gpu_ms(int iters, const std::function<void()>& f) { return bench::gpu_ms(iters, f, 5, 9); }

void emit(const char* name, double ms, double tflops) {
  std::printf("{\"bench\": \"%s\", \"impl\": \"kiln\", \"ms\": %.5f, \"TFLOP/s\": %.2f}\n", name,
              ms, tflops);
  std::fflush(stdout);
}

// Max |kiln - reference| / max |reference| over 64 entries of a @ b spread over the output, the
// reference a double-precision dot product of the (float32 copies of the) inputs: checks that the
// algorithm the tuner kept computes the product.
double check_entries(const kiln::Tensor& a, const kiln::Tensor& b, const kiln::Tensor& c) {
  kiln::Tensor ah = a.to(kiln::DType::Float32).to(kiln::Device(kiln::kCPU)).contiguous();
  kiln::Tensor bh = b.to(kiln::DType::Float32).to(kiln::Device(kiln::kCPU)).contiguous();
  kiln::Tensor ch = c.to(kiln::DType::Float32).to(kiln::Device(kiln::kCPU)).contiguous();
  const int64_t n = a.size(0), k = a.size(1), m = b.size(1);
  const float *pa = ah.data_ptr<float>(), *pb = bh.data_ptr<float>(), *pc = ch.data_ptr<float>();
  double err = 0, scale = 0;
  for (int64_t t = 0; t < 64; ++t) {
    const int64_t i = (t * 977) % n, j = (t * 1231 + 17) % m;
    double ref = 0;
    for (int64_t q = 0; q < k; ++q) ref += static_cast<double>(pa[i * k + q]) * pb[q * m + j];
    err = std::max(err, std::abs(ref - pc[i * m + j]));
    scale = std::max(scale, std::abs(ref));
  }
  return err / scale;
}

void emit_check(const char* name, double rel) {
  std::printf("{\"check\": \"%s\", \"max_rel_err\": %.3g}\n", name, rel);
  std::fflush(stdout);
}

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
    const int64_t n = 8192;
    kiln::Tensor a = randn_gpu({n, n}, DType::BFloat16), b = randn_gpu({n, n}, DType::BFloat16);
    double ms = gpu_ms(10, [&] { (void)kiln::matmul(a, b); });
    emit("matmul_bf16_8192", ms, 2.0 * n * n * n / ms / 1e9);
    emit_check("matmul_bf16_8192", check_entries(a, b, kiln::matmul(a, b)));
  }
  {
    const int64_t n = 4096;
    kiln::Tensor a = randn_gpu({n, n}, DType::Float32), b = randn_gpu({n, n}, DType::Float32);
    kiln::set_float32_matmul_precision("highest");
    double ms = gpu_ms(10, [&] { (void)kiln::matmul(a, b); });
    emit("matmul_f32_4096_highest", ms, 2.0 * n * n * n / ms / 1e9);
    emit_check("matmul_f32_4096_highest", check_entries(a, b, kiln::matmul(a, b)));
    kiln::set_float32_matmul_precision("high");
    ms = gpu_ms(20, [&] { (void)kiln::matmul(a, b); });
    emit("matmul_f32_4096_high", ms, 2.0 * n * n * n / ms / 1e9);
    emit_check("matmul_f32_4096_high", check_entries(a, b, kiln::matmul(a, b)));
    kiln::set_float32_matmul_precision("highest");
  }
  return 0;
}
