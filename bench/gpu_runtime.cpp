// GPU runtime benchmarks (JSON lines): warm-cache alloc+free of 1 MiB and 64 MiB (through
// kiln::empty and the raw caching allocator), pinned H2D/D2H bandwidth, and 100 small kernels
// launched one by one vs replayed as one graph. bench/libtorch_alloc.cpp measures the same in
// libtorch.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "backend/gpu/gpu_allocator.h"
#include "kiln/cuda.h"
#include "kiln/kiln.h"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median over `reps` batches of the time per call of f, in microseconds.
template <class F>
double time_us(int reps, int iters, F&& f) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    auto a = Clock::now();
    for (int i = 0; i < iters; ++i) f();
    auto b = Clock::now();
    t.push_back(std::chrono::duration<double, std::micro>(b - a).count() / iters);
  }
  return median(t);
}

void emit(const char* name, const char* unit, double value) {
  std::printf("{\"bench\": \"%s\", \"impl\": \"kiln\", \"%s\": %.4f}\n", name, unit, value);
}

}  // namespace

int main() {
  if (!kiln::cuda::is_available()) {
    std::printf("{\"error\": \"no GPU\"}\n");
    return 0;
  }
  kiln::Device gpu(kiln::kCUDA, 0);
  auto f32 = kiln::TensorOptions(kiln::DType::Float32).device(gpu);

  for (int64_t mib : {1, 64}) {
    int64_t n = mib * (1 << 20) / 4;
    { kiln::Tensor warm = kiln::empty({n}, f32); }
    double us = time_us(21, 2000, [&] { kiln::Tensor t = kiln::empty({n}, f32); });
    emit(mib == 1 ? "empty_free_1MiB" : "empty_free_64MiB", "us", us);
    auto& a = kiln::gpu::device_allocator(0);
    size_t bytes = static_cast<size_t>(mib) << 20;
    double raw = time_us(21, 2000, [&] { a.free(a.malloc(bytes)); });
    emit(mib == 1 ? "raw_alloc_free_1MiB" : "raw_alloc_free_64MiB", "us", raw);
  }

  {
    const int64_t n = int64_t{256} << 20 >> 2;  // 256 MiB of float32
    kiln::Tensor host = kiln::detail::pin_memory(kiln::ones({n}));
    kiln::Tensor dev = kiln::empty({n}, f32);
    kiln::Tensor back = kiln::detail::pin_memory(kiln::zeros({n}));
    for (int dir = 0; dir < 2; ++dir) {
      std::vector<double> gbs;
      for (int r = 0; r < 11; ++r) {
        kiln::cuda::Event s(true), e(true);
        s.record();
        if (dir == 0)
          dev.copy_(host);
        else
          back.copy_(dev);
        e.record();
        gbs.push_back(static_cast<double>(n) * 4 / (s.elapsed_time(e) * 1e-3) / 1e9);
      }
      emit(dir == 0 ? "h2d_pinned_256MiB" : "d2h_pinned_256MiB", "GB/s", median(gbs));
    }
  }

  {
    // 100 small kernels: one by one vs one graph replay. *_sync: one call and a device
    // synchronize (latency); *_stream: 20 calls queued, then one synchronize (throughput, per
    // call); *_gpu: GPU time between events around one call; launch_cpu: host time to queue 100
    // fills (no synchronize).
    kiln::Tensor small = kiln::empty({1024}, f32);
    auto body = [&] {
      for (int k = 0; k < 100; ++k) small.fill_(k);
    };
    body();
    kiln::cuda::synchronize();
    auto gpu_ms = [&](auto&& f) {
      std::vector<double> t;
      for (int r = 0; r < 21; ++r) {
        kiln::cuda::Event s(true), e(true);
        s.record();
        f();
        e.record();
        t.push_back(s.elapsed_time(e) * 1e3);
      }
      return median(t);
    };
    double launched = time_us(11, 50, [&] {
      body();
      kiln::cuda::synchronize();
    });
    double launched_stream = time_us(11, 5,
                                     [&] {
                                       for (int i = 0; i < 20; ++i) body();
                                       kiln::cuda::synchronize();
                                     }) /
                             20;
    double launch_cpu = time_us(11, 20, [&] { body(); });
    kiln::cuda::synchronize();
    double launched_gpu = gpu_ms(body);
    kiln::cuda::CUDAGraph g;
    kiln::cuda::graph(g, body);
    g.replay();
    kiln::cuda::synchronize();
    double replayed = time_us(11, 50, [&] {
      g.replay();
      kiln::cuda::synchronize();
    });
    double replayed_stream = time_us(11, 5,
                                     [&] {
                                       for (int i = 0; i < 20; ++i) g.replay();
                                       kiln::cuda::synchronize();
                                     }) /
                             20;
    double replay_cpu = time_us(11, 20, [&] { g.replay(); });
    kiln::cuda::synchronize();
    double replayed_gpu = gpu_ms([&] { g.replay(); });
    double replayed_side = 0;
    {
      kiln::cuda::Stream side;
      kiln::cuda::StreamGuard guard(side);
      g.replay();
      side.synchronize();
      replayed_side = time_us(11, 50, [&] {
        g.replay();
        side.synchronize();
      });
    }
    std::printf("{\"bench\": \"graph_nodes\", \"impl\": \"kiln\", \"count\": %zu}\n",
                g.num_nodes());
    emit("100_fills_launched", "us", launched);
    emit("100_fills_graph_replay", "us", replayed);
    emit("100_fills_launched_stream", "us", launched_stream);
    emit("100_fills_graph_replay_stream", "us", replayed_stream);
    emit("100_fills_launch_cpu", "us", launch_cpu);
    emit("100_fills_replay_cpu", "us", replay_cpu);
    emit("100_fills_launched_gpu", "us", launched_gpu);
    emit("100_fills_graph_replay_gpu", "us", replayed_gpu);
    emit("100_fills_graph_replay_side_stream", "us", replayed_side);
  }
  return 0;
}
