// CPU matmul kernels.
#include "dispatch/registry.h"

namespace kiln::cpu {

void register_matmul_kernels(detail::KernelRegistry&) {}

}  // namespace kiln::cpu
