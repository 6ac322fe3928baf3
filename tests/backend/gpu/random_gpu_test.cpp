// GPU random kernels: every random op on the GPU draws what the CPU draws from the same Philox
// (seed, offset) (Note [Philox streams]), and captured graphs draw fresh numbers on every replay,
// exactly those the captured ops would draw eagerly (Note [Graph-safe random numbers]).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kernels/distributions.h"
#include "kernels/philox.h"
#include "kiln/cuda.h"
#include "kiln/kiln.h"

namespace {

using kiln::Device;
using kiln::DType;
using kiln::Generator;
using kiln::Tensor;
namespace cuda = kiln::cuda;

#define REQUIRE_GPU() \
  if (!cuda::is_available()) GTEST_SKIP() << "no GPU: nothing to compare with the CPU"

const Device kGpu(kiln::kCUDA, 0);
const Device kCpu(kiln::kCPU);

kiln::TensorOptions on(Device d, DType t) { return kiln::TensorOptions(t).device(d); }

// Generators of both devices in the same state (seed, offset).
struct Pair {
  Generator cpu{kCpu}, gpu{kGpu};
  Pair(uint64_t seed, uint64_t offset) {
    for (Generator* g : {&cpu, &gpu}) {
      g->manual_seed(seed);
      g->set_offset(offset);
    }
  }
};

std::vector<double> values(const Tensor& t) {
  Tensor c = t.cpu().to(DType::Float64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  Tensor x = a.cpu().contiguous(), y = b.cpu().contiguous();
  return x.dtype() == y.dtype() && x.sizes() == y.sizes() &&
         std::memcmp(x.data_ptr(), y.data_ptr(), static_cast<size_t>(x.nbytes())) == 0;
}

// Draws with f on both devices from equal generator states; checks the values (bit for bit when
// rel_tol is 0) and that both generators advanced alike.
void expect_same_draws(const std::string& what, const std::function<Tensor(Generator&, Device)>& f,
                       double rel_tol) {
  Pair g(0x5EED + what.size(), 1234);
  Tensor c = f(g.cpu, kCpu);
  Tensor d = f(g.gpu, kGpu);
  ASSERT_TRUE(d.is_cuda()) << what;
  EXPECT_EQ(g.cpu.get_offset(), g.gpu.get_offset()) << what;
  if (rel_tol == 0) {
    EXPECT_TRUE(same_bytes(c, d)) << what << ": GPU and CPU draws differ";
    return;
  }
  std::vector<double> x = values(c), y = values(d);
  ASSERT_EQ(x.size(), y.size()) << what;
  int64_t bad = 0;
  for (size_t i = 0; i < x.size(); ++i)
    if (!(std::abs(x[i] - y[i]) <= rel_tol * std::max(1.0, std::abs(x[i])))) ++bad;
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << x.size() << " values differ";
}

TEST(GpuRandom, UniformIsThePhiloxStreamBitForBit) {
  REQUIRE_GPU();
  const int64_t n = (1 << 16) + 5;
  Generator g(kGpu);
  g.manual_seed(20240607);
  g.set_offset(77);
  std::vector<double> f = values(kiln::rand({n}, g, on(kGpu, DType::Float32)));
  std::vector<double> d = values(kiln::rand({n}, g, on(kGpu, DType::Float64)));
  // float: one word per element from counter 77; double: one 64-bit draw per element, from the
  // counters after the float call's ceil(n / 4).
  const uint64_t off2 = 77 + kiln::philox_counters(n, 1);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(f[i], kiln::rng_uniform_float(kiln::philox_word(20240607, 77, i))) << i;
    ASSERT_EQ(d[i], kiln::rng_uniform_double(kiln::philox_u64(20240607, off2, i))) << i;
  }
  EXPECT_EQ(g.get_offset(), off2 + kiln::philox_counters(n, 2));
}

TEST(GpuRandom, EveryFloatSamplerMatchesTheCpu) {
  REQUIRE_GPU();
  const std::vector<int64_t> shape = {37, 129};  // odd sizes: partial Philox blocks and pairs
  for (DType t : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    std::string dt = kiln::dtype_name(t);
    auto mk = [&](Device dev) { return kiln::empty(shape, on(dev, t)); };
    // Uniform and bernoulli are exact arithmetic: bit for bit.
    expect_same_draws(
        "uniform_ " + dt, [&](Generator& g, Device dev) { return mk(dev).uniform_(-2, 3, g); }, 0);
    expect_same_draws(
        "bernoulli_ " + dt, [&](Generator& g, Device dev) { return mk(dev).bernoulli_(0.3, g); },
        0);
    // log/sin/cos/exp/tan round differently by a few ulp between the host and device libraries.
    const double tol = t == DType::Float64 ? 1e-13 : t == DType::Float32 ? 2e-6 : 1e-2;
    expect_same_draws(
        "normal_ " + dt, [&](Generator& g, Device dev) { return mk(dev).normal_(1, 2, g); }, tol);
    expect_same_draws(
        "log_normal_ " + dt,
        [&](Generator& g, Device dev) { return mk(dev).log_normal_(0, 0.5, g); }, tol);
    expect_same_draws(
        "exponential_ " + dt,
        [&](Generator& g, Device dev) { return mk(dev).exponential_(1.5, g); }, tol);
    expect_same_draws(
        "cauchy_ " + dt, [&](Generator& g, Device dev) { return mk(dev).cauchy_(0, 1, g); }, tol);
  }
}

TEST(GpuRandom, IntegerSamplersMatchTheCpuExactly) {
  REQUIRE_GPU();
  const std::vector<int64_t> shape = {1001};
  for (DType t : {DType::Int64, DType::Int32, DType::UInt8, DType::Bool, DType::Float32}) {
    std::string dt = kiln::dtype_name(t);
    expect_same_draws(
        "random_ " + dt,
        [&](Generator& g, Device dev) { return kiln::empty(shape, on(dev, t)).random_(g); }, 0);
    expect_same_draws(
        "bernoulli_ " + dt,
        [&](Generator& g, Device dev) { return kiln::empty(shape, on(dev, t)).bernoulli_(0.5, g); },
        0);
  }
  // A range above 2^32 takes 128-bit draws (four words per element).
  expect_same_draws(
      "randint 128-bit",
      [&](Generator& g, Device dev) {
        return kiln::randint(-(int64_t{1} << 40), int64_t{1} << 41, {513}, g,
                             on(dev, DType::Int64));
      },
      0);
  expect_same_draws(
      "random_ full int64 range",
      [&](Generator& g, Device dev) {
        return kiln::empty({257}, on(dev, DType::Int64)).random_(INT64_MIN, std::nullopt, g);
      },
      0);
  // Geometric: ceil of a ratio of logs; a last-ulp difference may cross an integer, rarely.
  for (DType t : {DType::Int32, DType::Float64}) {
    Pair g(5, 0);
    Tensor c = kiln::empty({4096}, on(kCpu, t)).geometric_(0.2, g.cpu);
    Tensor d = kiln::empty({4096}, on(kGpu, t)).geometric_(0.2, g.gpu);
    std::vector<double> x = values(c), y = values(d);
    int64_t off_by_one = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_LE(std::abs(x[i] - y[i]), 1.0) << i;
      off_by_one += x[i] != y[i];
    }
    EXPECT_LE(off_by_one, 2) << kiln::dtype_name(t);
  }
}

TEST(GpuRandom, TensorParametersRandpermAndMultinomialMatchTheCpu) {
  REQUIRE_GPU();
  Tensor mean = kiln::linspace(-3, 3, 300).reshape({3, 100});
  Tensor std = kiln::linspace(0.1, 2, 100);
  expect_same_draws(
      "normal(mean, std)",
      [&](Generator& g, Device dev) { return kiln::normal(mean.to(dev), std.to(dev), g); }, 2e-6);
  Tensor p = kiln::linspace(0, 1, 640).reshape({64, 10});
  expect_same_draws(
      "bernoulli(p)", [&](Generator& g, Device dev) { return kiln::bernoulli(p.to(dev), g); }, 0);
  for (int64_t n : {1, 1000, 70001})
    expect_same_draws(
        "randperm " + std::to_string(n),
        [&](Generator& g, Device dev) { return kiln::randperm(n, g, on(dev, DType::Int64)); }, 0);
  Tensor w = kiln::rand({16, 50}) * (kiln::rand({16, 50}) > 0.3).to(DType::Float32);
  expect_same_draws(
      "multinomial with replacement",
      [&](Generator& g, Device dev) { return kiln::multinomial(w.to(dev), 40, true, g); }, 0);
  expect_same_draws(
      "multinomial without replacement",
      [&](Generator& g, Device dev) { return kiln::multinomial(w.to(dev), 5, false, g); }, 0);
}

TEST(GpuRandom, NonContiguousOutputsFollowLogicalOrder) {
  REQUIRE_GPU();
  expect_same_draws(
      "uniform_ into a transposed view",
      [&](Generator& g, Device dev) {
        Tensor t = kiln::zeros({64, 33}, on(dev, DType::Float32)).t();
        t.uniform_(0, 1, g);
        return t;
      },
      0);
  expect_same_draws(
      "random_ into a strided slice",
      [&](Generator& g, Device dev) {
        Tensor base = kiln::zeros({40, 6}, on(dev, DType::Int32));
        Tensor s = base.slice(1, 0, 6, 2);
        s.random_(0, 1000, g);
        return base;
      },
      0);
}

TEST(GpuRandom, GraphReplaysDrawFreshNumbersLikeEagerCalls) {
  REQUIRE_GPU();
  Tensor x = kiln::empty({1000}, on(kGpu, DType::Float32));
  Tensor y = kiln::empty({333}, on(kGpu, DType::Float64));
  Tensor z = kiln::empty({100}, on(kGpu, DType::Int64));
  Generator own(kGpu);
  auto body = [&](Tensor* perm) {
    x.uniform_();
    y.normal_(0, 1);
    z.random_(0, 10, own);
    *perm = kiln::randperm(257, on(kGpu, DType::Int64));
  };
  Generator def = kiln::default_generator(kGpu);
  kiln::manual_seed(99);
  own.manual_seed(7);
  const uint64_t def0 = def.get_offset(), own0 = own.get_offset();
  Tensor perm;
  cuda::CUDAGraph g;
  cuda::graph(g, [&] { body(&perm); });
  EXPECT_EQ(def.get_offset(), def0) << "capturing must not consume random numbers";
  EXPECT_EQ(own.get_offset(), own0);
  std::vector<Tensor> replayed;
  for (int r = 0; r < 2; ++r) {
    g.replay();
    for (Tensor* t : {&x, &y, &z, &perm}) replayed.push_back(t->cpu());
  }
  const uint64_t def_end = def.get_offset(), own_end = own.get_offset();
  EXPECT_GT(def_end, def0);
  EXPECT_FALSE(same_bytes(replayed[0], replayed[4])) << "two replays drew the same numbers";
  EXPECT_FALSE(same_bytes(replayed[1], replayed[5]));
  // The same calls made eagerly from the same states draw the same numbers.
  kiln::manual_seed(99);
  own.manual_seed(7);
  for (int r = 0; r < 2; ++r) {
    Tensor eager_perm;
    body(&eager_perm);
    Tensor* ts[4] = {&x, &y, &z, &eager_perm};
    for (int k = 0; k < 4; ++k)
      EXPECT_TRUE(same_bytes(replayed[static_cast<size_t>(4 * r + k)], *ts[k]))
          << "replay " << r << ", tensor " << k;
  }
  EXPECT_EQ(def.get_offset(), def_end);
  EXPECT_EQ(own.get_offset(), own_end);
}

}  // namespace
