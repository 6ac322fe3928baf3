// kiln::amp: automatic mixed precision (torch.amp): the autocast scope that runs ops in
// bfloat16/float16 or float32 by PyTorch's op lists, and GradScaler for dynamic loss scaling.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/device.h"
#include "kiln/dtype.h"
#include "kiln/tensor.h"

namespace kiln::optim {
class Optimizer;
}

namespace kiln::amp {

// torch.autocast(device_type, dtype, enabled, cache_enabled) as a scoped guard. Inside, ops on
// tensors of `device` run by PyTorch's lists (Note [autocast lists] in src/amp/autocast.cpp):
//   lower precision (dtype): matmul / linear / addmm / baddbmm / bmm (the Bmm primitive),
//     convolution, fused attention;
//   float32: softmax, log_softmax, layer_norm, rms_norm, group_norm, nll_loss, cross_entropy,
//     exp, log, pow and the other transcendental ops of PyTorch's list, sum, prod, cumsum,
//     cumprod, norm, logsumexp;
//   widest input type: cat, where, addcmul, addcdiv, index_put (ordinary promotion).
// Casts are ordinary differentiable casts, so gradients reach float32 weights in float32.
// Within the outermost scope the cast of a leaf that requires grad (a weight) is made once and
// reused (cache_enabled); the cache is cleared when that scope ends. Scopes nest; an inner
// autocast(device, dtype, /*enabled=*/false) turns it off. The gradient pass (backward) never
// autocasts: it runs in the dtypes the forward used.
// dtype defaults: bfloat16 on the cpu, float16 on cuda (PyTorch's). The state is per thread.
// Differs from PyTorch: composites outside these lists run their primitives' policies (an
// mse_loss under autocast computes its difference in the input dtype); functions whose front end
// checks dtypes before the op layer (kiln::matmul / linear, F::layer_norm, F::conv*) need
// matching inputs unless called through the nn modules (Linear, Conv*, LayerNorm, RMSNorm,
// GroupNorm, Bilinear, MultiheadAttention), which autocast their own arguments.
class autocast {
 public:
  explicit autocast(DeviceType device = DeviceType::CUDA, std::optional<DType> dtype = std::nullopt,
                    bool enabled = true, bool cache_enabled = true);
  ~autocast();
  autocast(const autocast&) = delete;
  autocast& operator=(const autocast&) = delete;

 private:
  DeviceType device_;
  bool prev_enabled_;
  DType prev_dtype_;
  bool prev_cache_;
};

// torch.is_autocast_enabled(device_type) / get_autocast_dtype / set_autocast_dtype.
bool is_autocast_enabled(DeviceType device);
DType get_autocast_dtype(DeviceType device);
// torch.clear_autocast_cache(): drops this thread's cached weight casts.
void clear_autocast_cache();
// Number of casts held in this thread's cache (for tests and debugging).
int64_t autocast_cache_size();

// torch.amp.GradScaler: scale(loss) multiplies by the scale; step(optimizer) unscales the
// gradients (unless unscale_ already did), skips the update when any gradient is inf/NaN, and
// update() backs the scale off (x backoff_factor) after an overflow or grows it
// (x growth_factor) after growth_interval clean steps. Works with every kiln optimizer (it only
// reads param_groups() and the gradients). Disabled: scale/step/update pass through.
// The unscale and inf/NaN check of each device's gradients is one multi-tensor kernel; with an
// optimizer whose step is fused (Optimizer::supports_grad_scale), step() only checks and the
// fused update divides by the scale itself, as PyTorch does.
// Differs from PyTorch: the scale is a host double, and the inf/NaN check costs one device
// synchronization per step (per device).
class GradScaler {
 public:
  explicit GradScaler(double init_scale = 65536.0, double growth_factor = 2.0,
                      double backoff_factor = 0.5, int64_t growth_interval = 2000,
                      bool enabled = true);

  // outputs * scale (a differentiable multiply, in the output's dtype).
  Tensor scale(const Tensor& outputs);
  std::vector<Tensor> scale(const std::vector<Tensor>& outputs);
  // Divides the optimizer's gradients by the scale in place and records whether any is inf/NaN.
  // At most once per optimizer between update() calls (else kiln::Error).
  void unscale_(optim::Optimizer& optimizer);
  // Unscales if needed, then calls optimizer.step() unless an inf/NaN gradient was found.
  // Returns true when the optimizer stepped. At most once per optimizer between update() calls.
  bool step(optim::Optimizer& optimizer);
  // Adjusts the scale from the steps since the last update (or sets it to new_scale) and resets
  // the per-optimizer state.
  void update(std::optional<double> new_scale = std::nullopt);

  double get_scale() const { return enabled_ ? scale_ : 1.0; }
  double get_growth_factor() const { return growth_factor_; }
  double get_backoff_factor() const { return backoff_factor_; }
  int64_t get_growth_interval() const { return growth_interval_; }
  int64_t growth_tracker() const { return growth_tracker_; }
  void set_growth_factor(double v) { growth_factor_ = v; }
  void set_backoff_factor(double v) { backoff_factor_ = v; }
  void set_growth_interval(int64_t v) { growth_interval_ = v; }
  bool is_enabled() const { return enabled_; }

  // PyTorch's keys: scale, growth_factor, backoff_factor, growth_interval, _growth_tracker
  // (empty when disabled).
  std::map<std::string, double> state_dict() const;
  void load_state_dict(const std::map<std::string, double>& state);

 private:
  enum class Stage { Ready, Unscaled, Stepped };
  struct PerOptimizer {
    Stage stage = Stage::Ready;
    bool found_inf = false;
  };
  bool found_inf_in(optim::Optimizer& optimizer, bool unscale);

  double scale_, growth_factor_, backoff_factor_;
  int64_t growth_interval_, growth_tracker_ = 0;
  bool enabled_;
  std::unordered_map<const optim::Optimizer*, PerOptimizer> per_optimizer_;
};

}  // namespace kiln::amp
