// Without a GPU build the cuda column stays empty: ops on cuda tensors raise a clear error.
#include "dispatch/registry.h"

namespace kiln::detail {
void register_gpu_kernels(KernelRegistry&) {}
}  // namespace kiln::detail
