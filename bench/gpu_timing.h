// Shared timing of the GPU benchmarks (bench/gpu_*.cpp): CUDA-event medians, the host time of the
// enqueue loops, and kernel time through CUDA-graph replay. bench/torch_timing.py is its twin.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

#include "kiln/cuda.h"

namespace bench {

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Host time per call of the last gpu_ms (median wall time of the enqueue loops, in us). When it
// is close to the event time, the event figure is host-bound, not a kernel figure.
inline double g_host_us = 0;

// Median over `reps` batches of `iters` calls of the GPU time per call of f (events on the
// current stream), in ms, after `warmup` calls (algorithm choice, allocator, module load).
inline double gpu_ms(int iters, const std::function<void()>& f, int warmup = 3, int reps = 7) {
  for (int i = 0; i < warmup; ++i) f();
  kiln::cuda::synchronize();
  std::vector<double> t, h;
  for (int r = 0; r < reps; ++r) {
    kiln::cuda::Event a(true), b(true);
    a.record();
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) f();
    auto t1 = std::chrono::steady_clock::now();
    b.record();
    b.synchronize();
    t.push_back(a.elapsed_time(b) / iters);
    h.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / iters);
  }
  g_host_us = median(h);
  return median(t);
}

// Kernel time per call of f: `per` calls captured once in a CUDA graph, the graph replayed
// (no host work per call beyond the replay), in ms. g_host_us becomes the replay's host time / per.
inline double graph_ms(int per, const std::function<void()>& f) {
  for (int i = 0; i < 3; ++i) f();
  kiln::cuda::synchronize();
  kiln::cuda::CUDAGraph g;
  kiln::cuda::graph(g, [&] {
    for (int i = 0; i < per; ++i) f();
  });
  const double ms = gpu_ms(5, [&] { g.replay(); }) / per;
  g_host_us /= per;
  return ms;
}

}  // namespace bench
