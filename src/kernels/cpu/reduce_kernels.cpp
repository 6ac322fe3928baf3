// CPU reduction kernels.
#include "dispatch/registry.h"

namespace kiln::cpu {

void register_reduce_kernels(detail::KernelRegistry&) {}

}  // namespace kiln::cpu
