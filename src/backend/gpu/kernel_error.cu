// The kernel error channel's host side (Note [Kernel error channel] in kernel_error.h): one slot
// per device, created on first use, and the check that turns a report into kiln::Error.
#include "backend/gpu/vendor.h"

#include <atomic>
#include <mutex>
#include <vector>

#include "backend/gpu/kernel_error.h"
#include "backend/gpu/runtime.h"
#include "ops/op.h"

namespace kiln::gpu {

namespace {

constexpr int kMaxDevices = 64;

struct Slots {
  std::mutex mu;
  KernelErrorSlot slot[kMaxDevices];
  std::atomic<bool> made[kMaxDevices] = {};
  std::atomic<bool> any{false};
};

// Note [Leaked at exit] (stream.cu): never destroyed.
Slots& slots() {
  static auto* s = new Slots();
  return *s;
}

}  // namespace

KernelErrorSlot kernel_error_slot(int device) {
  Slots& s = slots();
  KILN_ASSERT(device >= 0 && device < kMaxDevices, "kernel_error_slot: device ", device);
  if (s.made[device].load(std::memory_order_acquire)) return s.slot[device];
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.made[device].load(std::memory_order_relaxed)) {
    DeviceGuard g(device);
    KernelErrorSlot k;
    void* claim = nullptr;
    KILN_GPU_CHECK("kernel_error_slot", gpuMalloc(&claim, sizeof(int)));
    // Pinned host memory is mapped into every device's address space under unified addressing
    // (all 64-bit CUDA and HIP platforms), so the host pointer is the device pointer.
    void* rec = nullptr;
    KILN_GPU_CHECK("kernel_error_slot",
                   gpuHostAlloc(&rec, sizeof(KernelErrorRecord), gpuHostAllocDefault));
    KILN_GPU_CHECK("kernel_error_slot", gpuMemsetAsync(claim, 0, sizeof(int), nullptr));
    KILN_GPU_CHECK("kernel_error_slot", gpuStreamSynchronize(nullptr));
    k.claim = static_cast<int*>(claim);
    k.record = static_cast<KernelErrorRecord*>(rec);
    k.record->flag = 0;
    k.record->op_id = -1;
    k.record->value = k.record->bound = 0;
    k.record->dim = -1;
    s.slot[device] = k;
    s.made[device].store(true, std::memory_order_release);
    s.any.store(true, std::memory_order_release);
  }
  return s.slot[device];
}

bool kernel_error_pending() {
  Slots& s = slots();
  if (!s.any.load(std::memory_order_acquire)) return false;
  for (int d = 0; d < kMaxDevices; ++d)
    if (s.made[d].load(std::memory_order_acquire) && s.slot[d].record->flag != 0) return true;
  return false;
}

void check_kernel_errors() {
  Slots& s = slots();
  if (KILN_LIKELY(!s.any.load(std::memory_order_acquire))) return;
  for (int d = 0; d < kMaxDevices; ++d) {
    if (!s.made[d].load(std::memory_order_acquire)) continue;
    KernelErrorRecord* r = s.slot[d].record;
    if (KILN_LIKELY(r->flag == 0)) continue;
    std::atomic_thread_fence(std::memory_order_acquire);
    const int op = r->op_id;
    const int64_t value = r->value, bound = r->bound, dim = r->dim;
    {
      std::lock_guard<std::mutex> lock(s.mu);
      if (r->flag == 0) continue;  // another thread took this report
      r->flag = 0;
      DeviceGuard g(d);
      KILN_GPU_CHECK("check_kernel_errors",
                     gpuMemsetAsync(s.slot[d].claim, 0, sizeof(int), nullptr));
      KILN_GPU_CHECK("check_kernel_errors", gpuStreamSynchronize(nullptr));
    }
    const char* name = op >= 0 && op < kNumOps ? op_name(static_cast<OpId>(op)) : "kernel";
    if (dim >= 0)
      KILN_ERROR("[", name, "] index ", value, " is out of bounds for dimension ", dim,
                 " with size ", bound, " (reported by a GPU kernel on cuda:", d, ")");
    KILN_ERROR("[", name, "] index ", value, " is out of bounds for size ", bound,
               " (reported by a GPU kernel on cuda:", d, ")");
  }
}

}  // namespace kiln::gpu
