// cuDNN convolutions (backend/gpu/dnn.cu via kernels/gpu/conv_ops.cu): forward, backward data and
// filter in float16/bfloat16/float32/float64, 1-D/2-D/3-D, against the CPU float64 kernels; the
// per-shape algorithm cache, determinism, no TF32 under "highest". Skip without a GPU or cuDNN.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "backend/gpu/dnn.h"
#include "backend/gpu_kernels/gpu_test_util.h"
#include "dispatch/registry.h"
#include "kiln/nn/functional/conv.h"
#include "kiln/ops/determinism.h"
#include "kiln/ops/gpu_settings.h"
#include "ops/op.h"
#include "ops/tensor_factory.h"

// Weak: CPU-only builds link this binary without backend/gpu/dnn.cu.
namespace kiln::gpu::dnn {
bool available() __attribute__((weak));
std::string unavailable_reason() __attribute__((weak));
int64_t algo_search_count() __attribute__((weak));
}  // namespace kiln::gpu::dnn

namespace kiln {
namespace {

using namespace gpu_test;

#define KILN_NEED_CUDNN()                                                               \
  KILN_NEED_GPU();                                                                      \
  if (&gpu::dnn::available == nullptr) GTEST_SKIP() << "built without the GPU backend"; \
  if (!gpu::dnn::available())                                                           \
  GTEST_SKIP() << "cuDNN unavailable: " << gpu::dnn::unavailable_reason()

// One 5-D problem: x [N, C, D, H, W], w [O, C/G, KD, KH, KW].
struct Case {
  const char* name;
  int64_t x[5], w[5], stride[3], pad[3], dil[3], groups;
  std::vector<int64_t> y() const {
    std::vector<int64_t> s{x[0], w[0]};
    for (int i = 0; i < 3; ++i)
      s.push_back((x[2 + i] + 2 * pad[i] - dil[i] * (w[2 + i] - 1) - 1) / stride[i] + 1);
    return s;
  }
  std::vector<int64_t> xs() const { return {x, x + 5}; }
  std::vector<int64_t> ws() const { return {w, w + 5}; }
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"conv2d_3x3", {2, 4, 1, 9, 11}, {6, 4, 1, 3, 3}, {1, 1, 1}, {0, 1, 1}, {1, 1, 1}, 1},
      {"conv2d_strided_dilated_grouped",
       {2, 6, 1, 13, 10},
       {9, 2, 1, 3, 2},
       {1, 2, 1},
       {0, 1, 0},
       {1, 2, 1},
       3},
      {"conv1d", {3, 5, 1, 1, 17}, {4, 5, 1, 1, 5}, {1, 1, 2}, {0, 0, 2}, {1, 1, 1}, 1},
      {"conv3d", {2, 3, 5, 6, 7}, {4, 3, 3, 3, 2}, {1, 2, 1}, {1, 1, 0}, {1, 1, 2}, 1},
      {"conv3d_depthwise", {1, 4, 4, 5, 6}, {4, 1, 3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 4},
      {"conv2d_tensor_cores",
       {4, 32, 1, 16, 16},
       {32, 32, 1, 3, 3},
       {1, 1, 1},
       {0, 1, 1},
       {1, 1, 1},
       1},
  };
  return c;
}

void set_attrs(OpCall& c, const Case& k, bool bias) {
  for (int i = 0; i < 3; ++i) c.attrs.ints.push_back(k.stride[i]);
  for (int i = 0; i < 3; ++i) c.attrs.ints.push_back(k.pad[i]);
  for (int i = 0; i < 3; ++i) c.attrs.ints.push_back(k.dil[i]);
  c.attrs.i0 = k.groups;
  c.attrs.flag = bias;
}

// Runs one convolution op's kernel for `device` directly (the front end casts half precision to
// float32 before the op; the GPU kernel itself takes it).
Tensor run_kernel(OpId op, DeviceType dev, std::vector<Tensor> in, const std::vector<int64_t>& out,
                  const Case& k, bool bias) {
  OpCall c(op);
  for (Tensor& t : in) c.in.push_back(t);
  set_attrs(c, k, bias);
  c.out.push_back(detail::empty_impl(out, in[0].dtype(), in[0].device()));
  c.compute = in[0].dtype();
  Kernel fn = detail::find_kernel(op, dev);
  EXPECT_NE(fn, nullptr);
  fn(c);
  return c.out[0];
}

Tensor rand_tensor(const std::vector<int64_t>& shape, uint64_t seed) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return from_vector(rand_vec(n, seed)).reshape(shape);
}

double rel_tol(DType d) {
  switch (d) {
    case DType::Float16:
      return 2e-3;
    case DType::BFloat16:
      return 1.6e-2;
    case DType::Float32:
      return 1e-4;
    default:
      return 1e-10;
  }
}

// |got - want| <= tol * scale per element, scale = the same op on |inputs| (the sum of the
// magnitudes of the terms), so the bound holds for any algorithm cuDNN picks.
void expect_close(const Tensor& got, const Tensor& want, const Tensor& scale, double tol,
                  const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(got.sizes(), want.sizes());
  std::vector<double> g = host(got), w = host(want), s = host(scale);
  int bad = 0;
  for (size_t i = 0; i < g.size() && bad < 5; ++i)
    if (!(std::abs(g[i] - w[i]) <= tol * (s[i] + 1e-3))) {
      ADD_FAILURE() << "element " << i << ": got " << g[i] << ", want " << w[i] << " (scale "
                    << s[i] << ")";
      ++bad;
    }
}

void check_case(const Case& k, DType dt, uint64_t seed) {
  const std::string tag = std::string(k.name) + " " + dtype_name(dt);
  // Inputs rounded to dt once; the reference runs on exactly those values in float64.
  Tensor x = rand_tensor(k.xs(), seed).to(dt), w = rand_tensor(k.ws(), seed + 1).to(dt);
  Tensor b = rand_tensor({k.w[0]}, seed + 2).to(dt), gy = rand_tensor(k.y(), seed + 3).to(dt);
  auto f64 = [](const Tensor& t) { return t.to(DType::Float64); };
  auto gpu = [](const Tensor& t) { return t.to(kGpu); };
  Tensor xd = f64(x), wd = f64(w), bd = f64(b), gyd = f64(gy);
  // Forward (with bias).
  Tensor y = run_kernel(OpId::Convolution, kCUDA, {gpu(x), gpu(w), gpu(b)}, k.y(), k, true);
  Tensor y_ref = run_kernel(OpId::Convolution, kCPU, {xd, wd, bd}, k.y(), k, true);
  Tensor y_abs = run_kernel(OpId::Convolution, kCPU, {kiln::abs(xd), kiln::abs(wd), kiln::abs(bd)},
                            k.y(), k, true);
  ASSERT_EQ(y.dtype(), dt);
  expect_close(y, y_ref, y_abs, rel_tol(dt), tag + " forward");
  // Backward data: grad x from (gy, w).
  Tensor gx =
      run_kernel(OpId::ConvolutionBackwardInput, kCUDA, {gpu(gy), gpu(w)}, k.xs(), k, false);
  Tensor gx_ref = run_kernel(OpId::ConvolutionBackwardInput, kCPU, {gyd, wd}, k.xs(), k, false);
  Tensor gx_abs = run_kernel(OpId::ConvolutionBackwardInput, kCPU, {kiln::abs(gyd), kiln::abs(wd)},
                             k.xs(), k, false);
  expect_close(gx, gx_ref, gx_abs, rel_tol(dt), tag + " backward data");
  // Backward filter: grad w from (gy, x).
  Tensor gw =
      run_kernel(OpId::ConvolutionBackwardWeight, kCUDA, {gpu(gy), gpu(x)}, k.ws(), k, false);
  Tensor gw_ref = run_kernel(OpId::ConvolutionBackwardWeight, kCPU, {gyd, xd}, k.ws(), k, false);
  Tensor gw_abs = run_kernel(OpId::ConvolutionBackwardWeight, kCPU, {kiln::abs(gyd), kiln::abs(xd)},
                             k.ws(), k, false);
  expect_close(gw, gw_ref, gw_abs, rel_tol(dt), tag + " backward filter");
}

TEST(CudnnConv, AllKindsAndDtypesMatchCpuFloat64) {
  KILN_NEED_CUDNN();
  uint64_t seed = 100;
  for (const Case& k : cases())
    for (DType dt : {DType::Float16, DType::BFloat16, DType::Float32, DType::Float64})
      check_case(k, dt, seed += 10);
}

TEST(CudnnConv, SecondCallOfAShapeDoesNotSearchAgain) {
  KILN_NEED_CUDNN();
  const Case k{"cache", {1, 3, 1, 7, 5}, {2, 3, 1, 2, 2}, {1, 1, 1}, {0, 0, 1}, {1, 1, 1}, 1};
  Tensor x = rand_tensor(k.xs(), 1).to(DType::BFloat16).to(kGpu);
  Tensor w = rand_tensor(k.ws(), 2).to(DType::BFloat16).to(kGpu);
  const int64_t n0 = gpu::dnn::algo_search_count();
  Tensor y1 = run_kernel(OpId::Convolution, kCUDA, {x, w}, k.y(), k, false);
  const int64_t n1 = gpu::dnn::algo_search_count();
  EXPECT_EQ(n1, n0 + 1) << "the first call of a new shape searches once";
  Tensor y2 = run_kernel(OpId::Convolution, kCUDA, {x, w}, k.y(), k, false);
  EXPECT_EQ(gpu::dnn::algo_search_count(), n1) << "the second call hits the cache";
  EXPECT_TRUE(bit_equal(y1, y2));
  // Another dtype is another problem.
  run_kernel(OpId::Convolution, kCUDA, {x.to(DType::Float32), w.to(DType::Float32)}, k.y(), k,
             false);
  EXPECT_EQ(gpu::dnn::algo_search_count(), n1 + 1);
}

TEST(CudnnConv, DeterministicModeRepeatsBitwise) {
  KILN_NEED_CUDNN();
  const Case k = cases()[5];
  Tensor x = rand_tensor(k.xs(), 7).to(DType::Float16).to(kGpu);
  Tensor gy = rand_tensor(k.y(), 8).to(DType::Float16).to(kGpu);
  use_deterministic_algorithms(true);
  Tensor a = run_kernel(OpId::ConvolutionBackwardWeight, kCUDA, {gy, x}, k.ws(), k, false);
  Tensor b = run_kernel(OpId::ConvolutionBackwardWeight, kCUDA, {gy, x}, k.ws(), k, false);
  use_deterministic_algorithms(false);
  EXPECT_TRUE(bit_equal(a, b));
}

// float32 under "highest" must not use TF32: with x = w = 1 + 2^-12 (exact in float32, 1 in
// TF32's 10-bit mantissa) and no padding, every output is K (1 + 2^-12)^2 in float32 up to a few
// ulps, while TF32 would give K: a relative error of 4.9e-4.
TEST(CudnnConv, Float32HighestIsNotTf32) {
  KILN_NEED_CUDNN();
  ASSERT_EQ(get_float32_matmul_precision(), "highest");
  const Case k{"no_tf32", {2, 64, 1, 10, 10}, {32, 64, 1, 3, 3}, {1, 1, 1}, {0, 0, 0}, {1, 1, 1},
               1};
  const double v = 1 + std::ldexp(1.0, -12);
  Tensor x = full(k.xs(), v, TensorOptions(DType::Float32).device(kGpu));
  Tensor w = full(k.ws(), v, TensorOptions(DType::Float32).device(kGpu));
  Tensor y = run_kernel(OpId::Convolution, kCUDA, {x, w}, k.y(), k, false);
  const double want = 64 * 9 * v * v;
  int bad = 0;
  for (double g : host(y))
    if (!(std::abs(g - want) <= 2e-5 * want) && ++bad <= 3)
      ADD_FAILURE() << "got " << g << ", want " << want << " (TF32 would give " << 64 * 9 << ")";
}

// conv_transpose2d's forward is ConvolutionBackwardInput: through the public front end in float32.
TEST(CudnnConv, ConvTranspose2dMatchesCpu) {
  KILN_NEED_CUDNN();
  namespace F = nn::functional;
  Tensor x = rand_tensor({2, 6, 5, 7}, 21), w = rand_tensor({6, 2, 3, 3}, 22);
  Tensor b = rand_tensor({4}, 23);
  Tensor want = F::conv_transpose2d(x, w, b, {2, 1}, {1, 0}, {1, 0}, 2, {1, 2});
  Tensor got =
      F::conv_transpose2d(x.to(DType::Float32).to(kGpu), w.to(DType::Float32).to(kGpu),
                          b.to(DType::Float32).to(kGpu), {2, 1}, {1, 0}, {1, 0}, 2, {1, 2});
  ASSERT_TRUE(got.is_cuda());
  Tensor scale = F::conv_transpose2d(kiln::abs(x), kiln::abs(w), kiln::abs(b), {2, 1}, {1, 0},
                                     {1, 0}, 2, {1, 2});
  expect_close(got, want, scale, 1e-4, "conv_transpose2d");
}

}  // namespace
}  // namespace kiln
