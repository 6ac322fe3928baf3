// Multi-tensor ("foreach") kernels behind the fused optimizer steps, GradScaler's unscale and
// clip_grad_norm_: a table of function pointers per device type, filled by the backends'
// register functions, and the host wrappers that group tensors for them.
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/dispatch_dtype.h"
#include "kiln/tensor.h"

namespace kiln::detail {

// Note [Multi-tensor kernels]
// ---------------------------
// A kernel entry gets lists of tensors where index i of every list belongs to one parameter.
// The wrappers below guarantee what the entries assume: every tensor contiguous, all on one
// device, one dtype per list (params and grads alike; state lists in the state dtype), lists
// of equal length, at least one tensor. Empty tensors are allowed. The GPU entries pack tensor
// pointers, sizes and per-tensor scalars into kernel arguments (PyTorch's multi_tensor_apply),
// so one launch updates many tensors; the CPU entries are plain loops with the same per-element
// math (optim/foreach_math.h).

// Adam / AdamW over one (param dtype, state dtype) combination. With masters, params are
// float16/bfloat16 and exp_avgs, exp_avg_sqs, max_exp_avg_sqs and masters are float32: the
// update reads and writes the master, then stores its rounding into the param.
struct FusedAdamArgs {
  std::vector<Tensor> params, grads, exp_avgs, exp_avg_sqs;
  std::vector<Tensor> max_exp_avg_sqs;  // amsgrad only, else empty
  std::vector<Tensor> masters;          // master weights only, else empty
  std::vector<double> neg_step;         // per tensor: -lr / (1 - beta1^t)
  std::vector<double> bc2_sqrt;         // per tensor: sqrt(1 - beta2^t)
  double lr = 0, beta1 = 0, beta2 = 0, eps = 0, weight_decay = 0;
  double inv_grad_scale = 1;  // != 1: grads are multiplied by it and the result stored back
  bool decoupled = false, amsgrad = false, maximize = false;
};

struct FusedSgdArgs {
  std::vector<Tensor> params, grads;
  std::vector<Tensor> momentum_buffers;  // momentum != 0 only, else empty
  std::vector<Tensor> masters;           // as in FusedAdamArgs
  std::vector<uint8_t> first;            // per tensor (with momentum): the buffer is new
  double lr = 0, momentum = 0, dampening = 0, weight_decay = 0;
  double inv_grad_scale = 1;
  bool nesterov = false, maximize = false;
};

struct MultiTensorKernels {
  void (*fused_adam)(const FusedAdamArgs&) = nullptr;
  void (*fused_sgd)(const FusedSgdArgs&) = nullptr;
  // ts[i] *= inv_scale (nothing written when inv_scale == 1); found_inf (one float32 element on
  // the device) is set to 1 when any element of any ts[i] is inf or NaN, else left as it is.
  void (*unscale_check)(const std::vector<Tensor>& ts, double inv_scale,
                        const Tensor& found_inf) = nullptr;
  // out[i] = the norm_type-norm of ts[i] (norm_type > 0, or inf: max |x|); out is a contiguous
  // 1-D tensor of ts.size() elements on the device, float64 for float64 ts, else float32.
  void (*norms)(const std::vector<Tensor>& ts, double norm_type, const Tensor& out) = nullptr;
  // ts[i] *= coef[0]; coef is one element on the device, float64 for float64 ts, else float32.
  void (*scale)(const std::vector<Tensor>& ts, const Tensor& coef) = nullptr;
};

// The entries of a device type (null where the backend has none); fills the table on first use.
const MultiTensorKernels& multi_tensor_kernels(DeviceType device);
// Backends' register functions (called from their kernel registration) write through this.
MultiTensorKernels& mutable_multi_tensor_kernels(DeviceType device);

// --- Host wrappers: any contiguity, several dtypes; all tensors on one device. ---

// True when ts can go through the multi-tensor entries: dtype float16/bfloat16/float32/float64
// on a device whose table has the entries.
bool foreach_supported(const Tensor& t);
// Runs unscale_check over ts (grouped by dtype); found_inf as in the entry.
void foreach_unscale_check(const std::vector<Tensor>& ts, double inv_scale,
                           const Tensor& found_inf);
// The per-tensor norms of ts, as one float32 tensor (float64 if any ts is float64) on their
// device, in an unspecified order (grouped by dtype).
Tensor foreach_norms(const std::vector<Tensor>& ts, double norm_type);
// ts[i] *= coef[0] (coef a one-element tensor on their device, any floating dtype).
void foreach_scale(const std::vector<Tensor>& ts, const Tensor& coef);
// The fused steps (non-contiguous tensors run through contiguous copies that are copied back).
void foreach_fused_adam(FusedAdamArgs& args);
void foreach_fused_sgd(FusedSgdArgs& args);

// Calls f.template operator()<P, S>() for the params' dtype P and the state type S: float32
// state for half-precision params with master weights, P otherwise (CPU and GPU kernels).
template <class Args, class F>
void dispatch_param_state(const Args& a, const char* op, F&& f) {
  const bool master = !a.masters.empty();
  dispatch_types<kFloatMask>(a.params[0].dtype(), op, [&]<class P>() {
    if constexpr (std::is_same_v<P, Half> || std::is_same_v<P, BFloat16>) {
      if (master) return f.template operator()<P, float>();
    }
    f.template operator()<P, P>();
  });
}

}  // namespace kiln::detail
