// CPU sort-family benchmarks: sort of 1M float32 (ascending, descending, stable), sort of
// 1000 rows of 1000, argsort, topk(100) of 1M, and cumsum of 1M. One JSON line per case, as
// bench/cpu_ops.cpp; bench/torch_cpu_sort.py runs the same cases with PyTorch.
// Usage: kiln_bench_cpu_sort [--threads N] [--scale S]
#include <kiln/kiln.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Timing {
  double median_us = 0, min_us = 0;
  int reps = 0;
};

// `inner` calls per sample, `samples` samples after one warm-up sample: median and minimum.
Timing measure(const std::function<void()>& fn, int inner, int samples) {
  for (int i = 0; i < inner; ++i) fn();
  std::vector<double> us;
  for (int s = 0; s < samples; ++s) {
    const auto t0 = Clock::now();
    for (int i = 0; i < inner; ++i) fn();
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / inner);
  }
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us.front(), inner * samples};
}

void report(const char* name, const Timing& t, int threads) {
  std::printf(
      "{\"bench\": \"%s\", \"kiln_us\": %.4f, \"kiln_min_us\": %.4f, \"reps\": %d, "
      "\"threads\": %d}\n",
      name, t.median_us, t.min_us, t.reps, threads);
  std::fflush(stdout);
}

int arg_int(int argc, char** argv, const char* flag, int fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], flag) == 0) return std::atoi(argv[i + 1]);
  return fallback;
}

// Uniform float32 values in [-1, 1) from a fixed seed (the same distribution as the PyTorch
// script's torch.rand * 2 - 1; the values themselves differ, which does not matter for sorting).
kiln::Tensor random_f32(int64_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(g);
  return kiln::from_vector(v);
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = arg_int(argc, argv, "--threads", kiln::get_num_threads());
  const int scale = std::max(1, arg_int(argc, argv, "--scale", 1));
  kiln::set_num_threads(threads);
  const int samples = std::max(3, 21 / scale);

  const int64_t n = 1 << 20;
  kiln::Tensor x = random_f32(n, 1);
  report("sort_1M_f32", measure([&] { auto r = kiln::sort(x); }, 1, samples), threads);
  report("sort_1M_f32_desc", measure([&] { auto r = kiln::sort(x, -1, true); }, 1, samples),
         threads);
  report("sort_1M_f32_stable",
         measure([&] { auto r = kiln::sort(x, std::optional<bool>(true), -1); }, 1, samples),
         threads);
  report("argsort_1M_f32", measure([&] { auto r = kiln::argsort(x); }, 1, samples), threads);
  kiln::Tensor rows = random_f32(1000 * 1000, 2).view({1000, 1000});
  report("sort_1000x1000_dim1", measure([&] { auto r = kiln::sort(rows, 1); }, 1, samples),
         threads);
  report("topk_1M_k100", measure([&] { auto r = kiln::topk(x, 100); }, 1, samples), threads);
  report("cumsum_1M_f32", measure([&] { auto r = kiln::cumsum(x, 0); }, 1, samples), threads);
  return 0;
}
