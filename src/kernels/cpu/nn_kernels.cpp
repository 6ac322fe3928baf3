// CPU kernels of the nn op family: registration of the per-file kernel sets (nn_kernels.h).
#include "kernels/cpu/nn_kernels.h"

namespace kiln::cpu {

void register_nn_kernels(detail::KernelRegistry& r) {
  register_nn_norm_kernels(r);
  register_nn_loss_kernels(r);
  register_nn_conv_kernels(r);
  register_nn_pool_kernels(r);
  register_nn_fused_kernels(r);
}

}  // namespace kiln::cpu
