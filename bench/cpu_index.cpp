// CPU index benchmarks: index_select and scatter_add of 1M rows (rows of 16 float32 and single
// elements), index_add and gather beside them. Prints one JSON line per case like cpu_ops.cpp;
// bench/torch_cpu_index.py runs the same cases with PyTorch (ratio = torch time / kiln time).
// Usage: kiln_bench_cpu_index [--threads N] [--scale S] [--only NAME]
#include <kiln/kiln.h>
#include <kiln/ops/indexing.h>

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
  double median_us = 0, min_us = 0, cpu_median_us = 0;
  int reps = 0;
};

double cpu_now_us() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

// One warm-up call, then `samples` timed calls: median and minimum wall time, and the median
// process CPU time (all threads), which is what to compare on a loaded machine.
Timing measure(const std::function<void()>& fn, int samples) {
  if (samples == 0) return {};
  fn();
  std::vector<double> us, cpu;
  for (int s = 0; s < samples; ++s) {
    const double c0 = cpu_now_us();
    const auto t0 = Clock::now();
    fn();
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    cpu.push_back(cpu_now_us() - c0);
  }
  std::sort(us.begin(), us.end());
  std::sort(cpu.begin(), cpu.end());
  return {us[us.size() / 2], us.front(), cpu[cpu.size() / 2], samples};
}

void report(const char* name, const Timing& t, int threads, double bytes) {
  if (t.reps == 0) return;
  std::printf(
      "{\"bench\": \"%s\", \"kiln_us\": %.2f, \"kiln_min_us\": %.2f, \"kiln_cpu_us\": %.2f, "
      "\"reps\": %d, \"threads\": %d, \"GB_per_s\": %.2f}\n",
      name, t.median_us, t.min_us, t.cpu_median_us, t.reps, threads, bytes / (t.median_us * 1e3));
  std::fflush(stdout);
}

const char* arg_str(int argc, char** argv, const char* flag, const char* fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], flag) == 0) return argv[i + 1];
  return fallback;
}

// --only NAME: run only that case (for profiling).
std::string g_only;
bool wanted(const char* name) { return g_only.empty() || g_only == name; }

int arg_int(int argc, char** argv, const char* flag, int fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], flag) == 0) return std::atoi(argv[i + 1]);
  return fallback;
}

// idx[i] = (i * 2654435761 mod n) / div: a scattered permutation (div 1) or pairs (div 2);
// torch_cpu_index.py builds the same values.
kiln::Tensor hashed_index(int64_t n, int64_t div) {
  kiln::Tensor t = kiln::empty({n}, kiln::DType::Int64);
  int64_t* p = t.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) p[i] = (i * 2654435761LL) % n / div;
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = arg_int(argc, argv, "--threads", kiln::get_num_threads());
  const int scale = std::max(1, arg_int(argc, argv, "--scale", 1));
  g_only = arg_str(argc, argv, "--only", "");
  kiln::set_num_threads(threads);
  const int base_samples = std::max(3, 20 / scale);
  auto samples_for = [&](const char* name) { return wanted(name) ? base_samples : 0; };
  const int64_t n = int64_t{1} << 20, w = 16;

  kiln::Tensor perm = hashed_index(n, 1), pairs = hashed_index(n, 2);
  kiln::Tensor src2 = kiln::linspace(-1, 1, n * w).reshape({n, w});
  kiln::Tensor src1 = kiln::linspace(-1, 1, n);
  const double row_bytes = 4.0 * w;

  // index_select: out[i] = src[perm[i]] (read + write of 1M rows, plus the index).
  report("index_select_1Mx16",
         measure([&] { kiln::Tensor o = kiln::index_select(src2, 0, perm); },
                 samples_for("index_select_1Mx16")),
         threads, n * (2 * row_bytes + 8));
  report("index_select_1M",
         measure([&] { kiln::Tensor o = kiln::index_select(src1, 0, perm); },
                 samples_for("index_select_1M")),
         threads, n * (2 * 4.0 + 8));

  // scatter_add: out = zeros.scatter_add(0, pairs expanded over the row, src); each destination
  // row receives two source rows.
  kiln::Tensor zeros2 = kiln::zeros({n, w}), zeros1 = kiln::zeros({n});
  kiln::Tensor pairs2 = pairs.unsqueeze(1).expand({n, w});
  report("scatter_add_1Mx16",
         measure([&] { kiln::Tensor o = kiln::scatter_add(zeros2, 0, pairs2, src2); },
                 samples_for("scatter_add_1Mx16")),
         threads, n * (3 * row_bytes + 8));
  report("scatter_add_1M",
         measure([&] { kiln::Tensor o = kiln::scatter_add(zeros1, 0, pairs, src1); },
                 samples_for("scatter_add_1M")),
         threads, n * (3 * 4.0 + 8));
  // In place (no copy of self): acc.scatter_add_(...).
  kiln::Tensor acc = kiln::zeros({n, w});
  report(
      "scatter_add_1Mx16_inplace",
      measure([&] { acc.scatter_add_(0, pairs2, src2); }, samples_for("scatter_add_1Mx16_inplace")),
      threads, n * (2 * row_bytes + 8));
  report("index_add_1Mx16",
         measure([&] { kiln::Tensor o = kiln::index_add(zeros2, 0, pairs, src2); },
                 samples_for("index_add_1Mx16")),
         threads, n * (3 * row_bytes + 8));
  // gather along dim 1 of [1M, 16] with a [1M, 4] index.
  kiln::Tensor g = kiln::remainder(hashed_index(n * 4, 1), w).reshape({n, 4});
  report(
      "gather_1Mx16_dim1",
      measure([&] { kiln::Tensor o = kiln::gather(src2, 1, g); }, samples_for("gather_1Mx16_dim1")),
      threads, n * (4 * 4.0 + 4 * 8 + 4 * 4.0));
  return 0;
}
