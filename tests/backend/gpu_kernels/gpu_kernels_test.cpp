// GPU kernel tests beyond the op table's GPU-vs-CPU suite: 64-bit indexing past 2^31 elements,
// broadcasting layouts, reductions in every engine mode (vs double references, and
// deterministic), float32 matmul precision settings, and argmax ties. Skip without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kiln/cuda.h"
#include "kiln/kiln.h"
#include "kiln/ops/gpu_settings.h"

namespace kiln {
namespace {

#define KILN_NEED_GPU() \
  if (!cuda::is_available()) GTEST_SKIP() << "no GPU: GPU kernel tests need a cuda device"

const Device kGpu(kCUDA, 0);

std::vector<double> rand_vec(int64_t n, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) x = u(g);
  return v;
}

// A float64 CPU tensor from values.
Tensor f64(const std::vector<double>& v, IntArrayRef shape) {
  return from_vector(v).reshape(shape);
}

std::vector<double> host(const Tensor& t) {
  Tensor c = t.to(Device(kCPU)).to(DType::Float64).contiguous();
  const double* p = static_cast<const double*>(c.data_ptr());
  return std::vector<double>(p, p + c.numel());
}

TEST(GpuKernels, AddPast2To31ElementsUses64BitIndexing) {
  KILN_NEED_GPU();
  const int64_t n = (int64_t{1} << 31) + 1000;
  Tensor a = full({n}, 1, TensorOptions(DType::Int8).device(kGpu));
  Tensor b = arange(0, 4, 1, TensorOptions(DType::Int8).device(kGpu));  // broadcast below
  Tensor c = add(a.view({n / 8, 8}).narrow(1, 0, 4), b);                // strided path
  Tensor d = add(a, a);                                                 // contiguous path
  std::vector<double> tail = host(d.narrow(0, n - 3, 3));
  for (double x : tail) EXPECT_EQ(x, 2);
  std::vector<double> last = host(c.narrow(0, c.size(0) - 1, 1).reshape({4}));
  for (int k = 0; k < 4; ++k) EXPECT_EQ(last[k], 1 + k);
}

TEST(GpuKernels, BroadcastingLayoutsMatchDoubleLoops) {
  KILN_NEED_GPU();
  auto va = rand_vec(5 * 1 * 33, 1), vb = rand_vec(1 * 7 * 33, 2);
  Tensor a = f64(va, {5, 1, 33}).to(DType::Float32), b = f64(vb, {7, 33}).to(DType::Float32);
  Tensor ga = a.to(kGpu), gb = b.to(kGpu);
  std::vector<double> got = host(mul(ga, gb.transpose(0, 1).contiguous().transpose(0, 1)));
  ASSERT_EQ(got.size(), size_t{5 * 7 * 33});
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 7; ++j)
      for (int k = 0; k < 33; ++k) {
        double want = static_cast<float>(va[i * 33 + k]) * static_cast<float>(vb[j * 33 + k]);
        EXPECT_NEAR(got[(i * 7 + j) * 33 + k], want, 1e-6);
      }
  // A host scalar (wrapped number) and a one-element GPU tensor.
  std::vector<double> s = host(add(ga, 2.5));
  std::vector<double> t = host(add(ga, full({1}, 2.5, TensorOptions().device(kGpu))));
  for (size_t i = 0; i < s.size(); ++i) {
    EXPECT_NEAR(s[i], static_cast<float>(va[i]) + 2.5, 1e-6);
    EXPECT_EQ(s[i], t[i]);
  }
}

TEST(GpuKernels, ReductionsInEveryModeMatchDoubleSums) {
  KILN_NEED_GPU();
  // [R, O] reduced over dim 0 (thread per output, split), dim 1 (block per output), and all.
  const int64_t R = 100003, O = 9;
  auto v = rand_vec(R * O, 3);
  Tensor x = f64(v, {R, O}).to(DType::Float32);
  Tensor g = x.to(kGpu);
  std::vector<double> s0 = host(sum(g, {0})), s1 = host(sum(g, {1})), s = host(sum(g));
  std::vector<double> w0(O, 0), w1(R, 0);
  double w = 0;
  for (int64_t r = 0; r < R; ++r)
    for (int64_t o = 0; o < O; ++o) {
      double e = static_cast<float>(v[r * O + o]);
      w0[o] += e;
      w1[r] += e;
      w += e;
    }
  for (int64_t o = 0; o < O; ++o) EXPECT_NEAR(s0[o], w0[o], 1e-3);
  for (int64_t r = 0; r < R; r += 997) EXPECT_NEAR(s1[r], w1[r], 1e-5);
  EXPECT_NEAR(s[0], w, 1e-2);
  // Deterministic: the same bits every time.
  for (int i = 0; i < 3; ++i) EXPECT_EQ(host(sum(g))[0], s[0]);
  // var over the long dim (Welford, split) vs a two-pass double reference.
  std::vector<double> var = host(std::get<0>(var_mean(g, {0})));
  for (int64_t o = 0; o < O; ++o) {
    double m = w0[o] / R, q = 0;
    for (int64_t r = 0; r < R; ++r) {
      double d = static_cast<float>(v[r * O + o]) - m;
      q += d * d;
    }
    EXPECT_NEAR(var[o], q / (R - 1), 1e-5);
  }
}

TEST(GpuKernels, ArgmaxTiesGiveTheFirstIndex) {
  KILN_NEED_GPU();
  std::vector<double> v(5000, 1.0);
  v[1234] = 3;
  v[4321] = 3;
  Tensor g = f64(v, {5000}).to(kGpu);
  EXPECT_EQ(host(argmax(g))[0], 1234);
  v[77] = std::nan("");
  v[99] = std::nan("");
  EXPECT_EQ(host(argmax(f64(v, {5000}).to(kGpu)))[0], 77);
}

TEST(GpuKernels, Float32MatmulPrecisionSetting) {
  KILN_NEED_GPU();
  const int64_t n = 256;
  auto va = rand_vec(n * n, 4), vb = rand_vec(n * n, 5);
  Tensor a = f64(va, {n, n}).to(DType::Float32), b = f64(vb, {n, n}).to(DType::Float32);
  std::vector<double> ref(n * n, 0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < n; ++k) {
      double x = static_cast<float>(va[i * n + k]);
      for (int64_t j = 0; j < n; ++j) ref[i * n + j] += x * static_cast<float>(vb[k * n + j]);
    }
  auto rel_err = [&](const std::vector<double>& got) {
    double num = 0, den = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      num += (got[i] - ref[i]) * (got[i] - ref[i]);
      den += ref[i] * ref[i];
    }
    return std::sqrt(num / den);
  };
  EXPECT_EQ(get_float32_matmul_precision(), "highest");
  double e_highest = rel_err(host(matmul(a.to(kGpu), b.to(kGpu))));
  EXPECT_LT(e_highest, 1e-6);
  set_float32_matmul_precision("high");
  double e_high = rel_err(host(matmul(a.to(kGpu), b.to(kGpu))));
  set_float32_matmul_precision("highest");
  EXPECT_LT(e_high, 3e-3);  // TF32 products: about 1e-4
  std::printf("float32 matmul relative error: highest %.3g, high %.3g\n", e_highest, e_high);
  EXPECT_THROW(set_float32_matmul_precision("fast"), Error);
  // Transposed operands and a batch-broadcast operand are read in place.
  Tensor ga = a.to(kGpu), gb = b.to(kGpu);
  std::vector<double> t = host(matmul(ga.t().contiguous().t(), gb));
  EXPECT_LT(rel_err(t), 1e-6);
}

}  // namespace
}  // namespace kiln
