// Thread-local grad mode, inference mode and anomaly mode, and their guards.
#include <atomic>

#include "autograd/node_state.h"

namespace kiln {

namespace detail {
// Read directly by run() (src/ops/run.cpp) to mark the outputs made in inference mode; constinit
// lets other files read it without a TLS init wrapper.
constinit thread_local bool t_inference_mode = false;
}  // namespace detail

namespace {
thread_local bool t_grad_enabled = true;
std::atomic<bool> g_anomaly{false};
std::atomic<bool> g_anomaly_nan{true};
}  // namespace

bool is_grad_enabled() { return t_grad_enabled; }
void set_grad_enabled(bool enabled) { t_grad_enabled = enabled; }

AutoGradMode::AutoGradMode(bool enabled) : prev_(t_grad_enabled) { t_grad_enabled = enabled; }
AutoGradMode::~AutoGradMode() { t_grad_enabled = prev_; }

InferenceMode::InferenceMode(bool enabled)
    : prev_grad_(t_grad_enabled), prev_inference_(detail::t_inference_mode) {
  detail::t_inference_mode = enabled;
  if (enabled) t_grad_enabled = false;
}
InferenceMode::~InferenceMode() {
  t_grad_enabled = prev_grad_;
  detail::t_inference_mode = prev_inference_;
}
bool InferenceMode::is_enabled() { return detail::t_inference_mode; }

namespace autograd {
bool AnomalyMode::is_enabled() { return g_anomaly.load(std::memory_order_relaxed); }
bool AnomalyMode::should_check_nan() { return g_anomaly_nan.load(std::memory_order_relaxed); }
void AnomalyMode::set_enabled(bool enabled, bool check_nan) {
  g_anomaly = enabled;
  g_anomaly_nan = check_nan;
}
DetectAnomalyGuard::DetectAnomalyGuard(bool check_nan)
    : prev_(AnomalyMode::is_enabled()), prev_nan_(AnomalyMode::should_check_nan()) {
  AnomalyMode::set_enabled(true, check_nan);
}
DetectAnomalyGuard::~DetectAnomalyGuard() { AnomalyMode::set_enabled(prev_, prev_nan_); }
}  // namespace autograd

namespace detail {
bool grad_mode_enabled() { return t_grad_enabled; }
bool inference_mode_enabled() { return t_inference_mode; }
uint64_t next_sequence_nr() {
  thread_local uint64_t seq = 0;
  return seq++;
}
unsigned next_hook_handle() {
  static std::atomic<unsigned> h{1};
  return h++;
}
}  // namespace detail

}  // namespace kiln
