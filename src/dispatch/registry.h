// The (OpId, DeviceType) -> kernel table. Filled once by the backends' register functions.
#pragma once

#include "ops/op.h"

namespace kiln::detail {

struct KernelRegistry {
  Kernel table[kNumOps][kNumDeviceTypes] = {};
  void set(OpId op, DeviceType dev, Kernel k) {
    table[static_cast<int>(op)][static_cast<int>(dev)] = k;
  }
};

// The registry, filled on first use (thread-safe).
KernelRegistry& kernel_registry();

inline Kernel find_kernel(OpId op, DeviceType dev) {
  return kernel_registry().table[static_cast<int>(op)][static_cast<int>(dev)];
}

// Backend entry points, each filling its device's column. The CPU one calls every op family's
// register function (backend/cpu/register_kernels.cpp); the GPU one is a no-op without a GPU build.
void register_cpu_kernels(KernelRegistry& r);
void register_gpu_kernels(KernelRegistry& r);

}  // namespace kiln::detail
