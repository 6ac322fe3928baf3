// GPU add / sub / mul of float32 with bfloat16 / float16 operands (Note [Mixed-precision binary
// kernels]): against double-precision loops over the stored input values, and bit for bit
// against the CPU, in every layout the kernel meets (contiguous with a vector tail, unaligned,
// transposed, broadcast, in place).
#include <cmath>
#include <functional>

#include "backend/gpu_kernels/gpu_test_util.h"

namespace kiln {
namespace {

using gpu_test::host;
using gpu_test::kCpu;
using gpu_test::kGpu;
using gpu_test::rand_vec;

Tensor make(const std::vector<double>& v, IntArrayRef shape, DType dtype) {
  return from_vector(v, TensorOptions(DType::Float64)).reshape(shape).to(dtype);
}

struct MixedOp {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&)> run;
  std::function<double(double, double)> ref;  // on the stored values, in double
};

std::vector<MixedOp> ops() {
  return {
      {"add", [](const Tensor& a, const Tensor& b) { return add(a, b); },
       [](double a, double b) { return a + b; }},
      {"add_alpha", [](const Tensor& a, const Tensor& b) { return add(a, b, 0.5); },
       [](double a, double b) { return a + 0.5 * b; }},
      {"sub", [](const Tensor& a, const Tensor& b) { return sub(a, b); },
       [](double a, double b) { return a - b; }},
      {"mul", [](const Tensor& a, const Tensor& b) { return mul(a, b); },
       [](double a, double b) { return a * b; }},
  };
}

// Checks op(a, b) on the GPU: float32 output, each element within one float32 rounding of the
// double reference on the stored (already rounded) inputs, and bit-equal to the CPU's result.
void check(const MixedOp& op, const Tensor& a, const Tensor& b, const std::string& what) {
  Tensor got = op.run(a.to(kGpu), b.to(kGpu));
  ASSERT_EQ(got.dtype(), DType::Float32) << what;
  Tensor cpu = op.run(a, b);
  EXPECT_TRUE(gpu_test::bit_equal(got, cpu)) << what << ": GPU and CPU differ";
  Tensor ea = a.expand(got.sizes()), eb = b.expand(got.sizes());
  std::vector<double> g = host(got), va = host(ea), vb = host(eb);
  ASSERT_EQ(g.size(), va.size());
  for (size_t i = 0; i < g.size(); ++i) {
    const double want = op.ref(va[i], vb[i]);
    ASSERT_NEAR(g[i], want, std::abs(want) * 1.2e-7 + 1e-30) << what << " element " << i;
  }
}

TEST(MixedBinaryGpu, ContiguousFloat32WithHalfOperands) {
  KILN_NEED_GPU();
  for (DType h : {DType::BFloat16, DType::Float16})
    for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{1000}, int64_t{4099}, int64_t{1 << 20} + 3}) {
      Tensor f = make(rand_vec(n, 11 + n, -4, 4), {n}, DType::Float32);
      Tensor x = make(rand_vec(n, 17 + n, -4, 4), {n}, h);
      for (const MixedOp& op : ops()) {
        check(op, f, x, std::string(op.name) + " f32,half n=" + std::to_string(n));
        check(op, x, f, std::string(op.name) + " half,f32 n=" + std::to_string(n));
      }
    }
}

TEST(MixedBinaryGpu, UnalignedTransposedAndBroadcastOperands) {
  KILN_NEED_GPU();
  for (DType h : {DType::BFloat16, DType::Float16}) {
    Tensor f = make(rand_vec(64 * 48 + 1, 3), {64 * 48 + 1}, DType::Float32);
    Tensor x = make(rand_vec(64 * 48 + 1, 5), {64 * 48 + 1}, h);
    Tensor fu = f.narrow(0, 1, 64 * 48).view({64, 48});  // offset by one element: no vectors
    Tensor xu = x.narrow(0, 1, 64 * 48).view({64, 48});
    Tensor xt = make(rand_vec(48 * 64, 7), {48, 64}, h).t();  // transposed [64, 48]
    Tensor row = make(rand_vec(48, 9), {48}, h);              // broadcast over rows
    Tensor one = make({1.75}, {1}, h);                        // a one-element device operand
    for (const MixedOp& op : ops()) {
      check(op, fu, xu, std::string(op.name) + " unaligned");
      check(op, fu, xt, std::string(op.name) + " transposed");
      check(op, xt, fu, std::string(op.name) + " transposed first");
      check(op, fu, row, std::string(op.name) + " broadcast row");
      check(op, fu, one, std::string(op.name) + " one element");
    }
  }
}

TEST(MixedBinaryGpu, InPlaceFloat32PlusBFloat16) {
  KILN_NEED_GPU();
  const int64_t n = 12345;
  std::vector<double> vf = rand_vec(n, 21, -2, 2), vx = rand_vec(n, 23, -2, 2);
  Tensor f = make(vf, {n}, DType::Float32).to(kGpu);
  Tensor x = make(vx, {n}, DType::BFloat16);
  Tensor want = make(vf, {n}, DType::Float32).add_(x, 2.0);  // CPU reference
  f.add_(x.to(kGpu), 2.0);
  EXPECT_TRUE(gpu_test::bit_equal(f, want));
  std::vector<double> g = host(f), xs = host(x);
  for (int64_t i = 0; i < n; ++i) {
    const double r = static_cast<double>(static_cast<float>(vf[static_cast<size_t>(i)])) +
                     2.0 * xs[static_cast<size_t>(i)];
    ASSERT_NEAR(g[static_cast<size_t>(i)], r, std::abs(r) * 1.2e-7 + 1e-30) << i;
  }
}

}  // namespace
}  // namespace kiln
