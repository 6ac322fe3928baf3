// CPU op benchmarks: per-call overhead of a 1-element add (a + b, add_, add_out), a 16M-element
// add, sums (over dim 1 of [1M, 16], of all 16M elements, float16) and a 1024^3 float32 matmul.
// Prints one JSON line per case: {"bench": name, "kiln_us": median, ...}. torch_cpu_ops.py runs
// the same cases with PyTorch; run_cpu_bench.sh runs both and prints the ratios.
#include <kiln/kiln.h>
#include <kiln/ops/linalg.h>
#include <kiln/ops/reduce.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Timing {
  double median_us = 0, min_us = 0, cpu_us = 0;  // cpu_us: process CPU time per call (all threads)
  int reps = 0;
};

double process_cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

// Runs `fn` `inner` times per sample and `samples` samples (after one warm-up sample); returns
// the median and minimum of the per-call times.
Timing measure(const std::function<void()>& fn, int inner, int samples) {
  for (int i = 0; i < inner; ++i) fn();
  std::vector<double> us;
  const double cpu0 = process_cpu_us();
  for (int s = 0; s < samples; ++s) {
    const auto t0 = Clock::now();
    for (int i = 0; i < inner; ++i) fn();
    const auto t1 = Clock::now();
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / inner);
  }
  const double cpu1 = process_cpu_us();
  std::sort(us.begin(), us.end());
  Timing t;
  t.cpu_us = (cpu1 - cpu0) / (double(inner) * samples);
  t.median_us = us[us.size() / 2];
  t.min_us = us.front();
  t.reps = inner * samples;
  return t;
}

void report(const char* name, const Timing& t, int threads, const std::string& extra = "") {
  std::printf(
      "{\"bench\": \"%s\", \"kiln_us\": %.4f, \"kiln_min_us\": %.4f, \"kiln_cpu_us\": %.4f, "
      "\"reps\": %d, \"threads\": %d%s}\n",
      name, t.median_us, t.min_us, t.cpu_us, t.reps, threads, extra.c_str());
  std::fflush(stdout);
}

std::string rate(const char* key, double value) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), ", \"%s\": %.2f", key, value);
  return buf;
}

int arg_int(int argc, char** argv, const char* flag, int fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], flag) == 0) return std::atoi(argv[i + 1]);
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  // --threads N (default: kiln's default), --scale S (divides sample counts, for quick runs).
  const int threads = arg_int(argc, argv, "--threads", kiln::get_num_threads());
  const int scale = std::max(1, arg_int(argc, argv, "--scale", 1));
  kiln::set_num_threads(threads);

  // Overhead: 1-element float32 tensors, 1000 calls per sample.
  {
    kiln::Tensor a = kiln::ones({1}), b = kiln::ones({1}), out = kiln::empty({1});
    const int samples = std::max(5, 200 / scale);
    report("add_1elem", measure([&] { kiln::Tensor c = a + b; }, 1000, samples), threads);
    kiln::Tensor acc = kiln::zeros({1});
    report("add_1elem_inplace", measure([&] { acc.add_(b); }, 1000, samples), threads);
    report("add_1elem_out", measure([&] { kiln::add_out(out, a, b); }, 1000, samples), threads);
  }

  // 16M-element float32 add: 3 x 64 MiB of memory traffic per call.
  const int64_t n16 = int64_t{1} << 24;
  {
    kiln::Tensor a = kiln::linspace(0, 1, n16), b = kiln::linspace(1, 2, n16);
    kiln::Tensor out = kiln::empty({n16});
    const int samples = std::max(3, 30 / scale);
    Timing t = measure([&] { kiln::Tensor c = a + b; }, 1, samples);
    report("add_16M", t, threads, rate("GB_per_s", 3.0 * 4 * n16 / (t.median_us * 1e3)));
    t = measure([&] { kiln::add_out(out, a, b); }, 1, samples);
    report("add_16M_out", t, threads, rate("GB_per_s", 3.0 * 4 * n16 / (t.median_us * 1e3)));
  }

  // Sums: over dim 1 of [1048576, 16], and over all 16M elements.
  {
    kiln::Tensor x = kiln::linspace(0, 1, n16).reshape({int64_t{1} << 20, 16});
    const int samples = std::max(3, 30 / scale);
    Timing t = measure([&] { kiln::Tensor s = x.sum({1}); }, 1, samples);
    report("sum_dim1_1Mx16", t, threads, rate("GB_per_s", 4.0 * n16 / (t.median_us * 1e3)));
    t = measure([&] { kiln::Tensor s = x.sum(); }, 1, samples);
    report("sum_all_16M", t, threads, rate("GB_per_s", 4.0 * n16 / (t.median_us * 1e3)));
  }

  // float16 sum of all 16M elements (float accumulation).
  {
    kiln::Tensor x = kiln::linspace(0, 1, n16).to(kiln::kFloat16);
    const int samples = std::max(3, 30 / scale);
    Timing t = measure([&] { kiln::Tensor s = x.sum(); }, 1, samples);
    report("sum_all_16M_f16", t, threads, rate("GB_per_s", 2.0 * n16 / (t.median_us * 1e3)));
  }

  // 1024 x 1024 x 1024 float32 matmul (OpenBLAS sgemm).
  {
    kiln::Tensor a = kiln::linspace(-1, 1, 1 << 20).reshape({1024, 1024});
    kiln::Tensor b = kiln::linspace(1, -1, 1 << 20).reshape({1024, 1024});
    Timing t = measure([&] { kiln::Tensor c = kiln::matmul(a, b); }, 1, std::max(3, 10 / scale));
    report("matmul_1024", t, threads,
           rate("GFLOP_per_s", 2.0 * 1024 * 1024 * 1024 / (t.median_us * 1e3)));
  }
  return 0;
}
