// kiln::set_float32_matmul_precision and friends (include/kiln/ops/gpu_settings.h). Built in every
// configuration (a CPU-only build accepts the setting; it has no GPU matmul to change).
#include "kiln/ops/gpu_settings.h"

#include <atomic>

#include "kiln/error.h"

namespace kiln {

namespace {
// 0 = highest, 1 = high, 2 = medium.
std::atomic<int> g_precision{0};
}  // namespace

void set_float32_matmul_precision(const std::string& precision) {
  int v = precision == "highest" ? 0 : precision == "high" ? 1 : precision == "medium" ? 2 : -1;
  KILN_CHECK(v >= 0,
             "[set_float32_matmul_precision] expected \"highest\", \"high\" or \"medium\", got \"",
             precision, "\"");
  g_precision.store(v, std::memory_order_relaxed);
}

std::string get_float32_matmul_precision() {
  switch (g_precision.load(std::memory_order_relaxed)) {
    case 1:
      return "high";
    case 2:
      return "medium";
    default:
      return "highest";
  }
}

namespace detail {
bool float32_matmul_allows_tf32() { return g_precision.load(std::memory_order_relaxed) != 0; }
}  // namespace detail

}  // namespace kiln
