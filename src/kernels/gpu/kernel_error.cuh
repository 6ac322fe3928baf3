// The device side of the kernel error channel (Note [Kernel error channel] in
// backend/gpu/kernel_error.h): report_index_error() from any kernel; the host raises kiln::Error
// at the next synchronization point.
#pragma once

#include "backend/gpu/vendor.h"

#include <atomic>
#include <cstdint>

#include "backend/gpu/kernel_error.h"
#include "backend/gpu/runtime.h"

namespace kiln::gpu {

// Explicit form: the slot travels as a kernel argument (kernel_error_slot(device) on the host).
// The first report on a device wins; later ones are dropped until the host has checked.
__device__ inline void report_index_error(const KernelErrorSlot& s, int op_id, int64_t value,
                                          int64_t bound, int64_t dim = -1) {
  if (atomicCAS(s.claim, 0, 1) != 0) return;
  s.record->op_id = op_id;
  s.record->value = value;
  s.record->bound = bound;
  s.record->dim = dim;
  __threadfence_system();
  s.record->flag = 1;
}

// Implicit form, for kernels that do not take a slot argument: each translation unit that
// includes this header has its own device-side copy of the slot, set per device by
// prepare_kernel_errors(device) on the host before the first launch of such a kernel (cheap after
// the first call). A report from a TU that was never prepared traps.
namespace {
__device__ KernelErrorSlot tu_kernel_error_slot_;

__global__ void set_tu_kernel_error_slot_(KernelErrorSlot s) { tu_kernel_error_slot_ = s; }

[[maybe_unused]] void prepare_kernel_errors(int device) {
  static std::atomic<uint64_t> done[1];
  const uint64_t bit = device < 64 ? uint64_t{1} << device : 0;
  if (bit != 0 && (done[0].load(std::memory_order_acquire) & bit)) return;
  KernelErrorSlot s = kernel_error_slot(device);
  DeviceGuard g(device);
  set_tu_kernel_error_slot_<<<1, 1, 0, nullptr>>>(s);
  KILN_GPU_CHECK("prepare_kernel_errors", gpuGetLastError());
  // Once per (TU, device): wait, so that kernels on every stream see the slot.
  KILN_GPU_CHECK("prepare_kernel_errors", gpuStreamSynchronize(nullptr));
  done[0].fetch_or(bit, std::memory_order_acq_rel);
}
}  // namespace

__device__ inline void report_index_error(int op_id, int64_t value, int64_t bound,
                                          int64_t dim = -1) {
  KernelErrorSlot s = tu_kernel_error_slot_;
  if (s.claim == nullptr) {
#if KILN_CUDA
    __trap();
#else
    __builtin_trap();
#endif
  }
  report_index_error(s, op_id, value, bound, dim);
}

}  // namespace kiln::gpu
