// Deferred small elementwise ops (Note [Deferred small launches], src/backend/gpu/small_ops.h):
// results bitwise equal to the CPU's through chains of dependent ops, with every path that must
// flush the pending batch first (host reads, large ops, other streams and threads, graph
// capture, memory released to the driver), and the batching itself (ops queued per launch).
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "../gpu_kernels/gpu_test_util.h"
#include "backend/gpu/small_ops.h"

// Weak: CPU-only builds link this binary without backend/gpu/small_ops.cu (the tests skip).
namespace kiln::gpu {
bool set_small_ops_enabled(bool) __attribute__((weak));
uint64_t small_ops_queued() __attribute__((weak));
uint64_t small_batches_launched() __attribute__((weak));
}  // namespace kiln::gpu

namespace kiln {
namespace {

using gpu_test::bit_equal;
using gpu_test::kCpu;
using gpu_test::kGpu;

Tensor rand_on(int64_t n, uint64_t seed, DType dt) {
  return from_vector(gpu_test::rand_vec(n, seed), {n}).to(dt);
}

// Turns deferral on for one test and restores the previous setting.
struct Deferral {
  bool prev;
  explicit Deferral(bool on) : prev(gpu::set_small_ops_enabled(on)) {}
  ~Deferral() { gpu::set_small_ops_enabled(prev); }
};

// The same chain of dependent small ops (inputs and outputs reused, mixed sizes and dtypes) on
// any device.
std::vector<Tensor> chain(Device d) {
  Tensor x = rand_on(1000, 1, DType::Float32).to(d), y = rand_on(1000, 2, DType::Float32).to(d);
  Tensor h = rand_on(7, 3, DType::BFloat16).to(d), k = rand_on(7, 4, DType::BFloat16).to(d);
  Tensor big = rand_on(5000, 5, DType::Float32).to(d);  // above the small-op size: launched
  Tensor s = zeros({1}, TensorOptions(DType::Float32).device(d));
  for (int i = 0; i < 60; ++i) {
    y = y * 0.5 + x;  // wrapped-number scalars and dense operands
    x = (x - y).relu();
    h = h * k + h;              // another kernel kind: the batch is flushed and a new one starts
    s = s + y.narrow(0, i, 1);  // one-element broadcast operand
    if (i % 17 == 0) big = big * 1.5 - big.narrow(0, 0, 1);
    if (i % 23 == 0) x.add_(s);  // in place
  }
  return {x, y, h, s, big, x / (y.abs() + 1.0)};
}

TEST(SmallOpsGpu, ChainsMatchTheCpuBitwiseAndAreBatched) {
  KILN_NEED_GPU();
  Deferral on(true);
  const uint64_t q0 = gpu::small_ops_queued(), l0 = gpu::small_batches_launched();
  auto g = chain(kGpu);
  const uint64_t queued = gpu::small_ops_queued() - q0;
  auto c = chain(kCpu);
  for (size_t i = 0; i < g.size(); ++i) EXPECT_TRUE(bit_equal(g[i], c[i])) << "result " << i;
  const uint64_t launched = gpu::small_batches_launched() - l0;
  EXPECT_GE(queued, 300u);  // every op of the chain but the large ones
  EXPECT_LT(launched * 2, queued) << queued << " ops in " << launched << " launches";
  Deferral off(false);
  auto u = chain(kGpu);
  for (size_t i = 0; i < g.size(); ++i) EXPECT_TRUE(bit_equal(u[i], c[i])) << "result " << i;
}

TEST(SmallOpsGpu, AOneElementAddLoopIsOneLaunchPerBatch) {
  KILN_NEED_GPU();
  Deferral on(true);
  Tensor a = full({1}, 1.0, TensorOptions(DType::Float32).device(kGpu));
  Tensor acc = zeros({1}, TensorOptions(DType::Float32).device(kGpu));
  const uint64_t l0 = gpu::small_batches_launched();
  for (int i = 0; i < 1000; ++i) acc = acc + a;
  EXPECT_EQ(acc.item<float>(), 1000.0f);  // the host read flushes
  EXPECT_LE(gpu::small_batches_launched() - l0, 1000u / 8);
}

TEST(SmallOpsGpu, OtherStreamsThreadsAndEventsSeeQueuedWork) {
  KILN_NEED_GPU();
  Deferral on(true);
  auto opts = TensorOptions(DType::Float32).device(kGpu);
  Tensor a = zeros({64}, opts);
  cuda::Stream side;
  {
    cuda::StreamGuard g(side);
    for (int i = 0; i < 10; ++i) a = a + 1.0;  // queued for the side stream
  }
  cuda::Event e;
  e.record(side);  // flushes, then records
  e.wait();        // the current stream waits for the side stream's work
  Tensor b = a * 2.0;
  EXPECT_EQ(gpu_test::host(b), std::vector<double>(64, 20.0));
  // Work queued by another thread is launched before this thread's next launch.
  Tensor t = zeros({32}, opts);
  std::thread th([&] {
    for (int i = 0; i < 5; ++i) t.add_(3.0);
  });
  th.join();
  EXPECT_EQ(gpu_test::host(t.sum().reshape({1})), std::vector<double>{32 * 15.0});
  // A stream query or synchronization of a stream with queued work sees it done.
  Tensor z = zeros({16}, opts);
  for (int i = 0; i < 4; ++i) z.add_(1.0);
  cuda::current_stream().synchronize();
  EXPECT_TRUE(cuda::current_stream().query());
  std::vector<double> want(16, 4.0);
  EXPECT_EQ(gpu_test::host(z), want);
}

TEST(SmallOpsGpu, FreedMemoryAndGraphCapture) {
  KILN_NEED_GPU();
  Deferral on(true);
  auto opts = TensorOptions(DType::Float32).device(kGpu);
  Tensor keep = zeros({100}, opts);
  for (int i = 0; i < 20; ++i) {
    Tensor tmp = full({100}, static_cast<double>(i), opts);
    keep = keep + tmp;  // tmp's block returns to the cache while the add is still queued
  }
  cuda::empty_cache();  // releasing memory to the driver flushes first
  EXPECT_EQ(gpu_test::host(keep), std::vector<double>(100, 190.0));
  // Small ops inside a capture are captured (the capture's end flushes) and replayed.
  Tensor x = zeros({8}, opts);
  cuda::Stream s;
  cuda::CUDAGraph graph;
  {
    cuda::StreamGuard g(s);
    graph.capture_begin();
    x.add_(1.0);
    x.mul_(2.0);
    graph.capture_end();
  }
  EXPECT_EQ(gpu_test::host(x), std::vector<double>(8, 0.0));  // capturing ran nothing
  for (int r = 0; r < 3; ++r) graph.replay();
  cuda::synchronize();
  EXPECT_EQ(gpu_test::host(x), std::vector<double>(8, 14.0));  // ((0+1)*2+1)*2+1)*2
}

}  // namespace
}  // namespace kiln
