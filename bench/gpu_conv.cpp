// Convolution, pooling and linear benchmark (JSON lines): conv2d N32 C64->64 56x56 3x3 through
// cuDNN (bf16/fp32; forward, backward data, backward filter), avg_pool2d forward/backward, and
// bf16 linear with bias / tanh-GELU at GPT-2 shapes (cuBLASLt epilogues). PyTorch:
// bench/torch_gpu_conv.py; both: run_conv_bench.sh.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "backend/gpu/blas.h"
#include "dispatch/registry.h"
#include "gpu_timing.h"
#include "kiln/cuda.h"
#include "kiln/kiln.h"
#include "ops/op.h"
#include "ops/tensor_factory.h"

namespace {

// Median over 5 batches after 3 warm-up calls, in ms (bench/gpu_timing.h).
double gpu_ms(int iters, const std::function<void()>& f) { return bench::gpu_ms(iters, f, 3, 5); }

// Host time per call of f in microseconds: 20 calls enqueued back to back (no synchronization
// inside), after a synchronized start. Close to the GPU time per call: the host is the bound.
double host_us(const std::function<void()>& f) {
  kiln::cuda::synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 20; ++i) f();
  const auto t1 = std::chrono::steady_clock::now();
  kiln::cuda::synchronize();
  return std::chrono::duration<double, std::micro>(t1 - t0).count() / 20;
}

void emit(const std::string& name, double ms, double flops, const char* note, double host = -1) {
  std::printf(
      "{\"bench\": \"%s\", \"impl\": \"kiln\", \"ms\": %.4f, \"tflops\": %.1f, \"host_us\": "
      "%.1f%s}\n",
      name.c_str(), ms, flops / ms / 1e9, host, note);
  std::fflush(stdout);
}

// One Convolution-family kernel call on the GPU (the op's own kernel, any float dtype).
kiln::Tensor conv_kernel(kiln::OpId op, std::vector<kiln::Tensor> in,
                         const std::vector<int64_t>& out_shape, int64_t pad) {
  kiln::OpCall c(op);
  for (auto& t : in) c.in.push_back(t);
  for (int64_t v : {int64_t{1}, int64_t{1}, int64_t{1}, int64_t{0}, pad, pad, int64_t{1},
                    int64_t{1}, int64_t{1}})
    c.attrs.ints.push_back(v);
  c.attrs.i0 = 1;
  c.out.push_back(kiln::detail::empty_impl(out_shape, in[0].dtype(), in[0].device()));
  c.compute = in[0].dtype();
  kiln::detail::find_kernel(op, kiln::kCUDA)(c);
  return c.out[0];
}

}  // namespace

int main() {
  namespace F = kiln::nn::functional;
  using kiln::OpId;
  const kiln::Device gpu(kiln::kCUDA, 0);
  kiln::NoGradGuard ng;
  const char* lt = std::getenv("KILN_LT_BIAS_EPILOGUE");
  const std::string tag = (lt && std::string(lt) == "0") ? "_noepi" : "";
  // KILN_CUDNN_GRAPH=0: the convolutions through cuDNN's legacy API only (Note [cuDNN graph
  // path] in backend/gpu/dnn.cu).
  const char* gr = std::getenv("KILN_CUDNN_GRAPH");
  const std::string ctag = (gr && std::string(gr) == "0") ? "_legacy" : "";
  auto randn = [&](std::vector<int64_t> shape, kiln::DType dt, uint64_t seed) {
    kiln::manual_seed(seed);
    return kiln::randn(shape, kiln::TensorOptions(kiln::kFloat32)).to(dt).to(gpu);
  };
  // KILN_DISABLE_CUDNN=1: only the pooling, on kiln's own kernels ("_native").
  const char* off = std::getenv("KILN_DISABLE_CUDNN");
  const std::string ptag = (off && std::string(off) == "1") ? "_native" : "";
  if (tag.empty() && ptag.empty()) {
    const int64_t n = 32, c = 64, o = 64, h = 56, w = 56;
    const double flops = 2.0 * n * o * h * w * c * 9;
    const std::vector<int64_t> xs{n, c, 1, h, w}, ws{o, c, 1, 3, 3}, ys{n, o, 1, h, w};
    for (kiln::DType dt : {kiln::kBFloat16, kiln::kFloat32}) {
      const std::string d = dt == kiln::kBFloat16 ? "bf16" : "fp32";
      try {
        kiln::Tensor x = randn(xs, dt, 1), wt = randn(ws, dt, 2), gy = randn(ys, dt, 3);
        const std::function<void()> fwd = [&] { conv_kernel(OpId::Convolution, {x, wt}, ys, 1); };
        const std::function<void()> bwd_data = [&] {
          conv_kernel(OpId::ConvolutionBackwardInput, {gy, wt}, xs, 1);
        };
        const std::function<void()> bwd_filter = [&] {
          conv_kernel(OpId::ConvolutionBackwardWeight, {gy, x}, ws, 1);
        };
        // GPU time first (its warm-up runs the algorithm search), then the host time.
        const std::pair<const char*, const std::function<void()>*> cases[] = {
            {"fwd", &fwd}, {"bwd_data", &bwd_data}, {"bwd_filter", &bwd_filter}};
        for (const auto& [what, f] : cases) {
          const double ms = gpu_ms(20, *f);
          emit("conv2d_" + d + "_" + what + ctag, ms, flops, "", host_us(*f));
        }
        // Through the public front end (which today computes half precision in float32).
        kiln::Tensor x4 = x.view({n, c, h, w}), w4 = wt.view({o, c, 3, 3});
        emit("conv2d_" + d + "_fwd_frontend" + ctag,
             gpu_ms(20, [&] { F::conv2d(x4, w4, {}, 1, 1); }), flops, "");
      } catch (const kiln::Error& e) {
        std::printf("# conv2d %s: %s\n", d.c_str(), e.what());
      }
    }
  }
  // Average pooling (Note [cuDNN pooling]): N32 C64 112x112, 3x3 windows, stride 2, padding 1.
  if (ctag.empty() && tag.empty()) {
    const int64_t n = 32, c = 64, h = 112, w = 112, oh = 56, ow = 56;
    for (kiln::DType dt : {kiln::kBFloat16, kiln::kFloat32}) {
      const std::string d = dt == kiln::kBFloat16 ? "bf16" : "fp32";
      kiln::Tensor x = randn({n, c, h, w}, dt, 7), gy = randn({n, c, oh, ow}, dt, 8);
      emit("avg_pool2d_" + d + "_fwd" + ptag,
           gpu_ms(20,
                  [&] {
                    F::avg_pool2d(x, {3, 3}, {2, 2}, {1, 1});
                  }),
           0, "");
      emit("avg_pool2d_" + d + "_bwd" + ptag,
           gpu_ms(20,
                  [&] {
                    kiln::OpCall pc(OpId::AvgPool2dBackward);
                    pc.in.push_back(gy);
                    for (int64_t v : {3, 3, 2, 2, 1, 1}) pc.attrs.ints.push_back(v);
                    pc.attrs.flag = true;
                    pc.out.push_back(kiln::detail::empty_impl({n, c, h, w}, dt, gpu));
                    pc.compute = dt;
                    kiln::detail::find_kernel(OpId::AvgPool2dBackward, kiln::kCUDA)(pc);
                  }),
           0, "");
    }
  }
  struct Lin {
    int64_t m, k, n;
  };
  if (!ctag.empty() || !ptag.empty()) return 0;
  for (Lin s : {Lin{16384, 768, 2304}, Lin{16384, 768, 3072}, Lin{16384, 3072, 768}}) {
    kiln::Tensor x = randn({s.m, s.k}, kiln::kBFloat16, 4),
                 w = randn({s.n, s.k}, kiln::kBFloat16, 5);
    kiln::Tensor b = randn({s.n}, kiln::kBFloat16, 6);
    char name[96];
    std::snprintf(name, sizeof name, "linear_bias_bf16_%lldx%lldx%lld", static_cast<long long>(s.m),
                  static_cast<long long>(s.k), static_cast<long long>(s.n));
    emit(name + tag, gpu_ms(20, [&] { kiln::linear(x, w, b); }), 2.0 * s.m * s.k * s.n, "");
    if (s.n == 3072 && tag.empty()) {  // GPT-2's MLP up-projection with its tanh-GELU
      const double f = 2.0 * s.m * s.k * s.n;
      emit("linear_gelu_bf16_16384x768x3072_composite",
           gpu_ms(20, [&] { F::gelu(kiln::linear(x, w, b), "tanh"); }), f, "");
      kiln::Tensor aux;
      emit("linear_gelu_bf16_16384x768x3072_epilogue",
           gpu_ms(20,
                  [&] {
                    kiln::gpu::matmul_epilogue(x, w.t(), b, kiln::gpu::Epilogue::GeluBias, &aux);
                  }),
           f, "");
    }
  }
  return 0;
}
