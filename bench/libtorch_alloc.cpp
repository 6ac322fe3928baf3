// libtorch reference for bench/gpu_runtime.cpp (JSON lines, same names): warm-cache alloc+free of
// 1 MiB and 64 MiB, pinned H2D/D2H bandwidth, 100 small fills launched vs replayed as a graph.
// Built on the GPU machine against PyTorch's bundled headers and libraries.
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

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
  std::printf("{\"bench\": \"%s\", \"impl\": \"libtorch\", \"%s\": %.4f}\n", name, unit, value);
}

}  // namespace

int main() {
  auto f32 = torch::TensorOptions().dtype(torch::kFloat32).device(torch::kCUDA, 0);
  for (int64_t mib : {1, 64}) {
    int64_t n = mib * (1 << 20) / 4;
    { auto warm = torch::empty({n}, f32); }
    double us = time_us(21, 2000, [&] { auto t = torch::empty({n}, f32); });
    emit(mib == 1 ? "empty_free_1MiB" : "empty_free_64MiB", "us", us);
    size_t bytes = static_cast<size_t>(mib) << 20;
    double raw = time_us(21, 2000, [&] {
      c10::cuda::CUDACachingAllocator::raw_delete(
          c10::cuda::CUDACachingAllocator::raw_alloc(bytes));
    });
    emit(mib == 1 ? "raw_alloc_free_1MiB" : "raw_alloc_free_64MiB", "us", raw);
  }
  {
    const int64_t n = int64_t{256} << 20 >> 2;
    auto host = torch::ones({n}).pin_memory();
    auto dev = torch::empty({n}, f32);
    auto back = torch::zeros({n}).pin_memory();
    for (int dir = 0; dir < 2; ++dir) {
      std::vector<double> gbs;
      for (int r = 0; r < 11; ++r) {
        at::cuda::CUDAEvent s(cudaEventDefault), e(cudaEventDefault);
        s.record();
        if (dir == 0)
          dev.copy_(host);
        else
          back.copy_(dev);
        e.record();
        e.synchronize();
        gbs.push_back(static_cast<double>(n) * 4 / (s.elapsed_time(e) * 1e-3) / 1e9);
      }
      emit(dir == 0 ? "h2d_pinned_256MiB" : "d2h_pinned_256MiB", "GB/s", median(gbs));
    }
  }
  {
    // As bench/gpu_runtime.cpp: _sync latency, _stream throughput, _gpu event time, _cpu enqueue.
    auto small = torch::empty({1024}, f32);
    auto body = [&] {
      for (int k = 0; k < 100; ++k) small.fill_(k);
    };
    body();
    torch::cuda::synchronize();
    auto gpu_ms = [&](auto&& f) {
      std::vector<double> t;
      for (int r = 0; r < 21; ++r) {
        at::cuda::CUDAEvent s(cudaEventDefault), e(cudaEventDefault);
        s.record();
        f();
        e.record();
        e.synchronize();
        t.push_back(s.elapsed_time(e) * 1e3);
      }
      return median(t);
    };
    double launched = time_us(11, 50, [&] {
      body();
      torch::cuda::synchronize();
    });
    double launched_stream = time_us(11, 5,
                                     [&] {
                                       for (int i = 0; i < 20; ++i) body();
                                       torch::cuda::synchronize();
                                     }) /
                             20;
    double launch_cpu = time_us(11, 20, [&] { body(); });
    torch::cuda::synchronize();
    double launched_gpu = gpu_ms(body);
    at::cuda::CUDAGraph g;
    {
      auto side = c10::cuda::getStreamFromPool();
      side.synchronize();
      c10::cuda::CUDAStreamGuard guard(side);
      g.capture_begin();
      body();
      g.capture_end();
    }
    g.replay();
    torch::cuda::synchronize();
    double replayed = time_us(11, 50, [&] {
      g.replay();
      torch::cuda::synchronize();
    });
    double replayed_stream = time_us(11, 5,
                                     [&] {
                                       for (int i = 0; i < 20; ++i) g.replay();
                                       torch::cuda::synchronize();
                                     }) /
                             20;
    double replay_cpu = time_us(11, 20, [&] { g.replay(); });
    torch::cuda::synchronize();
    double replayed_gpu = gpu_ms([&] { g.replay(); });
    emit("100_fills_launched", "us", launched);
    emit("100_fills_graph_replay", "us", replayed);
    emit("100_fills_launched_stream", "us", launched_stream);
    emit("100_fills_graph_replay_stream", "us", replayed_stream);
    emit("100_fills_launch_cpu", "us", launch_cpu);
    emit("100_fills_replay_cpu", "us", replay_cpu);
    emit("100_fills_launched_gpu", "us", launched_gpu);
    emit("100_fills_graph_replay_gpu", "us", replayed_gpu);
  }
  return 0;
}
