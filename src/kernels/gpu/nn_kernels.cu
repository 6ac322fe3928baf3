// nn kernels: softmax family, layer/rms norm, nll_loss, embedding, fused cross-entropy and dropout.
// Registration only; the kernels live in nn_{softmax,norm,loss,fused}_kernels.cu.
#include "backend/gpu/vendor.h"

#include "dispatch/registry.h"

namespace kiln::gpu {

void register_nn_softmax_kernels(detail::KernelRegistry& r);  // nn_softmax_kernels.cu
void register_nn_norm_kernels(detail::KernelRegistry& r);     // nn_norm_kernels.cu
void register_nn_loss_kernels(detail::KernelRegistry& r);     // nn_loss_kernels.cu
void register_nn_fused_kernels(detail::KernelRegistry& r);    // nn_fused_kernels.cu

void register_nn_kernels(detail::KernelRegistry& r) {
  register_nn_softmax_kernels(r);
  register_nn_norm_kernels(r);
  register_nn_loss_kernels(r);
  register_nn_fused_kernels(r);
}

}  // namespace kiln::gpu
