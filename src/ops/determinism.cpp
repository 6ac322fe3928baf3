// kiln::use_deterministic_algorithms and the alert that kernels without a deterministic path
// raise (include/kiln/ops/determinism.h). Process-wide flags, as torch's.
#include "kiln/ops/determinism.h"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>

#include "kiln/error.h"

namespace kiln {

namespace {
std::atomic<bool> g_mode{false};
std::atomic<bool> g_warn_only{false};
}  // namespace

void use_deterministic_algorithms(bool mode, bool warn_only) {
  g_warn_only.store(warn_only, std::memory_order_relaxed);
  g_mode.store(mode, std::memory_order_release);
}

bool are_deterministic_algorithms_enabled() { return g_mode.load(std::memory_order_acquire); }

bool is_deterministic_algorithms_warn_only_enabled() {
  return g_mode.load(std::memory_order_acquire) && g_warn_only.load(std::memory_order_relaxed);
}

namespace detail {

void alert_not_deterministic(const char* op) {
  if (!are_deterministic_algorithms_enabled()) return;
  if (!g_warn_only.load(std::memory_order_relaxed))
    KILN_ERROR("[", op,
               "] does not have a deterministic implementation, but you set "
               "use_deterministic_algorithms(true). Call use_deterministic_algorithms(true, "
               "/*warn_only=*/true) to allow it with a warning");
  static std::mutex mu;
  static auto* warned = new std::set<std::string>();  // leaked: may be used during exit
  std::lock_guard<std::mutex> lock(mu);
  if (warned->insert(op).second)
    std::fprintf(stderr,
                 "kiln warning: [%s] does not have a deterministic implementation, but "
                 "use_deterministic_algorithms(true, warn_only=true) is set\n",
                 op);
}

}  // namespace detail

}  // namespace kiln
