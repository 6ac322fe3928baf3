// The host side of the kernel error channel: a per-device record that GPU kernels set when they
// meet an out-of-range index (kernels/gpu/kernel_error.cuh), turned into kiln::Error at the next
// synchronization point (check_kernel_errors). Vendor-neutral: no GPU runtime header here.
#pragma once

#include <cstdint>

namespace kiln::gpu {

// Note [Kernel error channel]
// An index checked inside a kernel cannot throw. A kernel that meets a bad index skips the
// element and reports (op id, value, bound, dim) once: the first reporter claims the device's slot
// with an atomicCAS on a device-memory word, writes the record into pinned host memory (mapped
// into the device's address space, so the host reads it without a copy), fences, then sets
// `flag`. check_kernel_errors() runs after every synchronization that the user can observe
// (Tensor::item and copies to the host, stream/event synchronize, KILN_LAUNCH_BLOCKING launches):
// it reads the flags with plain loads, and for a set one clears the slot and throws
// "[op] index v is out of bounds for dimension d with size n (reported by a GPU kernel on cuda:i)".
// After the throw the slot is free again and the process keeps working. Reports from kernels
// that have not finished at the check surface at a later check. Checking costs one load per
// device that ever had a slot (none when no kernel asked for one).
struct KernelErrorRecord {
  volatile int32_t flag;  // 1 once the fields below are complete
  int32_t op_id;          // an OpId, or -1
  int64_t value;          // the offending index
  int64_t bound;          // the size it had to be under
  int64_t dim;            // the dimension indexed, or -1
};

// What a kernel needs to report: pass it by value as a kernel argument.
struct KernelErrorSlot {
  int* claim = nullptr;                 // device memory: 0 free, 1 claimed
  KernelErrorRecord* record = nullptr;  // pinned host memory, mapped (a device pointer)
};

// The slot of `device` (a valid index), created on first use (needs no synchronization later).
KernelErrorSlot kernel_error_slot(int device);

// Throws kiln::Error for the first error that a kernel has reported since the last check, on any
// device, and frees that device's slot. Does nothing when no kernel has reported one.
void check_kernel_errors();

// Used by tests: true when a report is waiting on some device (does not clear it).
bool kernel_error_pending();

}  // namespace kiln::gpu
