// use_deterministic_algorithms on the GPU: with the mode on, scatter-type ops with float32
// reductions over many duplicate indices give bit-identical results run to run (and the CPU's,
// since the ordered path adds in the CPU's order); the flag itself round-trips; the alert raises
// only when the mode is on. The flag tests run everywhere; the GPU ones skip without a GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/gpu_kernels/gpu_test_util.h"
#include "kiln/cuda.h"
#include "kiln/kiln.h"

namespace kiln {
namespace {

using namespace gpu_test;

struct DeterministicScope {
  explicit DeterministicScope(bool on, bool warn = false) {
    use_deterministic_algorithms(on, warn);
  }
  ~DeterministicScope() { use_deterministic_algorithms(false); }
};

Tensor rand_f32(int64_t n, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = u(g);
  return from_vector(v);
}

Tensor rand_index(int64_t n, int64_t bound, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_int_distribution<int64_t> u(0, bound - 1);
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = u(g);
  return from_vector(v);
}

TEST(Determinism, FlagRoundTripsAndAlertRaisesOnlyWhenOn) {
  EXPECT_FALSE(are_deterministic_algorithms_enabled());
  EXPECT_NO_THROW(detail::alert_not_deterministic("some_op"));
  {
    DeterministicScope s(true);
    EXPECT_TRUE(are_deterministic_algorithms_enabled());
    EXPECT_FALSE(is_deterministic_algorithms_warn_only_enabled());
    try {
      detail::alert_not_deterministic("some_op");
      FAIL() << "expected kiln::Error";
    } catch (const kiln::Error& e) {
      EXPECT_NE(std::string(e.what()).find("[some_op] does not have a deterministic"),
                std::string::npos);
    }
  }
  {
    DeterministicScope s(true, /*warn=*/true);
    EXPECT_TRUE(is_deterministic_algorithms_warn_only_enabled());
    EXPECT_NO_THROW(detail::alert_not_deterministic("some_op"));
  }
  EXPECT_FALSE(are_deterministic_algorithms_enabled());
}

TEST(Determinism, GpuScatterFamilyIsBitIdenticalWithManyDuplicates) {
  if (!cuda::is_available()) GTEST_SKIP() << "no GPU";
  DeterministicScope s(true);
  const int64_t n = 257, k = 1 << 20;  // ~4000 updates per destination
  Tensor x = rand_f32(n, 41), src = rand_f32(k, 42), idx = rand_index(k, n, 43);
  Tensor xg = x.to(kGpu), sg = src.to(kGpu), ig = idx.to(kGpu);
  Tensor x2 = rand_f32(n * 3, 44).reshape({n, 3});
  Tensor s2 = rand_f32(k * 3, 45).reshape({k, 3});
  Tensor i2 = rand_index(k * 3, n, 46).reshape({k, 3});
  auto runs = [&] {
    std::vector<Tensor> r;
    r.push_back(scatter_add(xg, 0, ig, sg));
    r.push_back(index_add(xg, 0, ig, sg, 0.25));
    r.push_back(index_put(xg, {ig}, sg, /*accumulate=*/true));
    r.push_back(scatter_reduce(x2.to(kGpu), 0, i2.to(kGpu), s2.to(kGpu), "mean", false));
    r.push_back(scatter_reduce(x2.to(kGpu), 0, i2.to(kGpu), s2.to(kGpu), "prod", true));
    r.push_back(scatter(xg, 0, ig, sg, "add"));
    return r;
  };
  auto a = runs(), b = runs();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(bit_equal(a[i], b[i])) << "op " << i;
  // The ordered path adds in the CPU's order: the CPU's bits.
  EXPECT_TRUE(bit_equal(a[0], scatter_add(x, 0, idx, src)));
  EXPECT_TRUE(bit_equal(a[2], index_put(x, {idx}, src, true)));
}

}  // namespace
}  // namespace kiln
