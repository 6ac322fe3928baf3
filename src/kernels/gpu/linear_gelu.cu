// The GPU pieces of nn::functional::linear_gelu (Note [Fused linear+GELU] in
// src/nn/functional/fused_linear_gelu.cpp): cuBLASLt epilogue calls and the tanh-GELU gradient.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "backend/gpu/blas.h"
#include "kernels/gpu/nn_common.cuh"
#include "kiln/nn/functional/fused.h"

namespace kiln::gpu {
namespace {

using namespace nnk;

// d/dx of gelu(x, "tanh"), in float (the formula of the GeluTanh vjp in autograd/vjp_unary.cpp).
__device__ __forceinline__ float dgelu_tanh(float x) {
  constexpr float c = 0.797884560802865355879892119868763737f, a = 0.044715f;
  const float x2 = x * x, t = tanhf(c * (x + a * x * x2));
  return 0.5f * (1.f + t) + 0.5f * x * (1.f - t * t) * c * (1.f + 3.f * a * x2);
}

// out[r, c] = g[r, c] * gelu'(p[r, c]) over V-element vectors; g and out contiguous [rows, nvr *
// V], p with row stride ldp (elements).
template <class T, int V>
__global__ void gelu_grad_kernel(const T* __restrict__ g, const T* __restrict__ p,
                                 T* __restrict__ out, int64_t rows, int64_t nvr, int64_t ldp) {
  const int64_t total = rows * nvr;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / nvr, c = (i - r * nvr) * V;
    const Vec<T, V> gv = reinterpret_cast<const Vec<T, V>*>(g)[i];
    const Vec<T, V> pv = *reinterpret_cast<const Vec<T, V>*>(p + r * ldp + c);
    Vec<T, V> o;
#pragma unroll
    for (int j = 0; j < V; ++j) o.v[j] = st<T>(ld<float>(gv.v[j]) * dgelu_tanh(ld<float>(pv.v[j])));
    reinterpret_cast<Vec<T, V>*>(out)[i] = o;
  }
}

// As gelu_grad_kernel, and the column sums of out (the bias gradient) without atomics: block
// (32, kSumRows) owns 32 vectors of columns and rows blockIdx.y * kSumRows + threadIdx.y, stepping
// by gridDim.y * kSumRows; partial[blockIdx.y, col] (float) gets the block's sum, added in a fixed
// order (the result does not depend on timing).
constexpr int kSumRows = 8;

template <class T, int V>
__global__ void __launch_bounds__(32 * kSumRows)
    gelu_grad_colsum_kernel(const T* __restrict__ g, const T* __restrict__ p, T* __restrict__ out,
                            float* __restrict__ partial, int64_t rows, int64_t nvr, int64_t ldp) {
  __shared__ float sm[kSumRows][32 * V];
  const int64_t cv = blockIdx.x * 32 + threadIdx.x, n = nvr * V;
  float acc[V];
#pragma unroll
  for (int j = 0; j < V; ++j) acc[j] = 0.f;
  if (cv < nvr) {
    for (int64_t r = blockIdx.y * kSumRows + threadIdx.y; r < rows;
         r += static_cast<int64_t>(gridDim.y) * kSumRows) {
      const Vec<T, V> gv = *reinterpret_cast<const Vec<T, V>*>(g + r * n + cv * V);
      const Vec<T, V> pv = *reinterpret_cast<const Vec<T, V>*>(p + r * ldp + cv * V);
      Vec<T, V> o;
#pragma unroll
      for (int j = 0; j < V; ++j) {
        o.v[j] = st<T>(ld<float>(gv.v[j]) * dgelu_tanh(ld<float>(pv.v[j])));
        acc[j] += ld<float>(o.v[j]);  // the rounded value: the sum of what grad_pre returns
      }
      *reinterpret_cast<Vec<T, V>*>(out + r * n + cv * V) = o;
    }
  }
#pragma unroll
  for (int j = 0; j < V; ++j) sm[threadIdx.y][threadIdx.x * V + j] = acc[j];
  __syncthreads();
  if (threadIdx.y != 0 || cv >= nvr) return;
#pragma unroll
  for (int j = 0; j < V; ++j) {
    float t = 0.f;
#pragma unroll
    for (int y = 0; y < kSumRows; ++y) t += sm[y][threadIdx.x * V + j];
    partial[blockIdx.y * n + cv * V + j] = t;
  }
}

// bias[c] = sum over k < parts of partial[k, c], in order.
template <class T>
__global__ void colsum_finish_kernel(const float* __restrict__ partial, T* __restrict__ bias,
                                     int64_t parts, int64_t n) {
  const int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (c >= n) return;
  float t = 0.f;
  for (int64_t k = 0; k < parts; ++k) t += partial[k * n + c];
  bias[c] = st<T>(t);
}

// Where the bias gradient comes from (KILN_LINEAR_GELU_BGRAD, for measurements): cuBLASLt's BGRAD
// epilogue on the weight-gradient GEMM (unset or "epilogue"), the column sums of the gelu' pass
// ("colsum"), or a separate sum ("0"). H200, bf16 [16384, 768] -> 3072, forward+backward: 0.495,
// 0.523 and 0.511 ms: the column-sum kernel (0.137 ms against 0.092 ms for the plain pass) needs
// more loads in flight per thread before it can win.
enum class BiasGrad { Epilogue, Colsum, Sum };
BiasGrad bias_grad_mode() {
  static const BiasGrad m = [] {
    const char* v = std::getenv("KILN_LINEAR_GELU_BGRAD");
    if (v && std::strcmp(v, "0") == 0) return BiasGrad::Sum;
    if (v && std::strcmp(v, "colsum") == 0) return BiasGrad::Colsum;
    return BiasGrad::Epilogue;
  }();
  return m;
}

bool is_lt_dtype(DType d) {
  return d == DType::Float16 || d == DType::BFloat16 || d == DType::Float32;
}

bool accepts(const Tensor& x2, const Tensor& weight, const Tensor& bias) {
  return x2.is_cuda() && is_lt_dtype(x2.dtype());
}

Tensor forward(const Tensor& x2, const Tensor& weight, const Tensor& bias, Tensor* pre) {
  return matmul_epilogue(x2, weight.t(), bias.contiguous(), Epilogue::GeluBias, pre);
}

Tensor grad_pre(const Tensor& grad, const Tensor& pre, Tensor* grad_bias) {
  const Tensor g = grad.contiguous();
  const int64_t m = g.size(0), n = g.size(1);
  KILN_ASSERT(pre.dim() == 2 && pre.size(0) == m && pre.size(1) == n && pre.stride(1) == 1 &&
              pre.dtype() == g.dtype());
  Tensor out = ::kiln::detail::empty_impl({m, n}, g.dtype(), g.device());
  const bool colsum = grad_bias && bias_grad_mode() == BiasGrad::Colsum && m > 0 && n > 0;
  if (colsum) *grad_bias = ::kiln::detail::empty_impl({n}, g.dtype(), g.device());
  if (m == 0 || n == 0) return out;
  const int dev = device_of(g);
  const gpuStream_t s = stream_of(dev);
  detail::dispatch_types<detail::kReducedFloatMask | detail::dtype_bit(DType::Float32)>(
      g.dtype(), "linear_gelu", [&]<class T>() {
        constexpr int V = vec_width<T>();
        const T* gp = static_cast<const T*>(g.data_ptr());
        const T* pp = static_cast<const T*>(pre.data_ptr());
        T* op = static_cast<T*>(out.data_ptr());
        const int64_t ld = pre.stride(0);
        const bool vec =
            n % V == 0 && ld % V == 0 && aligned16(gp) && aligned16(pp) && aligned16(op);
        const int64_t nvr = vec ? n / V : n, total = m * nvr;
        if (colsum) {
          // About 8 blocks of 256 threads per multiprocessor over the whole matrix.
          const int64_t bx = (nvr + 31) / 32;
          const int64_t want = 8 * static_cast<int64_t>(device_info(dev).multi_processor_count);
          const int64_t by =
              std::clamp<int64_t>((want + bx - 1) / bx, 1, (m + kSumRows - 1) / kSumRows);
          Tensor part = scratch<float>(by * n, g.device());
          float* pa = static_cast<float*>(part.data_ptr());
          const dim3 grid(static_cast<unsigned>(bx), static_cast<unsigned>(by)),
              block(32, kSumRows);
          if (vec)
            gelu_grad_colsum_kernel<T, V><<<grid, block, 0, s>>>(gp, pp, op, pa, m, nvr, ld);
          else
            gelu_grad_colsum_kernel<T, 1><<<grid, block, 0, s>>>(gp, pp, op, pa, m, nvr, ld);
          colsum_finish_kernel<T><<<static_cast<unsigned>((n + 255) / 256), 256, 0, s>>>(
              pa, static_cast<T*>(grad_bias->data_ptr()), by, n);
          return;
        }
        const int threads = 256;
        const int64_t blocks = std::min<int64_t>((total + threads - 1) / threads, 1 << 20);
        if (vec)
          gelu_grad_kernel<T, V>
              <<<static_cast<unsigned>(blocks), threads, 0, s>>>(gp, pp, op, m, nvr, ld);
        else
          gelu_grad_kernel<T, 1>
              <<<static_cast<unsigned>(blocks), threads, 0, s>>>(gp, pp, op, m, nvr, ld);
      });
  check("linear_gelu", s);
  return out;
}

Tensor weight_grad(const Tensor& gp, const Tensor& x2, Tensor* grad_bias) {
  if (!grad_bias) return gp.t().mm(x2);
  if (bias_grad_mode() == BiasGrad::Sum) {
    *grad_bias = gp.sum(0);
    return gp.t().mm(x2);
  }
  Tensor gb = ::kiln::detail::empty_impl({gp.size(1)}, gp.dtype(), gp.device());
  Tensor gw = matmul_epilogue(gp.t(), x2, gb, Epilogue::BGradA);
  *grad_bias = gb;
  return gw;
}

}  // namespace

void register_linear_gelu_hooks() {
  auto& h = ::kiln::detail::linear_gelu_hooks();
  h.accepts = &accepts;
  h.forward = &forward;
  h.grad_pre = &grad_pre;
  h.weight_grad = &weight_grad;
}

}  // namespace kiln::gpu
