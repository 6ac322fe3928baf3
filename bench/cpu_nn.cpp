// CPU nn benchmarks: conv2d (N=8, 64->64 channels, 56x56, 3x3, padding 1), softmax and layer_norm
// on [4096, 1024] float32. Prints one JSON line per case ({"bench", "kiln_us", ...});
// torch_cpu_nn.py runs the same cases with PyTorch. Run both with the same --threads and compare
// with `bench/run_cpu_bench.sh --table KILN.jsonl TORCH.jsonl`.
#include <kiln/kiln.h>

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
namespace F = kiln::nn::functional;

struct Timing {
  double median_us = 0, min_us = 0, cpu_us = 0;
  int reps = 0;
};

double cpu_now_us() { return 1e6 * static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

// One warm-up call, then `samples` timed calls; median and minimum wall time per call, and the
// median process CPU time per call (all threads; robust when other jobs share the machine).
Timing measure(const std::function<void()>& fn, int samples) {
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

const char* arg_str(int argc, char** argv, const char* flag, const char* fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], flag) == 0) return argv[i + 1];
  return fallback;
}

int arg_int(int argc, char** argv, const char* flag, int fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], flag) == 0) return std::atoi(argv[i + 1]);
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = arg_int(argc, argv, "--threads", kiln::get_num_threads());
  const int scale = std::max(1, arg_int(argc, argv, "--scale", 1));
  // --only SUBSTRING: run only the cases whose name contains it (for profiling).
  const std::string only = arg_str(argc, argv, "--only", "");
  auto wanted = [&](const char* name) { return only.empty() || std::strstr(name, only.c_str()); };
  kiln::set_num_threads(threads);
  kiln::manual_seed(0);
  if (wanted("conv2d")) {
    kiln::Tensor x = kiln::randn({8, 64, 56, 56});
    kiln::Tensor w = kiln::randn({64, 64, 3, 3}) * 0.05;
    kiln::Tensor b = kiln::randn({64});
    const Timing t =
        measure([&] { kiln::Tensor y = F::conv2d(x, w, b, 1, 1); }, std::max(3, 20 / scale));
    const double flop = 2.0 * 8 * 64 * 56 * 56 * 64 * 9;
    report("conv2d_8x64x56x56_3x3", t, threads, rate("GFLOP_per_s", flop / (t.median_us * 1e3)));
  }
  if (wanted("softmax_4096x1024") || wanted("log_softmax_4096x1024") ||
      wanted("layer_norm_4096x1024")) {
    kiln::Tensor x = kiln::randn({4096, 1024});
    const int samples = std::max(5, 50 / scale);
    const double bytes = 2.0 * 4 * 4096 * 1024;
    Timing t;
    if (wanted("softmax_4096x1024")) {
      t = measure([&] { kiln::Tensor y = F::softmax(x, 1); }, samples);
      report("softmax_4096x1024", t, threads, rate("GB_per_s", bytes / (t.median_us * 1e3)));
    }
    if (wanted("log_softmax_4096x1024")) {
      t = measure([&] { kiln::Tensor y = F::log_softmax(x, 1); }, samples);
      report("log_softmax_4096x1024", t, threads, rate("GB_per_s", bytes / (t.median_us * 1e3)));
    }
    kiln::Tensor w = kiln::randn({1024}), b = kiln::randn({1024});
    if (wanted("layer_norm_4096x1024")) {
      t = measure([&] { kiln::Tensor y = F::layer_norm(x, {1024}, w, b); }, samples);
      report("layer_norm_4096x1024", t, threads, rate("GB_per_s", bytes / (t.median_us * 1e3)));
    }
  }
  return 0;
}
