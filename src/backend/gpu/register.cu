// The GPU column of the kernel registry (GPU builds) and, at program start, the registration of
// the CUDA allocator and the current-device hook (backend/no_gpu/register.cpp without a GPU).

// The vendor header first: HIP declares the device intrinsics that kiln/half.h uses.
#include "backend/gpu/vendor.h"

#include "backend/gpu/gpu_allocator.h"
#include "backend/gpu/runtime.h"
#include "dispatch/registry.h"
#include "kiln/random.h"

namespace kiln::gpu {
void register_copy_kernels(::kiln::detail::KernelRegistry& r);
void register_random_kernels(::kiln::detail::KernelRegistry& r);  // kernels/gpu/random_kernels.cu
void register_op_kernels(::kiln::detail::KernelRegistry& r);      // src/kernels/gpu/register_ops.cu
}  // namespace kiln::gpu

namespace kiln::detail {

void register_gpu_kernels(KernelRegistry& r) {
  gpu::register_copy_kernels(r);
  gpu::register_random_kernels(r);
  gpu::register_op_kernels(r);
}

}  // namespace kiln::detail

namespace {
// This file is always linked (the registry calls register_gpu_kernels), so its static
// initializer runs in static builds too. It only stores a pointer: no GPU call at start-up.
const bool g_cuda_allocator_registered = [] {
  kiln::set_allocator(kiln::kCUDA, kiln::gpu::cuda_allocator());
  // Device(kCUDA) without an index means the current device (tensors, generators); cuda:0
  // where there is no GPU, so generators can still be made (tensors then fail to allocate).
  kiln::detail::set_current_cuda_device_hook(
      +[] { return kiln::gpu::device_count() > 0 ? kiln::gpu::current_device() : 0; });
  return true;
}();
}  // namespace
