// GPT-2 MLP up-projection benchmark (JSON lines): bf16 gelu(linear(x, w, b), "tanh") with x
// [16384, 768], w [3072, 768], forward and forward+backward, kiln's fused linear_gelu (cuBLASLt
// epilogues) vs the kiln composite; the fused path's pieces. PyTorch: bench/torch_gpu_mlp.py; both:
// bench/run_mlp_bench.sh.
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "gpu_timing.h"
#include "kiln/autograd.h"
#include "kiln/cuda.h"
#include "kiln/kiln.h"
#include "kiln/nn/functional/fused.h"

namespace {

void emit(const std::string& name, double ms, double flops) {
  std::printf(
      "{\"bench\": \"%s\", \"impl\": \"kiln\", \"ms\": %.4f, \"tflops\": %.1f, "
      "\"host_us\": %.1f}\n",
      name.c_str(), ms, flops / ms / 1e9, bench::g_host_us);
  std::fflush(stdout);
}

}  // namespace

int main() {
  namespace F = kiln::nn::functional;
  const kiln::Device gpu(kiln::kCUDA, 0);
  const int64_t m = 16384, k = 768, n = 3072;
  const double f1 = 2.0 * m * k * n;  // one GEMM
  // KILN_LINEAR_GELU_BGRAD=0 / colsum: the bias gradient as a separate sum / from the gelu' pass
  // instead of the BGRAD epilogue (src/kernels/gpu/linear_gelu.cu).
  const char* bg = std::getenv("KILN_LINEAR_GELU_BGRAD");
  const std::string tag = !bg                           ? ""
                          : std::string(bg) == "0"      ? "_bgradsum"
                          : std::string(bg) == "colsum" ? "_bgradcolsum"
                                                        : "";
  auto randn = [&](std::vector<int64_t> shape, uint64_t seed, double scale) {
    kiln::manual_seed(seed);
    return (kiln::randn(shape, kiln::TensorOptions(kiln::kFloat32)) * scale)
        .to(kiln::kBFloat16)
        .to(gpu);
  };
  kiln::Tensor x = randn({m, k}, 1, 1.0), w = randn({n, k}, 2, 0.03), b = randn({n}, 3, 0.1);
  kiln::Tensor gy = randn({m, n}, 4, 1.0);
  const std::string base = "mlp_fc_gelu_bf16_16384x768x3072";
  using Fn =
      std::function<kiln::Tensor(const kiln::Tensor&, const kiln::Tensor&, const kiln::Tensor&)>;
  const Fn fused = [](const kiln::Tensor& a, const kiln::Tensor& c, const kiln::Tensor& d) {
    return F::linear_gelu(a, c, d);
  };
  const Fn composite = [](const kiln::Tensor& a, const kiln::Tensor& c, const kiln::Tensor& d) {
    return F::gelu(kiln::linear(a, c, d), "tanh");
  };
  const std::pair<const char*, const Fn*> impls[] = {{"fused", &fused}, {"composite", &composite}};
  for (const auto& [what, fn] : impls) {
    if (!tag.empty() && std::string(what) != "fused") continue;
    if (tag.empty()) {
      kiln::NoGradGuard ng;
      emit(base + "_fwd_" + what, bench::gpu_ms(20, [&] { (*fn)(x, w, b); }), f1);
    }
    kiln::Tensor xr = x.detach().requires_grad_(), wr = w.detach().requires_grad_(),
                 br = b.detach().requires_grad_();
    emit(base + "_fwdbwd_" + what + tag,
         bench::gpu_ms(10,
                       [&] {
                         kiln::Tensor y = (*fn)(xr, wr, br);
                         kiln::autograd::grad({y}, {xr, wr, br}, {gy});
                       }),
         3 * f1);
  }
  // The fused path's pieces (Note [Fused linear+GELU]).
  const auto& h = kiln::detail::linear_gelu_hooks();
  if (!h.forward) return 0;
  kiln::Tensor pre;
  emit(base + "_piece_fwd_epilogue_aux" + tag, bench::gpu_ms(20, [&] { h.forward(x, w, b, &pre); }),
       f1);
  emit(base + "_piece_fwd_epilogue_noaux" + tag,
       bench::gpu_ms(20, [&] { h.forward(x, w, b, nullptr); }), f1);
  kiln::Tensor gp = h.grad_pre(gy, pre, nullptr), gb;
  emit(base + "_piece_gelu_grad" + tag, bench::gpu_ms(20, [&] { h.grad_pre(gy, pre, nullptr); }),
       0);
  emit(base + "_piece_gelu_grad_colsum" + tag, bench::gpu_ms(20, [&] { h.grad_pre(gy, pre, &gb); }),
       0);
  emit(base + "_piece_wgrad_with_bias" + tag, bench::gpu_ms(20, [&] { h.weight_grad(gp, x, &gb); }),
       f1);
  emit(base + "_piece_wgrad_nobias" + tag,
       bench::gpu_ms(20, [&] { h.weight_grad(gp, x, nullptr); }), f1);
  emit(base + "_piece_bias_sum" + tag, bench::gpu_ms(20, [&] { gp.sum(0); }), 0);
  emit(base + "_piece_dgrad" + tag, bench::gpu_ms(20, [&] { kiln::mm(gp, w); }), f1);
  return 0;
}
